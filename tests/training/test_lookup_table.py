"""kselect's decisions exported as Inductor's own template lookup table, and tables imported.

The end-to-end check is two real max-autotune compiles on the CPU: one with kselect deciding
(predict mode, decision cache on), one with kselect disabled and only the exported table
installed through Inductor's `LookupTableChoices`. The GEMM is an addmm whose bias is a
broadcast row, for which Inductor's template stage itself offers two choices (ATen `addmm`
and `bias_addmm`) -- on the CPU the only GEMM with a choice at the stage the table governs
(CPP GEMM templates are appended after it). Stock `LookupTableChoices` serves CUDA devices
only; the test opens that device gate for the CPU and changes nothing else of Inductor's
key generation, matching or choice building.
"""

from __future__ import annotations

import json
import re

import pytest

torch = pytest.importorskip("torch")

from kselect.kernels.candidate import Candidate  # noqa: E402
from kselect.kernels.problem import Problem  # noqa: E402
from kselect.selector.compat import choice_candidates, signatures  # noqa: E402
from kselect.selector.compat import lookup_table as inductor_lookup_table  # noqa: E402
from kselect.selector.decide.rankers import MeasuredRanker  # noqa: E402
from kselect.selector.inductor import lifecycle as ksi  # noqa: E402
from kselect.training.data import lookup_table as lt  # noqa: E402

from inductor_sandbox import inductor_sandbox  # noqa: E402

MISSING = inductor_lookup_table.lookup_table_missing()
needs_table = pytest.mark.skipif(MISSING is not None, reason=f"{MISSING}")

M, N, K = 64, 80, 96


def bias_addmm_model(x, b, w):
    return torch.addmm(b.expand(M, N), x, w)


def _inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(M, K, generator=g), torch.randn(N, generator=g), torch.randn(K, N, generator=g)


class Benchmarks:
    """Inductor's feedback saver: the choices of every autotune that benchmarked something."""

    def __init__(self):
        self.runs: list = []

    def __call__(self, timings, name, input_nodes, choices, profiled_time_fn, precompile_times):
        self.runs.append({choice_candidates.caller_candidate(c).key: ms for c, ms in timings.items()})


@pytest.fixture(scope="module")
def inductor(tmp_path_factory):
    """max-autotune over ATen only (the template stage's two addmm choices), caches off."""
    with inductor_sandbox(
        tmp_path_factory.mktemp("inductor"), Benchmarks(), max_autotune_gemm_backends="ATEN"
    ) as bench:
        yield bench


def compile_once(bench: Benchmarks) -> tuple[list, str]:
    """A fresh compile: (what Inductor benchmarked, the ATen kernel the generated code calls);
    the output must match eager."""
    from torch._inductor.utils import run_and_get_code

    bench.runs.clear()
    torch._dynamo.reset()
    args = _inputs()
    got, code = run_and_get_code(torch.compile(bias_addmm_model), *args)
    torch.testing.assert_close(got, bias_addmm_model(*args))
    called = re.findall(r"extern_kernels\.(\w+)\(", "\n".join(code))
    assert len(called) == 1, called
    return list(bench.runs), called[0]


def cpu_lookup_choices():
    """Inductor's LookupTableChoices with its device gate opened for the CPU."""
    from torch._inductor import config
    from torch._inductor.lookup_table import LookupTableChoices

    class CpuLookupTableChoices(LookupTableChoices):
        def _get_lookup_table(self):
            return config.lookup_table.table or {}

        @staticmethod
        def _get_device_key(device):
            return device.type

    return CpuLookupTableChoices()


def compile_with_table(bench, table) -> tuple[list, str]:
    from torch._inductor import config
    from torch._inductor.virtualized import V

    assert ksi.current() is None
    previous = V.choices
    V.set_choices_handler(cpu_lookup_choices())
    try:
        with config.patch({"lookup_table.table": table}):
            return compile_once(bench)
    finally:
        V.set_choices_handler(previous)


