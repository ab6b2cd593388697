"""FlyDSL GEMM backend on a CPU: compile-only for gfx942 and gfx950, ISA stats, crash
containment, the ROCm gate and the CLI. Needs flydsl and ld.lld (CI installs both); when
either is missing these tests FAIL with the install command, they do not skip.
"""

from __future__ import annotations

import json
import logging

import pytest

from kselect.kernels import CandidateError, Problem, get_backend
from kselect.kernels.flydsl import compile as fcompile
from kselect.kernels.flydsl import space, toolchain
from kselect.kernels.flydsl.gate import rocm_gate
from kselect.kernels.flydsl.isa import parse_isa, problems
from kselect.kernels.flydsl.params import ARCHS, MFMA_K, KernelParams, lds_bytes

FIELDS = "M N K dtype layout TILE_M TILE_N TILE_K STAGES WAVES_M WAVES_N SPLIT_K GROUP_M".split()
CONFIGS = [
    KernelParams(**dict(zip(FIELDS, row)))
    for row in [
        (256, 256, 512, "bf16", "nt", 64, 64, 32, 2, 2, 2, 1, 1),
        (256, 256, 512, "bf16", "nt", 128, 128, 32, 2, 2, 2, 1, 1),
        (256, 256, 512, "bf16", "nt", 128, 128, 64, 1, 2, 2, 1, 1),
        (256, 256, 512, "bf16", "nt", 128, 64, 32, 3, 2, 2, 1, 1),
        (256, 256, 512, "bf16", "nt", 64, 128, 32, 2, 1, 4, 1, 1),
        (256, 256, 512, "bf16", "nt", 128, 64, 32, 2, 4, 1, 1, 1),
        (256, 256, 512, "bf16", "nt", 64, 64, 64, 2, 2, 2, 2, 1),
        (256, 256, 512, "bf16", "nt", 64, 64, 32, 2, 2, 2, 4, 4),
        (256, 256, 512, "bf16", "nt", 32, 32, 32, 2, 1, 1, 1, 1),
        (256, 256, 512, "bf16", "nt", 64, 64, 32, 2, 2, 2, 1, 4),
        (256, 256, 512, "fp16", "nt", 128, 128, 32, 2, 2, 2, 1, 1),
        (256, 256, 512, "fp16", "nt", 128, 128, 32, 2, 2, 4, 1, 1),
        (256, 256, 512, "bf16", "nn", 64, 64, 32, 2, 2, 2, 1, 1),
        (256, 256, 512, "bf16", "nn", 128, 128, 32, 2, 2, 2, 1, 1),
        (256, 256, 512, "fp16", "nn", 128, 128, 64, 1, 2, 2, 1, 1),
        (256, 256, 512, "fp16", "nn", 64, 128, 32, 3, 2, 2, 1, 1),
        (256, 256, 512, "bf16", "nn", 128, 64, 32, 2, 2, 2, 2, 1),
        (512, 256, 1024, "bf16", "nn", 128, 128, 32, 2, 2, 2, 1, 4),
        (512, 256, 1024, "bf16", "nt", 256, 128, 32, 2, 2, 2, 1, 1),
        (128, 512, 2048, "fp16", "nt", 64, 128, 32, 2, 2, 2, 8, 1),
        (128, 512, 2048, "fp16", "nt", 128, 256, 32, 2, 2, 4, 1, 1),
        (128, 512, 2048, "bf16", "nn", 64, 128, 64, 2, 1, 2, 4, 1),
    ]
]
MFMA_NAME = {"gfx942": "v_mfma_f32_16x16x16", "gfx950": "v_mfma_f32_16x16x32"}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A fresh compile cache for this module, after checking the toolchain is really there."""
    root = tmp_path_factory.mktemp("flydsl-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KSELECT_FLYDSL_CACHE", str(root))
        try:
            toolchain.flydsl_version()
            toolchain.rocm_path(root)
        except toolchain.ToolchainError as exc:
            pytest.fail(f"FlyDSL compile tests need flydsl and ld.lld: {exc}")
        yield root


@pytest.fixture(scope="module")
def compiled(cache):
    """Every CONFIG compiled for both archs, once per test run (two compile children at a time)."""
    return {arch: fcompile.compile_many(CONFIGS, arch, workers=2) for arch in ARCHS}


def test_installed_flydsl_is_one_the_pin_allows(cache):
    """The compiles below ran with a FlyDSL the `flydsl` extra allows. CI's set-up installs the
    newest one (.ci/setup); a 0.4.x is checked by putting it first on PYTHONPATH (docs/flydsl.md),
    which the compile children inherit and this reports."""
    tomllib = pytest.importorskip("tomllib")
    from pathlib import Path

    from packaging.requirements import Requirement

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    pin = Requirement(tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]["flydsl"][0])
    version = toolchain.flydsl_version()
    assert pin.name == "flydsl" and version in pin.specifier, (version, str(pin))
    logging.getLogger(__name__).warning("FlyDSL under test: %s (pin %s)", version, pin.specifier)


def test_configs_are_distinct_and_valid_on_both_archs():
    assert len(set(CONFIGS)) == len(CONFIGS) >= 20
    for arch in ARCHS:
        for p in CONFIGS:
            assert space.reasons(p, arch) == [], (arch, p)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
def test_all_configs_compile(compiled, arch):
    bad = [(r.params, r.status, r.reason) for r in compiled[arch] if not r.ok]
    assert not bad, bad
    assert sum(r.ok for r in compiled[arch]) >= 20
    assert all(r.compile_s and 0 < r.compile_s < 120 for r in compiled[arch])
    assert not list((fcompile.cache_dir() / arch).glob("build.*"))  # scratch dirs removed


@pytest.mark.parametrize("arch", ARCHS)
def test_isa_stats_are_sane(compiled, arch):
    for r in compiled[arch]:
        p, isa = r.params, r.isa
        threads = p.WAVES_M * p.WAVES_N * 64
        assert isa.lds_bytes == lds_bytes(p), p  # exactly the padded stage buffers we allocate
        assert isa.vgpr_count > 0 and isa.sgpr_count > 0
        assert isa.vgpr_spill_count == isa.sgpr_spill_count == isa.scratch_bytes == 0
        assert isa.mfma_shape.startswith(MFMA_NAME[arch]), (arch, isa.mfma_shape)
        per_wave_tile = (p.TILE_M // p.WAVES_M // 16) * (p.TILE_N // p.WAVES_N // 16) * (p.TILE_K // MFMA_K[arch])
        assert isa.mfma >= per_wave_tile, (p, isa.mfma, per_wave_tile)
        # every lane moves (TILE_M + TILE_N) * TILE_K / threads elements per K tile, 8 per load
        assert isa.global_loads >= (p.TILE_M + p.TILE_N) * p.TILE_K // threads // 8
        assert isa.lds_reads > 0 and isa.lds_writes > 0
        assert (isa.barriers > 0) == (threads > 64), p  # one-wave workgroups need no s_barrier
        if p.SPLIT_K > 1:
            assert isa.global_atomics > 0 and isa.global_stores == 0, p
        else:
            assert isa.global_stores > 0 and isa.global_atomics == 0, p
        # accumulators live in registers: at least TILE_M*TILE_N/threads fp32 per lane
        assert isa.vgpr_count + isa.agpr_count >= p.TILE_M * p.TILE_N // threads


def test_second_compile_is_a_cache_hit(compiled):
    again = fcompile.compile_one(CONFIGS[0], "gfx950")
    assert again.cached and again.ok and again.isa == compiled["gfx950"][0].isa
    assert (fcompile.cache_dir() / "gfx950").is_dir()


def test_invalid_configs_are_rejected_with_reasons(cache):
    bad_tile = KernelParams(256, 256, 512, "bf16", "nt", 96, 64, 32, 2, 2, 2)
    res = fcompile.compile_one(bad_tile, "gfx942")
    assert res.status == "invalid" and "M=256 not divisible by TILE_M=96" in res.reason
    # 2 stages of 128x128x64 need 73,728 B of LDS: too much for gfx942, fine on gfx950
    big = KernelParams(256, 256, 512, "bf16", "nt", 128, 128, 64, 2, 2, 2)
    assert any("LDS 73728 B > gfx942 limit 65536 B" in r for r in space.reasons(big, "gfx942"))
    assert space.reasons(big, "gfx950") == []
    problem = Problem(256, 256, 512)
    key = dict(TILE_M=128, TILE_N=128, TILE_K=64, STAGES=2, WAVES_M=2, WAVES_N=2, SPLIT_K=1, GROUP_M=1)
    keys942 = {c.key for c in space.candidates(problem, "gfx942", "exhaustive")}
    keys950 = {c.key for c in space.candidates(problem, "gfx950", "exhaustive")}
    from kselect.kernels.candidate import Candidate

    k = Candidate.make("flydsl", "gemm", **key).key
    assert k not in keys942 and k in keys950
    with pytest.raises(ValueError, match="unsupported FlyDSL arch 'gfx90a'"):
        space.candidates(problem, "gfx90a")


def test_space_is_deterministic_and_only_valid():
    problem = Problem(1024, 2048, 4096, dtype="fp16", layout="nn")
    first = space.candidates(problem, "gfx942")
    assert first == space.candidates(problem, "gfx942") and len(first) > 100
    assert all(space.reasons(space.kernel_params(c, problem), "gfx942") == [] for c in first)
    assert get_backend("flydsl").candidates(Problem(64, 64, 64, dtype="fp32")) == []


def test_isa_problems_prune_lds_and_spills(compiled):
    text = (fcompile.cache_dir() / "gfx942").glob("*/final_isa.s").__next__().read_text()
    good = parse_isa(text)
    assert problems(good, "gfx942") == []
    over = parse_isa(text.replace(f".group_segment_fixed_size: {good.lds_bytes}", ".group_segment_fixed_size: 73728"))
    assert problems(over, "gfx942") == ["LDS 73728 B > gfx942 limit 65536 B"]
    assert problems(over, "gfx950") == []
    spilled = parse_isa(text.replace(".vgpr_spill_count: 0", ".vgpr_spill_count: 12"))
    assert "spills 12 VGPRs" in problems(spilled, "gfx950")[0]


def test_worker_abort_is_contained_and_reported(cache, monkeypatch, tmp_path):
    """The real compile path with a worker that os.abort()s: each build is reported crashed
    with the signal, a fresh worker takes the next build, and this process carries on."""
    monkeypatch.setenv("KSELECT_FLYDSL_CACHE", str(tmp_path))
    monkeypatch.setenv("KSELECT_FLYDSL_WORKER_FAULT", "abort")
    results = fcompile.compile_many(CONFIGS[:2], "gfx942", workers=1)
    assert [r.status for r in results] == ["crashed", "crashed"]
    assert all("killed by SIGABRT" in r.reason and r.isa is None for r in results)
    assert not list((tmp_path / "gfx942").glob("*/result.json"))  # crashes are not cached
    monkeypatch.delenv("KSELECT_FLYDSL_WORKER_FAULT")
    assert fcompile.compile_one(CONFIGS[0], "gfx942").ok  # and the next compile works


def test_child_timeout_is_contained(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("KSELECT_FLYDSL_CACHE", str(tmp_path))
    monkeypatch.setenv("KSELECT_FLYDSL_WORKER_FAULT", "hang")
    res = fcompile.compile_one(CONFIGS[0], "gfx950", timeout=3)
    assert res.status == "timeout" and "killed" in res.reason and 3 <= res.wall_s < 30
    assert not list(tmp_path.glob("gfx950/worker.*.log"))  # the killed worker is cleaned up


def test_missing_lld_fails_clearly(monkeypatch, tmp_path):
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    monkeypatch.setattr(toolchain, "LLD_CANDIDATES", (str(tmp_path / "nope" / "ld.lld"),))
    with pytest.raises(toolchain.ToolchainError, match="apt-get install -y lld-19"):
        toolchain.rocm_path(tmp_path)


def test_rocm_gate_refuses_on_cpu(caplog):
    import torch

    assert torch.version.hip is None, "these checks are for a CPU/CUDA build of torch"
    with caplog.at_level(logging.DEBUG, logger="kselect.kernels.flydsl.gate"):
        gate = rocm_gate()
    assert not gate and "not a ROCm build" in gate.reason
    assert any("gate refused" in r.message for r in caplog.records)
    backend = get_backend("flydsl")
    assert not backend.availability()
    with pytest.raises(CandidateError, match="not a ROCm build") as info:
        backend.runner(None, None)
    assert info.value.stage == "launch"
    from torch._inductor.template_heuristics.registry import _TEMPLATE_HEURISTIC_REGISTRY

    from kselect.kernels.flydsl import inductor

    assert inductor.templates(None, "mm") == []
    assert not any("flydsl" in str(k) for k in _TEMPLATE_HEURISTIC_REGISTRY)


def test_cli_compile_json(compiled, capsys):
    from kselect.training.cli.main import main

    rc = main(["flydsl", "compile", "--arch", "gfx942", "--shape", "256x256x512", "--limit", "3", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["arch"] == "gfx942" and doc["problem_key"] == "mm:256x256x512:bf16:nt"
    assert doc["compiled"] == len(doc["results"]) == 3 and doc["valid"] >= 3
    for row in doc["results"]:
        assert row["status"] == "ok" and row["compile_s"] > 0
        assert row["isa"]["vgpr_count"] > 0 and row["isa"]["mfma"] > 0


def test_cli_rejects_bad_shape(capsys):
    from kselect.training.cli.main import main

    with pytest.raises(SystemExit) as info:
        main(["flydsl", "compile", "--arch", "gfx942", "--shape", "256x256", "--json"])
    assert info.value.code == 2 and "MxNxK" in capsys.readouterr().err


class _Inputs:
    """Just what our Inductor hook reads from MMKernelInputs (no graph needed)."""

    def __init__(self, m, n, k, b_strides, dtype="bfloat16"):
        import torch

        self._mnk, self._b, self._dtype = (m, n, k), b_strides, getattr(torch, dtype)

    def mnk_hinted(self):
        return self._mnk

    def mnk_symbolic(self):
        return self._mnk

    def strides_hinted(self):
        return ((self._mnk[2], 1), self._b)

    def dtype(self, idx=0):
        return self._dtype


def test_inductor_problem_and_configs_from_kernel_inputs():
    from kselect.kernels.flydsl import inductor
    from kselect.kernels.problem import ProblemError

    nt = inductor.problem_from_inputs(_Inputs(256, 512, 1024, (1, 1024)), "mm")
    nn = inductor.problem_from_inputs(_Inputs(256, 512, 1024, (512, 1), "float16"), "addmm")
    assert (nt.key, nn.key) == ("mm:256x512x1024:bf16:nt", "addmm:256x512x1024:fp16:nn")
    with pytest.raises(ProblemError, match="neither"):
        inductor.problem_from_inputs(_Inputs(256, 512, 1024, (2048, 2)), "mm")
    dynamic = _Inputs(256, 512, 1024, (1, 1024))
    dynamic.mnk_symbolic = lambda: (__import__("sympy").Symbol("s0"), 512, 1024)
    with pytest.raises(ProblemError, match="dynamic"):
        inductor.problem_from_inputs(dynamic, "mm")
    configs = [
        c.to_kwargs()
        for c in inductor.FlyDSLGemmHeuristic().get_template_configs(_Inputs(256, 512, 1024, (1, 1024)), "mm")
    ]
    assert 0 < len(configs) <= inductor.MAX_CHOICES
    assert configs == [c.kwargs for c in space.candidates(nt, "gfx942", "default")][: len(configs)]


def test_inductor_ktcs_behind_an_open_gate(cache, monkeypatch):
    """With the gate forced open (no launch happens), FlyDSL configs become real
    ExternKernelCallers through Inductor's own KTC path, and `usable` compiles them for real."""
    import torch
    from torch._inductor.ir import FixedLayout
    from torch._inductor.kernel_template_choice import make_ktc_generator

    from kselect.kernels import Availability
    from kselect.kernels.flydsl import inductor

    class Inputs(_Inputs):
        def nodes(self):
            return []

        def get_scalar(self, name):
            return {"alpha": 1, "beta": 2}[name]

    layout = FixedLayout(torch.device("cpu"), torch.bfloat16, [256, 256], [256, 1])
    monkeypatch.setattr(inductor, "rocm_gate", lambda: Availability(True))
    monkeypatch.setattr(inductor, "MAX_CHOICES", 2)
    inputs = Inputs(256, 256, 512, (1, 512))
    assert inductor.templates(inputs, "bmm") == []
    assert inductor.templates(Inputs(256, 256, 512, (1024, 2)), "mm") == []  # B neither layout
    [extern] = inductor.templates(inputs, "mm")
    heuristic = inductor.FlyDSLGemmHeuristic()
    assert heuristic.get_extra_kwargs(inputs, "addmm") == {"ab_layout": "nt", "alpha": 1, "beta": 2}
    ktcs = list(
        make_ktc_generator(
            extern,
            heuristic.get_template_configs(inputs, "mm"),
            heuristic.get_extra_kwargs(inputs, "mm"),
            {},
            layout,
            inputs,
        )
    )
    choices = [k.choice for k in ktcs]
    assert [c.choice.call_name() for c in choices] == ["extern_kernels.flydsl_gemm_mm"] * 2
    assert choices[0].kwargs == dict(
        ab_layout="nt", TILE_M=64, TILE_N=64, TILE_K=32, STAGES=2, WAVES_M=2, WAVES_N=2, SPLIT_K=1, GROUP_M=1
    )
    builds = [inductor.build_of(extern.name, k.params.to_kwargs(), inputs) for k in ktcs]
    assert builds[0] == KernelParams(256, 256, 512, "bf16", "nt", 64, 64, 32, 2, 2, 2, 1, 1)
    assert inductor.usable(builds) == [True, True]
    bad = KernelParams(256, 256, 512, "bf16", "nt", 256, 256, 64, 3, 1, 1, 1, 1)  # LDS > 64 KiB
    assert inductor.usable([bad]) == [False]


