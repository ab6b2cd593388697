"""`kselect bench e2e` on the CPU: the real bench (a cold worker process per run, Inductor,
an eager reference) on the tiny fp32 Llama; dead, raising and overrunning workers, the budget
and bad arguments reported clearly; the model's KV cache agrees with a full forward.

Cold CPU compiles cost 15-40 s each on 2 cores (C++ kernels), so the main test runs one
workload; the train step (loss + gradients vs eager) has its own, slow, test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")

from kselect.selector.model.compile_price import COMPILE_BUDGET  # noqa: E402
from kselect.training.bench import e2e as be  # noqa: E402
from kselect.training.bench import e2e_report, e2e_spec, e2e_tables, e2e_worker, gpu_state, selector_log, step_timing  # noqa: E402
from kselect.training.bench.llama import PRESETS, build, preset  # noqa: E402
from kselect.training.cli.main import main  # noqa: E402

from conftest import E2E_RUN_SETTINGS, with_inductor_pool  # noqa: E402

TINY = [
    "--device",
    "cpu",
    "--model",
    "tiny",
    "--dtype",
    "fp32",
    "--batch",
    "2",
    "--seq",
    "16",
    "--steps",
    "3",
    "--warmup",
    "1",
]


def _bench(tmp_path, *args, faults: str = "", timeout: int = 600, inductor_pool: bool = False):
    """Run the console command as a user would; (process, results.json or None). The workers
    compile in-process (tests/conftest.py) unless `inductor_pool`."""
    out = tmp_path / "report"
    env = {**os.environ, e2e_spec.FAULT_ENV: faults}
    if inductor_pool:
        env = with_inductor_pool(env)
    proc = subprocess.run(
        [sys.executable, "-m", "kselect.training.cli.main", "bench", "e2e", *TINY, "--out", str(out), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    path = out / "results.json"
    return proc, (json.loads(path.read_text()) if path.exists() else None), out


def _by_variant(report) -> dict:
    return {r["variant"]: r for r in report["runs"]}


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.slow
def test_cpu_bench_end_to_end_matches_eager_and_reports_broken_workers(tmp_path):
    """plain and kselect-predict compile cold, match eager and are timed; a worker that dies
    (exit 137) and one that raises are reported with their errors and the bench goes on."""
    proc, report, out = _bench(
        tmp_path,
        "--workloads",
        "decode",
        "--variants",
        "plain,default,kselect-verify,kselect-predict",
        faults="default/decode/start/exit,kselect-verify/decode/start/raise",
        inductor_pool=True,
    )
    assert report is not None, proc.stderr
    assert proc.returncode == 1, "a failed run must make the exit status non-zero"
    from kselect.training.measure.provenance import code_digest  # the code that measured, as any process sees it

    assert report["env"]["kselect_code"] == code_digest() and len(code_digest()) == 12
    runs = _by_variant(report)
    assert list(runs) == ["plain", "default", "kselect-verify", "kselect-predict"]  # plan order
    for name in ("plain", "kselect-predict"):
        r = runs[name]
        assert r["status"] == "ok", r.get("error")
        assert r["correctness"]["ok"] and r["correctness"]["rel_err"] < 1e-4
        assert r["compile_s"] > 0 and r["eager_first_s"] > 0 and r["steps"] == 3
        assert r["step_ms_min"] <= r["step_ms"] <= r["step_ms_p90"]
        assert r["tokens_per_s"] == pytest.approx(2 / (r["step_ms"] / 1e3))  # decode: batch tokens
        assert r["gemms"]["benchmarked"] >= 0 and r["graphs"] >= 1
        assert _pid_gone(r["pid"])
        phases = r["compile_phases"]  # Inductor's own clock, inside the compile we timed
        assert 0 < phases["GraphLowering.run"] < phases["compile_fx_inner"] <= r["compile_s"]
        # the compiling process's CPU seconds: at least its in-process tracing, at most all its
        # cores for the whole wall time (C++ compiles in the pool's workers are not in it)
        assert phases["bytecode_tracing"] / 2 < r["compile_cpu_s"] <= os.cpu_count() * r["compile_s"] + 0.5
        # the compile-worker pool was up before the timed compile (Triton is installed here)
        assert r["compile_pool_s"] > 0
    # the step's time by kind after the timing (CPU: GEMM ops' self time; plain calls aten::mm)
    k = runs["plain"]["kernel_time"]
    assert k["steps"] == 5 and "CPU ops" in k["source"] and k["ms_per_step"]["gemm"] > 0, k
    assert "kselect" in runs["kselect-predict"] and "kselect" not in runs["plain"]
    assert runs["default"]["status"] == "died" and "exit code 137" in runs["default"]["error"]
    assert runs["kselect-verify"]["status"] == "error"
    assert "fault injected at start" in runs["kselect-verify"]["error"]
    assert report["env"]["torch_version"] == torch.__version__
    tg = {t["variant"]: t for t in report["targets"]}
    assert tg["kselect-predict"]["met"] in (True, False) and tg["kselect-verify"]["met"] is None
    readme = (out / "README.md").read_text()
    assert "kselect bench e2e" in readme and "## decode" in readme and "## Targets" in readme
    assert "| kselect-predict | tiny |" in readme and "died: worker died with exit code 137" in readme
    assert "| phase | plain | kselect-predict |" in readme and "| compile_fx_inner | " in readme
    assert "Kernel time per step by kind, ms (CPU ops' self time" in readme
    assert (out / "compile_vs_step.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "logs" / "decode-default.log").read_text().startswith("fault injected")
    for line in ("[1/4] decode  plain", "[4/4] decode  kselect-predict"):
        assert line.replace("[", "[ ", 1) in proc.stderr  # progress: on stderr


@pytest.mark.slow
def test_cpu_train_step_loss_and_gradients_match_eager(tmp_path):
    proc, report, out = _bench(tmp_path, "--workloads", "train", "--variants", "plain", "--profile-compile")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = report["runs"][0]
    # --profile-compile: the compile's profile beside the log, readable by pstats, and said so
    import pstats

    stats = pstats.Stats(str(out / "logs" / "train-plain.prof"))
    assert any(fn[2] == "compile_fx_inner" for fn in stats.stats)  # (file, line, function name)
    assert "cumulative" in (out / "logs" / "train-plain.prof.txt").read_text()
    assert "every compile ran under cProfile" in (out / "README.md").read_text()
    c = r["correctness"]
    assert r["status"] == "ok" and c["ok"]
    assert c["grad_rel_err"] < 1e-4 and c["loss_rel_err"] < 1e-4
    assert 4.0 < c["loss_eager"] < 7.0  # ~ln(256) for random weights and tokens
    assert r["tokens_per_s"] == pytest.approx(2 * 16 / (r["step_ms"] / 1e3))
    assert r["kernel_time"]["ms_per_step"]["gemm"] > 0  # forward and backward GEMMs, profiled


def test_worker_overrunning_the_budget_is_stopped_and_the_rest_skipped(tmp_path):
    # a 3 s budget: the first worker is still starting or compiling when it ends (its compile
    # alone takes several seconds here), so it is stopped and the second run is skipped
    proc, report, out = _bench(
        tmp_path, "--workloads", "prefill,decode", "--variants", "plain", "--max-minutes", "0.05"
    )
    runs = report["runs"]
    assert [r["status"] for r in runs] == ["timeout", "skipped"], [r.get("error") for r in runs]
    assert "deadline" in runs[0]["error"] and _pid_gone(runs[0]["pid"])
    assert "budget of 0.05 min spent" in runs[1]["error"]
    assert proc.returncode == 1
    assert "skipped: budget" in (out / "README.md").read_text()


def test_unknown_variant_workload_or_preset_is_a_clear_error(tmp_path, capsys):
    base = ["bench", "e2e", *TINY, "--out", str(tmp_path / "r")]
    assert main(base + ["--variants", "plain,bogus"]) == 2
    assert "unknown variant 'bogus'; known: plain, default" in capsys.readouterr().err
    assert main(base + ["--workloads", "train,serve"]) == 2
    assert "unknown workload 'serve'" in capsys.readouterr().err
    assert main(base + ["--model", "llama9"]) == 2
    assert "unknown model preset 'llama9'" in capsys.readouterr().err
    assert main(base + ["--model", "llama3-8b-40l"]) == 2
    assert "llama3-8b has 1 to 32 layers, not 40" in capsys.readouterr().err
    assert main(base + ["--seq", "4096"]) == 2
    assert "exceeds tiny's max_positions 512" in capsys.readouterr().err
    for flag, value in (("--aten-margin", "-0.5"), ("--compile-budget", "-1")):  # checked as enable() checks it
        with pytest.raises(SystemExit) as refused:
            main(base + [flag, value])
        assert refused.value.code == 2 and f"argument {flag}: invalid float >= 0 value" in capsys.readouterr().err
    assert main(base + ["--profile-steps", "-1"]) == 2
    assert "--profile-steps and --max-minutes must be >= 0" in capsys.readouterr().err
    assert main(base + ["--warmup-s", "nan"]) == 2
    assert "--warmup-s, --profile-steps" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_warmup_seconds_default_to_the_devices_steady_state():
    """--warmup-s defaults per device: 10 s on CUDA (a process starts its steps in the state its
    compile left the GPU), none on a CPU; a given value wins on either."""
    import argparse

    from kselect.training.cli.bench_e2e import add_parser, settings_from_args

    root = argparse.ArgumentParser()
    add_parser(root.add_subparsers())

    def settings(*argv):
        return settings_from_args(root.parse_args(["e2e", *argv]))

    # the settings only validate what they are given: no GPU is needed to read CUDA's defaults
    assert settings("--device", "cuda")["warmup_s"] == 10.0
    assert settings("--device", "cpu")["warmup_s"] == 0.0
    assert settings("--device", "cuda", "--warmup-s", "0")["warmup_s"] == 0.0
    assert settings("--device", "cpu", "--warmup-s", "2.5")["warmup_s"] == 2.5


def test_steady_state_warms_up_for_steps_and_seconds_then_times():
    """--warmup-s: untimed calls go on until that many seconds have passed (at least --warmup of
    them), the snapshot is read once, warm, and only then are the timed steps run."""
    import time

    import torch

    from kselect.training.bench.step_timing import steady_state

    calls, snaps = [], []

    def step():
        calls.append(time.perf_counter())
        time.sleep(0.005)

    got = steady_state(
        step,
        torch.device("cpu"),
        steps=4,
        warmup=2,
        warmup_s=0.1,
        snapshot=lambda: snaps.append(len(calls)) or {"sm_clock_mhz": 1500},
    )
    assert got["warmup_s"] >= 0.1 and got["warmup_calls"] >= 2 and got["warmup"] == 2
    assert len(calls) == got["warmup_calls"] + 4 and snaps == [got["warmup_calls"]]
    assert got["after_warmup"] == {"sm_clock_mhz": 1500} and got["step_ms"] >= 5.0
    calls.clear()
    plain = steady_state(step, torch.device("cpu"), steps=3, warmup=1)  # the default: steps only
    assert plain["warmup_calls"] == 1 and len(calls) == 4 and "after_warmup" not in plain


def test_zero_budget_reports_every_run_as_skipped(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["bench", "e2e", *TINY, "--out", str(out), "--max-minutes", "0", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["runs"]) == 15 and {r["status"] for r in report["runs"]} == {"skipped"}
    assert json.loads((out / "results.json").read_text())["runs"] == report["runs"]
    assert (out / "README.md").read_text().count("skipped: budget") == 15


def test_plan_runs_baseline_first_and_exhaustive_last_on_its_own_model():
    s = {
        "workloads": ["train", "decode"],
        "variants": list(e2e_spec.DEFAULT_VARIANTS),
        "model": "llama3-8b-2l",
        "exhaustive_model": "llama3-8b-1l-v32k",
        "exhaustive_workloads": ["decode"],
    }
    got = [(r["workload"], r["variant"], r["model"]) for r in be.plan(s)]
    assert got[0] == ("train", "plain", "llama3-8b-2l") and got[4] == ("decode", "plain", "llama3-8b-2l")
    assert got[-1] == ("decode", "exhaustive", "llama3-8b-1l-v32k") and len(got) == 9


def test_targets_compare_against_plain_and_default_of_the_same_workload():
    def run(variant, compile_s, step_ms, ok=True):
        return {
            "workload": "train",
            "variant": variant,
            "status": "ok",
            "model": "m",
            "compile_s": compile_s,
            "step_ms": step_ms,
            "correctness": {"ok": ok},
        }

    runs = [
        run("plain", 100, 10),
        run("default", 400, 9),
        run("kselect-verify", 120, 8.9),
        run("kselect-predict", 106, 9.5),
    ]
    tg = {t["variant"]: t for t in e2e_report.targets(runs)}
    assert tg["kselect-verify"]["met"] is True and tg["kselect-predict"]["met"] is False
    runs[2] = run("kselect-verify", 120, 8.9, ok=False)
    assert {t["variant"]: t for t in e2e_report.targets(runs)}["kselect-verify"]["met"] is False
    # the cost model's one-time load counts against the first compile of a process
    runs[3] = {**run("kselect-predict", 103, 9.5), "kselect_load_s": 1.5}
    tg = {t["variant"]: t for t in e2e_report.targets(runs)}["kselect-predict"]
    assert tg["met"] is True and "1.04x plain (its 1.50 s model load included)" in tg["detail"]
    runs[3]["kselect_load_s"] = 2.5
    assert {t["variant"]: t for t in e2e_report.targets(runs)}["kselect-predict"]["met"] is False
    merged = e2e_report.combine_repeats(
        [
            {
                **runs[3],
                "kselect_load_s": x,
                "repeat": i,
                "tokens_per_s": 1.0,
                "correctness": {"ok": True, "rel_err": 0.0},
            }
            for i, x in enumerate((1, 3, 2))
        ]
    )
    assert merged[0]["kselect_load_s"] == 2


def test_llama_kv_cache_prefill_and_decode_match_the_full_forward():
    model = build("tiny", seed=3)
    g = torch.Generator().manual_seed(0)
    prompt, nxt = torch.randint(0, 256, (2, 12), generator=g), torch.randint(0, 256, (2, 1), generator=g)
    caches = model.new_caches(2, 13)
    with torch.no_grad():
        full = model(torch.cat([prompt, nxt], 1))
        pre = model(prompt, caches, 0, last_only=True)
        dec = model(nxt, caches, 12, last_only=True)
    torch.testing.assert_close(pre[:, 0], full[:, 11])
    torch.testing.assert_close(dec[:, 0], full[:, 12])
    cfg = PRESETS["llama3-8b-2l"]
    assert (cfg.hidden, cfg.heads, cfg.kv_heads, cfg.intermediate, cfg.vocab, cfg.layers) == (
        4096,
        32,
        8,
        14336,
        128256,
        2,
    )
    deep = preset("llama3-8b-8l")  # N of the 32 layers, by name
    assert deep.layers == 8 and replace(deep, layers=2, name="", note="") == replace(cfg, name="", note="")
    assert sum(p.numel() for p in model.parameters()) == model.cfg.n_params()


@pytest.mark.slow
def test_cpu_freezing_counts_benchmarked_gemms_and_cache_hits_and_kselect_falls_back(tmp_path):
    """With freezing, CPU max-autotune benchmarks each frozen Linear (MKL vs CPP micro-GEMM):
    5 distinct GEMMs, the 4 of the second (identical) layer from the autotune cache. kselect has
    no CPU model: it says so once and every GEMM goes to stock, still correct."""
    proc, report, out = _bench(tmp_path, "--workloads", "prefill", "--variants", "kselect-predict", "--freezing")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = report["runs"][0]
    assert r["status"] == "ok" and r["correctness"]["ok"]
    assert (r["gemms"]["autotuned"], r["gemms"]["benchmarked"], r["gemms"]["cache_hits"]) == (9, 5, 4)
    assert r["gemms"]["candidates"] == sum(r["gemms"]["per_gemm"]) >= 10
    assert r["gemm_tuning"]["gemms"] == 5 and r["gemm_tuning"]["total_s"] > 0  # Inductor's own log
    # per distinct GEMM, the kernel stock max-autotune timed fastest (MKL or the C++ template)
    winners = r["gemms"]["winners"]
    assert len(winners) == 5 and all(w.startswith(("aten:", "cpp:")) for w in winners.values()), winners
    assert "Kernels per GEMM (prefill" in (out / "README.md").read_text()
    assert r["kselect_ranker"].startswith("unavailable (RankerUnavailable: kselect: no cost model for cpu")
    assert r["kselect"]["stats"]["fallbacks"] == 9 and r["kselect"]["stats"]["decisions"] == 0
    assert any("no cost model for cpu" in w for w in r["kselect"]["warnings"])
    assert "freezing on for prefill/decode" in (out / "README.md").read_text()


def _decode_settings(**over) -> dict:
    """The settings of a recorded decode-only GPU run, with `over` on top."""
    return {
        **E2E_RUN_SETTINGS,
        "kselect_space": "EXHAUSTIVE",
        "kselect_model": "",
        "freezing": False,
        "seed": 0,
        "workloads": ["decode"],
        "exhaustive_workloads": ["decode"],
        "rtol": 2e-2,
        **over,
    }


def test_report_renders_every_status_and_keeps_other_model_rows_out_of_ratios(tmp_path):
    """The H200 report's shapes, on given numbers: exhaustive on a smaller model, a timeout, a
    skip and kselect decisions all render; ratios only compare runs of the same model."""
    settings = _decode_settings(
        model="llama3-8b-1l",
        variants=list(e2e_spec.DEFAULT_VARIANTS),
        max_minutes=8.5,
        exhaustive_model="llama3-8b-1l-v32k",
    )

    def run(variant, compile_s, step_ms, model="llama3-8b-1l", **extra):
        r = {
            "workload": "decode",
            "variant": variant,
            "model": model,
            "status": "ok",
            "compile_s": compile_s,
            "step_ms": step_ms,
            "step_ms_p10": step_ms,
            "step_ms_p90": step_ms,
            "tokens_per_s": 8e3 / step_ms,
            "gemms": {"autotuned": 5, "benchmarked": 5, "candidates": 100, "cache_hits": 0},
            "correctness": {"ok": True, "rel_err": 3e-3, "tol": 2e-2},
        }
        return {**r, **extra}

    ks = {
        "kselect": {
            "decisions_logged": 10,
            "candidates_ranked": 2500,
            "kept": 14,
            "ranking_ms": 40.0,
            "threads": {"MainThread": 10},
            "stock_ops": ["scaled_mm"],
            "warnings": [],
            "stats": {"decisions": 10, "fallbacks": 0},
            "decision_cpu_ms": 35.0,
            "picks_by_template": {"triton:mm": 2, "aten:mm": 3},
            "picks": {"mm:8x4096x4096:bf16:nt": ["aten:mm"], "mm:8x128256x4096:bf16:nt": ["triton:mm:BM16"]},
        },
        "kselect_ranker": "model:abc",
        "kselect_load_s": 0.2,
    }
    stock = {
        "autotuned": 5,
        "benchmarked": 5,
        "candidates": 100,
        "cache_hits": 0,
        "winners": {"mm:8x4096x4096:bf16:nt": "aten:mm", "mm:8x128256x4096:bf16:nt": "triton:mm:BM32"},
    }
    runs = [
        run("plain", 20.0, 1.0),
        run("default", 60.0, 0.9, gemms=stock),
        run("kselect-verify", 24.0, 0.89, **ks),
        {
            "workload": "decode",
            "variant": "kselect-predict",
            "model": "llama3-8b-1l",
            "status": "timeout",
            "error": "stopped at the budget's deadline after 30 s",
            "compile_s": 21.0,
        },
        {
            "workload": "decode",
            "variant": "exhaustive",
            "model": "llama3-8b-1l-v32k",
            "status": "skipped",
            "error": "budget of 8.5 min spent before it could start",
        },
    ]
    report = {
        "command": "kselect bench e2e ...",
        "settings": settings,
        "runs": runs,
        "elapsed_s": 500,
        "env": {"gpu_name": "NVIDIA H200", "torch_version": "2.11.0", "cpus": 16},
    }
    e2e_report.write_report(report, tmp_path)
    text = (tmp_path / "README.md").read_text()
    assert "(NVIDIA H200)" in text and "EXHAUSTIVE runs use the smaller model `llama3-8b-1l-v32k`" in text
    assert "| kselect-verify | llama3-8b-1l | 24.0 | 1.20 | 0.890 (0.890-0.890) | 0.989 |" in text
    assert "| exhaustive | llama3-8b-1l-v32k | - | - | - | - |" in text
    assert "timeout: stopped at the budget's deadline" in text and "skipped: budget of 8.5 min" in text
    tg = {t["variant"]: t for t in json.loads((tmp_path / "results.json").read_text())["targets"]}
    assert tg["kselect-verify"]["met"] is True and tg["kselect-predict"]["met"] is None
    # which kernels each autotuned variant used, and how many of DEFAULT's verify shares
    assert tg["kselect-verify"]["detail"].endswith("; DEFAULT's kernel on 1 of 2 GEMMs")
    assert "| GEMM | default | kselect-verify |" in text
    assert "| mm:8x128256x4096:bf16:nt | `triton:mm:BM32` | `triton:mm:BM16` |" in text
    assert (
        "| decode | kselect-verify | 0.20 | 10 (MainThread: 10) | 2500 | 14 | 40.0 (35.0) | "
        "aten:mm 3, triton:mm 2 | scaled_mm | 0 | - |"
    ) in text
    assert (tmp_path / "compile_vs_step.png").exists() and "plot_error" not in report


def test_the_plot_draws_every_variant(tmp_path):
    """Every variant bench e2e knows gets its own marker in the compile-vs-step plot (the
    marker table once stopped at the sixth, and the plot failed on predict's point)."""
    runs = [
        {"workload": "decode", "variant": v, "model": "tiny", "status": "ok", "compile_s": 1.0 + i, "step_ms": 1.0}
        for i, v in enumerate(e2e_spec.ORDER)
    ]
    e2e_report.plot(runs, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0


def test_repeats_interleave_and_report_medians_over_processes(tmp_path):
    """--repeats N: each round runs every variant once (drift hits all alike), every other round
    in reverse order (a position in the round favours no variant); the report's step and
    compile time are medians over the processes, the range is min-max of their medians."""
    s = {
        "workloads": ["decode"],
        "variants": ["plain", "default", "kselect-verify"],
        "model": "m",
        "exhaustive_model": "m",
        "exhaustive_workloads": ["decode"],
        "repeats": 3,
    }
    got = [(r["variant"], r["repeat"]) for r in be.plan(s)]
    assert got == [
        ("plain", 0),
        ("default", 0),
        ("kselect-verify", 0),
        ("kselect-verify", 1),
        ("default", 1),
        ("plain", 1),
        ("plain", 2),
        ("default", 2),
        ("kselect-verify", 2),
    ]

    def run(variant, repeat, compile_s, step_ms, status="ok"):
        r = {"workload": "decode", "variant": variant, "model": "m", "repeat": repeat, "status": status}
        if status == "ok":
            r.update(
                {
                    "compile_s": compile_s,
                    "compile_cpu_s": compile_s / 2 + repeat / 10,
                    "step_ms": step_ms,
                    "step_ms_p10": step_ms,
                    "step_ms_p90": step_ms,
                    "tokens_per_s": 8e3 / step_ms,
                    "gemms": {"autotuned": 5, "benchmarked": 5, "candidates": 9, "cache_hits": 0},
                    "correctness": {"ok": True, "rel_err": 3e-3 * (repeat + 1), "tol": 2e-2},
                    "compile_phases": {
                        "GraphLowering.run": {"plain": 0.8, "default": 2.0}.get(variant, 1.0 + repeat),
                        "bytecode_tracing": 0.05,
                    },
                }
            )
        return r

    runs = [
        run("plain", 0, 5.0, 0.83),
        run("default", 0, 10.0, 0.52),
        run("kselect-verify", 0, 5.5, 0.60),
        run("plain", 1, 4.0, 0.56),
        run("default", 1, 11.0, 0.78),
        run("kselect-verify", 1, 6.0, 0.54),
        run("plain", 2, 6.0, 0.56),
        run("default", 2, 12.0, 0.53),
        run("kselect-verify", 2, None, None, status="timeout"),
    ]
    settings = _decode_settings(variants=s["variants"], max_minutes=10, exhaustive_model="m", repeats=3)
    report = {
        "command": "kselect bench e2e --repeats 3",
        "settings": settings,
        "runs": runs,
        "elapsed_s": 60,
        "env": {"gpu_name": "NVIDIA H200"},
    }
    e2e_report.write_report(report, tmp_path)
    combined = {r["variant"]: r for r in json.loads((tmp_path / "results.json").read_text())["combined"]}
    assert combined["plain"]["step_ms"] == 0.56 and combined["plain"]["compile_s"] == 5.0
    assert combined["default"]["step_ms"] == 0.53 and combined["default"]["step_ms_p90"] == 0.78
    v = combined["kselect-verify"]  # two ok processes of three: median of those two, and said so
    assert v["repeats"] == 2 and v["step_ms"] == pytest.approx(0.57) and "1 of 3" in v["error"]
    assert v["correctness"]["rel_err"] == pytest.approx(6e-3)
    text = (tmp_path / "README.md").read_text()
    assert "each variant in 3 processes (interleaved rounds, every other one in reverse order)" in text
    # compile phases: the median over the ok processes; a phase under 0.1 s everywhere is left out
    assert v["compile_phases"] == {"GraphLowering.run": pytest.approx(1.5), "bytecode_tracing": 0.05}
    assert "| GraphLowering.run | 0.80 | 2.00 | 1.50 |" in text and "bytecode_tracing" not in text
    assert "| kselect-verify | m | 5.8 | 1.15 | 0.570 (0.540-0.600) | 1.075 |" in text
    # the compiling process's CPU seconds: medians beside the wall's, and in the target's line
    assert v["compile_cpu_s"] == pytest.approx(2.925) and v["compile_cpu_s_samples"] == [2.75, 3.1]
    assert "| *compile, wall* | 5.00 | 11.00 | 5.75 |" in text
    assert "| *compile, this process's CPU* | 2.50 | 5.60 | 2.92 |" in text
    tg = json.loads((tmp_path / "results.json").read_text())["targets"][0]
    assert tg["detail"].startswith("step 1.075x default, compile 1.15x plain; host CPU 1.17x plain's (2.92 vs 2.50 s)")
    # a bench without plain still says the half of verify's target it measured; met stays open
    rows = e2e_report.combine_repeats([r for r in runs if r["variant"] != "plain"])
    (tg,) = e2e_report.targets(rows)
    assert tg["met"] is None and tg["detail"] == "step 1.075x default; not judged: no plain run in this bench"
    (tg,) = e2e_report.targets([r for r in e2e_report.combine_repeats(runs) if r["variant"] != "default"])
    assert tg["met"] is None and tg["detail"].startswith("compile 1.15x plain; host CPU 1.17x plain's")
    assert tg["detail"].endswith("; not judged: no default run in this bench")


def test_graph_replay_is_cuda_only_and_rendered():
    """The GPU-only step time is None on the CPU (nothing to capture); a captured row renders it."""
    import torch

    assert step_timing.graph_replay_ms(lambda: None, torch.device("cpu")) is None
    assert gpu_state.device_state(torch.device("cpu")) is None
    row = {
        "workload": "decode",
        "variant": "plain",
        "model": "m",
        "status": "ok",
        "compile_s": 5.0,
        "step_ms": 0.56,
        "step_ms_p10": 0.55,
        "step_ms_p90": 0.6,
        "tokens_per_s": 14e3,
        "graph_step_ms": 0.211,
        "correctness": {"ok": True, "rel_err": 1e-3, "tol": 2e-2},
    }
    failed = {**row, "variant": "default", "graph_step_ms": None, "graph_error": "RuntimeError: capture"}
    text = "\n".join(e2e_tables.table([row, failed], "decode"))
    assert "| plain | m | 5.0 | 1.00 | 0.560 (0.550-0.600) | 1.000 | 0.211 |" in text
    assert "capture failed" in text


def test_autotune_aten_variant_is_stock_max_autotune_offered_aten_alone():
    """The opt-in floor variant: max-autotune's GEMM path with one (ATen) choice per GEMM, no
    kselect; not run unless asked for."""
    from torch._inductor import config

    assert "autotune-aten" in e2e_spec.ORDER and "autotune-aten" not in e2e_spec.DEFAULT_VARIANTS
    keep = e2e_spec.VARIANTS["kselect-verify-keep"]  # the memory experiment: opt-in, verify otherwise
    assert keep.kselect == "verify" and dict(keep.options) == {"release_memory": False}
    assert "kselect-verify-keep" in e2e_spec.ORDER and "kselect-verify-keep" not in e2e_spec.DEFAULT_VARIANTS
    cool = e2e_spec.VARIANTS["kselect-verify-cool"]  # the wake experiment: opt-in, verify otherwise
    assert cool.kselect == "verify" and dict(cool.options) == {"warm_while_compiling": False}
    assert "kselect-verify-cool" in e2e_spec.ORDER and "kselect-verify-cool" not in e2e_spec.DEFAULT_VARIANTS
    workers = e2e_spec.VARIANTS["kselect-verify-workers"]  # the GIL experiment: opt-in, verify otherwise
    assert workers.kselect == "verify" and dict(workers.options) == {"compile_in": "workers"}
    assert "kselect-verify-workers" not in e2e_spec.DEFAULT_VARIANTS
    fused = e2e_spec.VARIANTS["kselect-verify-fused"]  # fused-form timing: opt-in, verify otherwise
    assert fused.kselect == "verify" and dict(fused.options) == {"time_fused": True}
    assert "kselect-verify-fused" in e2e_spec.ORDER and "kselect-verify-fused" not in e2e_spec.DEFAULT_VARIANTS
    unpriced = e2e_spec.VARIANTS["kselect-verify-unpriced"]  # the compile-price experiment: opt-in
    assert unpriced.kselect == "verify" and dict(unpriced.options) == {"compile_budget": 0.0}
    assert "kselect-verify-unpriced" not in e2e_spec.DEFAULT_VARIANTS
    cold = e2e_spec.VARIANTS["kselect-verify-cold-start"]  # what the warm start saves: opt-in
    assert cold.kselect == "verify" and dict(cold.options) == {"warm_start": False}
    assert "kselect-verify-cold-start" not in e2e_spec.DEFAULT_VARIANTS
    assert e2e_report.policy_note({"warm_start": False}) == ", cold start"
    assert e2e_report.policy_note({"warm_start": True}) == ""
    assert e2e_report.policy_note({"compile_budget": 0.0}) == ", compile_budget=0"
    assert e2e_report.policy_note({"compile_budget": COMPILE_BUDGET}) == e2e_report.policy_note({}) == ""
    assert set(e2e_spec.OPT_IN) <= set(e2e_spec.ORDER)
    spec = {"variant": "autotune-aten", "workload": "decode", "autotune": "gemm"}
    with config.patch(max_autotune_gemm=False, max_autotune_gemm_backends="ATEN,TRITON"):
        e2e_worker.configure(spec)
        assert config.max_autotune_gemm is True and config.max_autotune_gemm_backends == "ATEN"
        assert config.max_autotune_gemm_search_space != "EXHAUSTIVE"
    with config.patch(max_autotune_gemm=False, max_autotune_gemm_backends="ATEN,TRITON"):
        e2e_worker.configure({**spec, "variant": "default"})  # the stock variants keep Inductor's backends
        assert config.max_autotune_gemm_backends == "ATEN,TRITON"


def test_half_precision_results_are_judged_against_an_fp32_run_too():
    """Beyond the tolerance vs eager, a bf16 result still passes when it is no further from an
    fp32 run of the same weights than 3x eager's own error (+ tol/10): PyTorch's accuracy rule."""
    assert e2e_worker.judge(0.03, 0.02) == {"rel_err": 0.03, "tol": 0.02, "ok": False}
    v = e2e_worker.judge(0.03, 0.02, err_vs_ref=0.05, eager_err_vs_ref=0.02)
    assert v["ok"] and v["fp32_bound"] == pytest.approx(3 * 0.02 + 0.002)
    assert not e2e_worker.judge(0.03, 0.02, err_vs_ref=0.07, eager_err_vs_ref=0.02)["ok"]
    assert e2e_worker.judge(0.01, 0.02, err_vs_ref=0.9, eager_err_vs_ref=0.0)["ok"]  # within tol of eager
    # the real paths on the tiny model in bf16, "compiled" = eager itself: errors vs eager 0,
    # and both runs exactly as far from the fp32 copy
    spec = {"seed": 0, "batch": 2, "seq": 8, "rtol": 2e-2, "steps": 2, "warmup": 0}
    for run in (e2e_worker.run_decode, e2e_worker.run_train):
        res: dict = {}
        run(build("tiny", dtype=torch.bfloat16), spec, res, lambda: None, lambda fn: fn)
        c = res["correctness"]
        assert c["ok"] and c["rel_err"] == 0.0, (run.__name__, c)
        assert 0 < c["rel_err_vs_fp32"] == c["eager_rel_err_vs_fp32"] < 0.05, (run.__name__, c)
        assert c["fp32_bound"] == pytest.approx(3 * c["eager_rel_err_vs_fp32"] + 2e-3)
    # an fp32 model needs no anchor
    res = {}
    e2e_worker.run_decode(build("tiny", dtype=torch.float32), {**spec, "rtol": 1e-4}, res, lambda: None, lambda fn: fn)
    assert res["correctness"] == {
        "what": "last-position logits vs eager (relative norm)",
        "rel_err": 0.0,
        "tol": 1e-4,
        "ok": True,
    }


def test_the_state_sampler_reads_until_its_block_ends_and_summarises_medians():
    """The sampler's thread reads while the `with` block runs and stops with it: medians of
    each reading, the clock's range, a reading missing from some samples left out of its
    median; a host with nothing to read (the CPU, no NVML) records no samples and None."""
    import itertools
    import threading
    import time

    import torch

    from kselect.training.bench.gpu_state import StateSampler

    clocks = itertools.cycle([1500, 1980, 1755])
    reads = []
    enough = threading.Event()

    def read():
        reads.append(1)
        if len(reads) > 7:
            enough.set()
        out = {"sm_clock_mhz": next(clocks), "temperature_c": 50}
        if len(reads) % 2:
            out["power_mw"] = 690_000
        return out

    counter = itertools.count(5_000, 250)  # mJ, moving at every reading
    with StateSampler(period_s=0.001, read=read, energy=lambda: next(counter)) as sampler:
        assert enough.wait(10), "the sampler's thread did not read"
    n = len(reads)
    got = sampler.summary()
    assert got["samples"] == n - 1  # every read but the availability probe
    # the counter was read at entry, with each sample and at exit
    assert got["energy_j"] == pytest.approx(0.25 * n) and got["window_ms"] > 0
    assert got["counter_updates"] == n and got["counter_power_mw"] > 0
    assert (got["sm_clock_mhz_min"], got["sm_clock_mhz_max"]) == (1500, 1980)
    assert got["sm_clock_mhz"] in (1500, 1755, 1980) and got["temperature_c"] == 50
    assert got["power_mw"] == 690_000
    time.sleep(0.02)
    assert len(reads) == n  # stopped with the block
    with StateSampler(torch.device("cpu")) as idle:
        pass
    assert idle.summary() is None and idle.samples == []
    with StateSampler(read=lambda: {}, energy=iter([1_000, None]).__next__) as half:  # counter lost at exit
        pass
    assert half.summary() is None
    with StateSampler(read=lambda: {}, energy=iter([1_000, 1_690]).__next__) as short:  # one move
        pass
    assert short.summary()["energy_j"] == 0.69 and "counter_power_mw" not in short.summary()
    with pytest.raises(ValueError, match="period_s"):
        StateSampler(period_s=0)


def test_counter_power_spans_whole_counter_steps_only():
    """An energy counter that moves every ~100 ms: joules from entry to exit depend on where
    the window falls (the H200 read 31.1 or 34.6 J a prefill step); the power between its
    first and last move does not."""
    from kselect.training.bench.gpu_state import counter_power

    def readings(offset_s):  # 690 W, the counter moving every 100 ms, read every 10 ms for 0.96 s
        return [(offset_s + i * 0.01, 69_000 * int((offset_s + i * 0.01) / 0.1 + 1e-9)) for i in range(97)]

    early, late = readings(0.0), readings(0.095)
    assert early[-1][1] - early[0][1] != late[-1][1] - late[0][1]  # entry-to-exit joules differ
    for r in (early, late):
        got = counter_power(r)
        assert got["counter_power_mw"] == pytest.approx(690_000, rel=1e-6), got
        assert got["counter_period_ms"] == pytest.approx(100) and got["counter_updates"] >= 9
    assert counter_power(readings(0.0)[:12]) == {}  # one move: no span
    assert counter_power([(0.0, 5), (0.01, None), (0.02, 9)]) == {}  # a lost reading is no move
    assert counter_power([]) == {}


@pytest.mark.gpu
def test_device_state_reads_the_allocator_on_the_gpu():
    """The GPU state recorded around a run's timing: the allocator's GiB (a 1 GiB tensor shows),
    and only readings NVML gave, each a plausible number."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (the H200)")
    dev = torch.device("cuda")
    x = torch.empty(2**29, dtype=torch.bfloat16, device=dev)
    state = gpu_state.device_state(dev)
    assert state["allocated_gb"] >= 1.0 and state["reserved_gb"] >= state["allocated_gb"], state
    assert set(state) <= {"reserved_gb", "allocated_gb", "sm_clock_mhz", "temperature_c", "power_mw"}
    assert all(v > 0 for k, v in state.items() if k != "allocated_gb"), state
    del x


def test_verify_measurements_are_tabled_with_how_their_compiles_shared_the_wait():
    """One row per measured GEMM of a process: wall, compile wait, timing, and the compile
    record summed (threads' CPU), its longest compile, its longest wait for a compile worker
    and the children's CPU; a record from before the compiles were timed shows dashes, and no
    measurement means no table."""
    per_choice = {
        "triton:mm:a": {"start_ms": 0.5, "wall_ms": 1190.0, "cpu_ms": 410.0},
        "triton:mm:b": {"start_ms": 0.7, "wall_ms": 1201.0, "cpu_ms": 395.0},
    }
    new = {
        "problem": "mm:8x128256x4096:bf16:nt",
        "ms": {"aten:mm": 0.25, "triton:mm:a": 0.24, "triton:mm:b": 0.245},
        "winner": "triton:mm:a",
        "wall_ms": 1412.4,
        "phases_ms": {"operands": 28.0, "compile_wait": 1205.6, "timing": 131.0},
        "compiled_in": "threads",
        "compiles": {"per_choice": per_choice, "span_ms": 1202.0, "children_cpu_ms": 300.0},
        "predicted_compile_ms": {"triton:mm:a": 1063.8, "triton:mm:b": 341.0},
    }
    old = {**new, "compiles": {}, "compiled_in": ""}
    del old["predicted_compile_ms"]
    in_workers = {
        **new,
        "compiled_in": "workers",
        "compiles": {
            "per_choice": {
                k: {**t, "worker_ms": t["wall_ms"] - 40.0 - i} for i, (k, t) in enumerate(per_choice.items())
            },
            "span_ms": 1202.0,
            "children_cpu_ms": 0.0,
            "where": "workers",
        },
    }
    runs = [
        {"workload": "decode", "variant": "kselect-verify", "repeat": 1, "kselect": {"measurements": [new]}},
        {
            "workload": "decode",
            "variant": "kselect-verify-workers",
            "repeat": 1,
            "kselect": {"measurements": [in_workers]},
        },
        {"workload": "decode", "variant": "kselect-verify", "repeat": 0, "kselect": {"measurements": [old]}},
        {"workload": "decode", "variant": "kselect-predict", "repeat": 0, "kselect": {"measurements": []}},
    ]
    lines = e2e_tables.measurement_table(runs)
    assert (
        "| decode | kselect-verify | 1 | mm:8x128256x4096:bf16:nt | 3 | 1412 | 1206 | 131 | threads | 1202 | "
        "805 | 1201 | 1064 | - | 300 | `triton:mm:a` |"
    ) in lines
    assert (
        "| decode | kselect-verify-workers | 1 | mm:8x128256x4096:bf16:nt | 3 | 1412 | 1206 | 131 | workers | "
        "1202 | 805 | 1201 | 1064 | 1160 | 0 | `triton:mm:a` |"
    ) in lines
    assert (
        "| decode | kselect-verify | 0 | mm:8x128256x4096:bf16:nt | 3 | 1412 | 1206 | 131 | - | - | - | - | - | - | - |"
    ) in "\n".join(lines)
    assert e2e_tables.measurement_table(runs[3:]) == []


def test_a_verify_run_keeps_its_decisions_reasons_and_the_price_beside_its_measurements():
    """The priced lm_head decision, made by the shipped models on this CPU, survives into a
    run's results (kept set and why, with the template the price passed over) and its README;
    a measurement keeps the price's prediction per template and its dropped choices, which the
    GPU runs compare with the compiles they measure."""
    from kselect.kernels.backend import Candidate, Problem
    from kselect.kernels.triton.space import triton_space
    from kselect.models import shipped_model_path
    from kselect.selector.inductor import lifecycle as ksi

    fingerprint = {
        **json.loads(shipped_model_path("h200-bf16.meta.json").read_text())["fingerprint"],
        "device_type": "cuda",
    }
    lm_head = Problem(16, 128256, 4096, "bf16", "nt")  # Llama-3-8B's lm_head, 16 sequences decoding
    cands = [Candidate.make("aten", "mm")] + triton_space(lm_head, "exhaustive")
    sel = ksi.Selector("verify")
    sel._load_ranker(fingerprint)
    kept, _ = sel.select("templates", lm_head, {}, fingerprint, cands, early=True)
    kept_keys = [cands[i].key for i in kept]
    # as the selector records a measurement of that set (the timing itself needs the GPU)
    sel.measurements.append(
        {
            "problem": lm_head.key,
            "ms": {k: 0.25 for k in kept_keys},
            "winner": kept_keys[0],
            "wall_ms": 700.0,
            "compiled_in": "threads",
            "phases_ms": {"compile_wait": 450.0},
            "compiles": {},
            "memory_mb": {},
            "method": "cuda_graph",
            "stats": {},
            "dropped": {kept_keys[-1]: "wrong result (relative error 0.5 vs ATen)"},
            "predicted_compile_ms": sel.pricing.predicted_ms(lm_head, [cands[i] for i in kept]),
        }
    )
    got = selector_log.selector_picks(sel)
    assert got["compile_budget"] == COMPILE_BUDGET
    assert got["warm_start"] == {}  # recorded; never begun where CUDA is not in use
    decision = got["decisions"][-1]
    assert decision["problem"] == lm_head.key and decision["kept"] == kept_keys and decision["early"]
    slow = "triton:mm:BK128-BM16-BN256-G8-S3-W4"  # the shipped model's, priced out of its kept set
    assert "slow to compile (" in decision["why"] and slow in decision["why"]
    assert slow not in kept_keys
    measured = got["measurements"][0]
    assert set(measured["predicted_compile_ms"]) == {k for k in kept_keys if not k.startswith("aten")}
    assert measured["dropped"] == {kept_keys[-1]: "wrong result (relative error 0.5 vs ATen)"}
    assert "method" not in measured and "stats" not in measured  # the rest stays in the selector
    run = {"workload": "decode", "variant": "kselect-verify", "repeat": 2, "kselect": got}
    lines = e2e_tables.measured_decision_table([run])
    row = next(line for line in lines if lm_head.key in line)
    assert row.startswith(f"| decode | kselect-verify | 2 | {lm_head.key} | templates | {len(cands)} | {len(kept)} | ")
    assert "slow to compile (" in row and slow in row
    # a run without measurements, or from before decisions were recorded: no table
    assert e2e_tables.measured_decision_table([{**run, "kselect": {**got, "measurements": []}}]) == []
    assert e2e_tables.measured_decision_table([{**run, "kselect": {"measurements": got["measurements"]}}]) == []