@needs_table
def test_exported_table_alone_picks_what_kselect_picked(inductor, tmp_path):
    stock_runs, _ = compile_once(inductor)
    assert len(stock_runs) == 1 and set(stock_runs[0]) == {"aten:addmm", "aten:bias_addmm"}, stock_runs
    # a table without this GEMM: Inductor's own lookup misses and autotunes both, as stock
    missed, _ = compile_with_table(inductor, {"unrelated+mm": [{"template_id": "aten::mm"}]})
    assert len(missed) == 1 and len(missed[0]) == 2, missed

    problem_key = Problem(M, N, K, "fp32", "nn", "addmm").key
    for winner, kernel in (("aten:addmm", "addmm"), ("aten:bias_addmm", "bias_addmm")):
        ranker = MeasuredRanker(
            {
                problem_key: {
                    "aten:addmm": 1.0 if winner == "aten:addmm" else 2.0,
                    "aten:bias_addmm": 1.0 if winner != "aten:addmm" else 2.0,
                }
            },
            name=f"prefers-{kernel}",
        )
        cache = tmp_path / kernel
        sel = ksi.enable("predict", cache_dir=cache, ranker=ranker)
        runs, called = compile_once(inductor)
        ksi.disable()
        picked = [d["kept"] for d in sel.decisions if d["stage"] == "templates"]
        assert picked == [[winner]] and runs == [] and called == kernel, (picked, runs, called)

        export = lt.export_from_cache(cache)
        assert not export.skipped and len(export.table) == 1, export.summary()
        path = lt.write_table(export, tmp_path / f"{kernel}.json")
        table = json.loads(path.read_text())  # what a deployment ships: plain JSON
        assert list(table.values()) == [[{"template_id": f"aten::{kernel}"}]]

        runs, called = compile_with_table(inductor, table)
        assert runs == [] and called == kernel, (runs, called)  # the table's pick, nothing benchmarked


@needs_table
def test_key_is_inductors_own(inductor):
    """The key kselect writes for a GEMM equals Inductor's make_lookup_key of the same compile."""
    from torch._inductor.lookup_table import LookupTableChoices

    seen = []

    class Recording(LookupTableChoices):
        def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
            _, fields, _ = signatures.ktc_signature(kernel_inputs, op_name)
            theirs = LookupTableChoices._generate_kernel_inputs_key(kernel_inputs) + "+" + op_name
            seen.append((theirs, lt.inductor_key(op_name, fields["inputs"], lt.DEFAULT_SCALARS.get(op_name))))
            return super()._finalize_template_configs(
                template_choices, kernel_inputs, templates, op_name, kwarg_overrides
            )

    from torch._inductor.virtualized import V

    previous = V.choices
    V.set_choices_handler(Recording())
    try:
        torch._dynamo.reset()
        a, b = torch.randn(3, 16, 24), torch.randn(3, 32, 24)
        torch.compile(lambda x, y: torch.bmm(x, y.transpose(1, 2)))(a, b)
        compile_once(inductor)
    finally:
        V.set_choices_handler(previous)
    assert len(seen) >= 2 and all(theirs == ours for theirs, ours in seen), seen


def test_key_round_trips_to_the_problem():
    p = Problem(64, 80, 96, "bf16", "nt", "mm")
    key = lt.inductor_key("mm", lt.problem_inputs(p))
    assert key == "((torch.bfloat16, [64, 96], [96, 1]), (torch.bfloat16, [96, 80], [1, 96]))+mm"
    assert lt.problem_of_key(key) == p
    b = Problem(64, 80, 96, "fp16", "tn", "bmm", batch=4)
    assert lt.problem_of_key(lt.inductor_key("bmm", lt.problem_inputs(b), device_key="gfx942")) == b
    assert lt.parse_key(
        "dev+((torch.float32, [80], [1]), (torch.float32, [4, 8], [8, 1]), "
        "(torch.float32, [8, 80], [80, 1]))+alpha=1&beta=1+addmm"
    )[0::2] == ("dev", {"alpha": "1", "beta": "1"})
    with pytest.raises(lt.LookupTableError, match="no input tuple"):
        lt.parse_key("garbage+mm")