def test_extern_kernel_refuses_to_launch_on_cpu():
    import torch

    from kselect.kernels.flydsl import inductor

    a, b = torch.zeros(64, 64, dtype=torch.bfloat16), torch.zeros(64, 64, dtype=torch.bfloat16)
    with pytest.raises(CandidateError, match="not a ROCm build"):
        inductor.flydsl_gemm(
            a,
            b.t(),
            out=torch.empty(64, 64, dtype=torch.bfloat16),
            ab_layout="nt",
            TILE_M=64,
            TILE_N=64,
            TILE_K=32,
            STAGES=1,
            WAVES_M=2,
            WAVES_N=2,
        )


def test_broken_worker_is_reported_not_cached(cache, monkeypatch, tmp_path):
    """A worker that cannot even start compiling (here: flydsl hidden from it) fails the build
    with the worker's own last error line, and that environment failure is not cached."""
    hide = tmp_path / "hide"
    (hide / "flydsl").mkdir(parents=True)
    (hide / "flydsl" / "__init__.py").write_text("raise ImportError('flydsl hidden by the test')\n")
    monkeypatch.setenv("KSELECT_FLYDSL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONPATH", str(hide))
    res = fcompile.compile_one(CONFIGS[0], "gfx942")
    assert res.status == "crashed" and "flydsl hidden by the test" in res.reason
    assert not list((tmp_path / "cache" / "gfx942").glob("*/result.json"))