@needs_table
def test_configs_name_inductors_templates():
    uids = inductor_lookup_table.lookup_template_uids()
    tile = Candidate.make("triton", "mm", BLOCK_M=64, BLOCK_N=32, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=4)
    cfg = lt.table_config(tile, "addmm", 96, uids)
    assert cfg == {
        "template_id": "triton::mm",
        "BLOCK_M": 64,
        "BLOCK_N": 32,
        "BLOCK_K": 64,
        "GROUP_M": 8,
        "num_stages": 3,
        "num_warps": 4,
        "EVEN_K": False,
    }
    assert lt.table_config(tile, "bmm", 128, uids)["template_id"] == "triton::bmm"
    assert lt.table_config(tile, "mm", 128, uids)["EVEN_K"] is True
    assert lt.candidate_of_config(cfg, uids) == tile
    assert lt.candidate_of_key(tile.key) == tile
    dk = Candidate.make("triton", "decompose_k", k_split=16)
    assert lt.table_config(dk, "mm", 8192, uids) == {"template_id": "decompose_k", "k_split": 16}
    for outside in (Candidate.make("cpp", "cpp_CppMicroGemmFP32Vec"), Candidate.make("flydsl", "gemm", TILE_M=64)):
        with pytest.raises(lt.LookupTableError):
            lt.table_config(outside, "mm", 96, uids)


def _cache_file(root, name, kept, op="mm", device="devA", verified=False, stage="templates"):
    inputs = [[[64, 96], [96, 1], "torch.float32"], [[96, 80], [80, 1], "torch.float32"]]
    fields = {"stage": stage, "device": device, "problem": {"op": op, "out": [64, 80], "inputs": inputs}}
    if verified:
        fields["verified"] = True
    path = root / name[:2] / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": 1, "kept": kept, "key_fields": fields}))
    return path


@needs_table
def test_cache_export_resolves_conflicts_and_leaves_out_what_it_cannot_name(tmp_path):
    import os

    tile = "triton:mm:BM64-BN32-BK32-G8-S3-W4"
    old = _cache_file(tmp_path, "aa01", ["aten:mm"])
    os.utime(old, (1, 1))
    _cache_file(tmp_path, "bb02", [tile])  # newer, same GEMM
    _cache_file(tmp_path, "cc03", ["aten:mm"], op="bmm2")  # not a GEMM op Inductor keys
    _cache_file(tmp_path, "dd04", ["cpp:cpp_gemm"], stage="choices")  # choices stage: ignored
    (tmp_path / "ee").mkdir()
    (tmp_path / "ee" / "ee05.json").write_text("[]")
    export = lt.export_from_cache(tmp_path)
    key = "((torch.float32, [64, 96], [96, 1]), (torch.float32, [96, 80], [80, 1]))+mm"
    assert export.picks == {key: [tile]} and export.conflicts == 1
    assert export.table[key][0]["BLOCK_K"] == 32 and export.table[key][0]["EVEN_K"] is True
    assert sum(export.skipped.values()) == 2, export.skipped

    _cache_file(tmp_path, "ff06", ["aten:mm"], verified=True)  # a verified decision beats newer ones
    assert lt.export_from_cache(tmp_path).picks[key] == ["aten:mm"]

    _cache_file(tmp_path, "gg07", ["aten:mm"], device="devB")
    with pytest.raises(lt.LookupTableError, match="pass --device"):
        lt.export_from_cache(tmp_path)
    assert lt.export_from_cache(tmp_path, device="devB", device_key="NVIDIA H100").picks == {
        "NVIDIA H100+" + key: ["aten:mm"]
    }
    with pytest.raises(lt.LookupTableError, match="no decision for device"):
        lt.export_from_cache(tmp_path, device="devC")


def _cli(capsys, *args):
    """The `kselect` command line, in this process: (exit status, stdout, stderr)."""
    from kselect.training.cli.main import main

    capsys.readouterr()
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


@needs_table
def test_cli_export_and_import(tmp_path, capsys):
    _cache_file(tmp_path / "cache", "aa01", ["aten:mm"])
    out = tmp_path / "table.json"
    rc, stdout, err = _cli(
        capsys, "export-lookup-table", "--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--json"
    )
    assert rc == 0, err
    assert json.loads(stdout)["entries"] == 1
    assert list(json.loads(out.read_text()).values()) == [[{"template_id": "aten::mm"}]]

    # Inductor's tables hold configs, no times: the import says so and writes nothing
    rc, stdout, err = _cli(
        capsys, "import-lookup-table", str(out), "--out", str(tmp_path / "ds"), "--fingerprint-id", "devA"
    )
    assert rc == 1 and "carries a measured time" in err and "nothing imported" in err
    assert not (tmp_path / "ds").exists()

    # a table whose configs carry timings becomes measured rows, once
    key = next(iter(json.loads(out.read_text())))
    timed = {
        key: [
            {"template_id": "aten::mm", "timing": 0.5},
            {
                "template_id": "triton::mm",
                "BLOCK_M": 64,
                "BLOCK_N": 32,
                "BLOCK_K": 32,
                "GROUP_M": 8,
                "num_stages": 3,
                "num_warps": 4,
                "EVEN_K": True,
                "metadata": {"timing": 0.25},
            },
        ]
    }
    (tmp_path / "timed.json").write_text(json.dumps(timed))
    for expected in (2, 0):
        rc, stdout, err = _cli(
            capsys,
            "import-lookup-table",
            str(tmp_path / "timed.json"),
            "--out",
            str(tmp_path / "ds"),
            "--fingerprint-id",
            "devA",
            "--json",
        )
        assert rc == 0, err
        assert json.loads(stdout)["imported"] == expected
    from kselect.training.data.dataset import DatasetDir

    rows = DatasetDir(tmp_path / "ds").load()
    assert sorted(rows["time_ms"]) == [0.25, 0.5]
    assert set(rows["problem_key"]) == {Problem(64, 80, 96, "fp32", "nn").key}
    assert set(rows["method"]) == {"lookup_table"} and set(rows["fingerprint_id"]) == {"devA"}

    rc, _, err = _cli(capsys, "export-lookup-table", "--cache-dir", str(tmp_path / "nowhere"), "--out", str(out))
    assert rc == 2 and "is not a directory" in err


def test_missing_lookup_table_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(
        inductor_lookup_table, "lookup_table_missing", lambda: "torch 2.0 has no Inductor template lookup table"
    )
    with pytest.raises(lt.LookupTableError, match="torch 2.0 has no Inductor template lookup table"):
        lt.export_from_cache(".")


@needs_table
def test_model_export_is_the_selectors_predict_pick(tmp_path):
    """From a shapes file: each mm/bmm's entry is what the selector's predict mode keeps over the
    same candidates with the same model; what the table or the model cannot take is left out."""
    from kselect.kernels.triton.space import triton_space
    from kselect.models import shipped_model_path
    from kselect.selector.model.cost_model import CostModel

    path = shipped_model_path("h200-bf16.json")
    if not path.exists():
        pytest.skip("the shipped H200 model is not in this checkout")
    model = CostModel.load(path)
    # the first: the shipped model ranks a Triton tile ahead of ATen
    ranked = [
        Problem(16, 256, 256, "bf16", "nt"),
        Problem(333, 7168, 5120, "bf16", "nt"),
        Problem(64, 128, 65536, "bf16", "nn"),
        Problem(128, 64, 64, "bf16", "nn", "bmm", batch=8),
    ]
    left_out = [Problem(100, 200, 300, "bf16", "nt", "addmm"), Problem(16, 16, 16, "fp32", "nn")]
    for margin in (0.0, None):
        export = lt.export_from_model(ranked + left_out, model, "default", aten_margin=margin)
        assert sum(export.skipped.values()) == 2 and len(export.table) == len(ranked), export.summary()
        sel = ksi.Selector("predict", model=str(path), **({} if margin is None else {"aten_margin": margin}))
        for p in ranked:
            cands = [Candidate.make("aten", p.op)] + list(triton_space(p, "default", ("mm", "decompose_k")))
            kept, _ = sel.select("templates", p, {}, model.fingerprint, cands)
            assert export.picks[lt.inductor_key(p.op, lt.problem_inputs(p))] == [cands[kept[0]].key]
        first = export.table[lt.inductor_key("mm", lt.problem_inputs(ranked[0]))]
        if margin == 0.0:  # with no margin the model's top tile is kept: a Triton entry
            assert first[0]["template_id"] == "triton::mm", first
