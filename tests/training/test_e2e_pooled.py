"""`kselect bench e2e-pool`: processes of several bench e2e runs pooled per setup, on given
numbers and on the H200 runs in reports/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kselect.training.bench.e2e_pool_gpu import device_state_medians
from kselect.training.bench.e2e_pool_load import load_runs
from kselect.training.bench.e2e_pool_render import render
from kselect.training.bench.e2e_pooled import pool
from kselect.training.cli.main import main

from conftest import E2E_RUN_SETTINGS

REPO = Path(__file__).resolve().parents[2]
SETTINGS = {
    **E2E_RUN_SETTINGS,
    "fixed_k": False,
    "min_k": 1,
    "aten_margin": 2.0,
    "early_decision": True,
    "kselect_space": "EXHAUSTIVE",
    "freezing": False,
    "autotune": "gemm",
    "warm_pool": True,
    "profile_compile": False,
}


def _run(variant, compile_s, step_ms, status="ok", batch=8, load=None, cpu=None):
    r = {
        "workload": "decode",
        "variant": variant,
        "model": "m",
        "dtype": "bf16",
        "batch": batch,
        "seq": 1024,
        "status": status,
    }
    if status == "ok":
        r.update(
            {
                "compile_s": compile_s,
                "step_ms": step_ms,
                "step_ms_p10": step_ms,
                "step_ms_p90": step_ms,
                "tokens_per_s": 8e3 / step_ms,
                "graph_step_ms": step_ms / 2,
                "correctness": {"ok": True, "rel_err": 1e-3, "tol": 2e-2},
            }
        )
        if load is not None:
            r["kselect_load_s"] = load
        if cpu is not None:
            r["compile_cpu_s"] = cpu
    return r


def _write(folder: Path, runs, code="abc123abc123", **settings) -> Path:
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(
        json.dumps(
            {
                "command": "kselect bench e2e ...",
                "settings": {**SETTINGS, **settings},
                "env": {"gpu_name": "NVIDIA H200", "kselect_code": code},
                "runs": runs,
            }
        )
    )
    return folder


def _pooled(*folders: str) -> tuple[list, dict]:
    """The runs of these bench e2e folders in reports/ and the one setup they pool into."""
    runs, _ = load_runs([REPO / f for f in folders])
    (setup,) = pool(runs)
    return runs, setup


def _named(comparisons: list, name: str) -> dict:
    """The comparison (a pair statistic or a pooled ratio) called `name`."""
    return next(c for c in comparisons if c["comparison"] == name)


def test_pools_processes_of_one_setup_and_keeps_others_apart(tmp_path, capsys):
    a = _write(
        tmp_path / "a",
        [
            _run("plain", 3.0, 1.0, cpu=2.0),
            _run("kselect-predict", 3.3, 0.9, load=0.1, cpu=2.2),
            _run("default", 30.0, 0.8),
            _run("kselect-verify", 4.0, 0.785, load=0.1),
        ],
    )
    b = _write(
        tmp_path / "b",
        [
            _run("plain", 3.4, 1.1, cpu=2.4),
            _run("kselect-predict", 3.5, 0.9, load=0.1, cpu=2.3),
            _run("plain", 3.2, 1.0, cpu=2.2),
            _run("kselect-predict", None, None, status="timeout"),
            _run("default", 32.0, 0.79),
            _run("kselect-verify", 4.2, 0.80, load=0.1),
        ],
        code="def456def456",
    )
    other = _write(
        tmp_path / "c", [_run("plain", 9.0, 5.0, batch=1), _run("kselect-predict", 9.1, 5.0, batch=1, load=0.1)]
    )
    prof = _write(tmp_path / "d", [_run("plain", 99.0, 1.0)], profile_compile=True)
    assert (
        main(
            [
                "bench",
                "e2e-pool",
                str(a),
                str(b / "results.json"),
                str(other),
                str(prof),
                "--out",
                str(tmp_path / "out"),
            ]
        )
        == 0
    )
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    assert "pooled 12 processes from 3 files into 2 setups" in capsys.readouterr().out
    assert report["skipped"] == [f"{prof / 'results.json'}: --profile-compile (cProfile slows the compile)"]
    by_batch = {s["setup"]["batch"]: s for s in report["setups"]}
    s = by_batch[8]
    assert s["processes"] == 9 and s["not_ok"] == {"kselect-predict": 1}
    assert s["code"] == {"abc123abc123": 1, "def456def456": 1}
    v = {r["variant"]: r for r in s["variants"]}
    assert v["plain"]["processes"] == 3 and v["plain"]["compile_s"] == 3.2 and v["plain"]["compile_cpu_s"] == 2.2
    assert v["kselect-predict"]["processes"] == 2 and v["kselect-predict"]["compile_s"] == pytest.approx(3.4)
    c = {r["comparison"]: r for r in s["comparisons"]}
    pred = c["predict compile / plain's"]  # (3.4 + 3.6) / 2 over 3.2, the load in each process
    assert pred["n"] == [2, 3] and pred["ratio"] == pytest.approx(3.5 / 3.2)
    lo, hi = pred["interval"]
    assert lo <= pred["ratio"] <= hi
    verify = c["verify compile / plain's"]  # every verify process slower than every plain one
    assert verify["ratio"] == pytest.approx(4.2 / 3.2) and verify["p_slower"] == pytest.approx(0.1)  # 1 / C(5, 2)
    assert c["verify step / DEFAULT's"]["p_slower"] > 0.5  # between DEFAULT's two: no slow-down
    tg = {t["variant"]: t for t in s["targets"]}
    assert tg["kselect-predict"]["met"] is False and tg["kselect-predict"]["detail"].startswith("compile 1.09x plain")
    assert tg["kselect-verify"]["met"] is False and "step 0.997x default" in tg["kselect-verify"]["detail"]
    assert by_batch[1]["processes"] == 2 and by_batch[1]["code"] == {"abc123abc123": 1}
    text = (tmp_path / "out" / "README.md").read_text()
    assert "## m, decode (NVIDIA H200, bf16, batch 8, seq 1024): 9 processes" in text
    assert "**mixed**" in text and "Not ok, left out: kselect-predict 1" in text
    assert "| plain | 3 | 3.20 | 2.20 | 1.000 (1.000-1.100) | 0.500 | - | 3 of 3 | 2 |" in text
    assert "| predict compile / plain's | 2 vs 3 | 1.094 |" in text


def test_settings_that_change_a_variant_split_setups_and_variants_can_be_chosen(tmp_path, capsys):
    a = _write(tmp_path / "a", [_run("plain", 3.0, 1.0), _run("kselect-verify", 4.0, 0.9, load=0.1)])
    b = _write(tmp_path / "b", [_run("plain", 3.0, 1.0)], aten_margin=0.5)
    runs, _ = load_runs([a, b])
    assert len(pool(runs)) == 2
    assert main(["bench", "e2e-pool", str(a), "--variants", "plain", "--out", str(tmp_path / "out")]) == 0
    (s,) = json.loads((tmp_path / "out" / "results.json").read_text())["setups"]
    assert [v["variant"] for v in s["variants"]] == ["plain"] and s["targets"] == []
    assert main(["bench", "e2e-pool", str(a), "--variants", "plain,verify", "--out", str(tmp_path / "out")]) == 2
    assert "unknown variant(s) ['verify']" in capsys.readouterr().err


def test_headings_of_setups_alike_name_the_setting_that_tells_them_apart(tmp_path):
    """verify at k 1 and k 4 on one model and workload: two setups, and each heading says its k;
    a setup alone of its kind (another batch) gets no such suffix."""
    a = _write(tmp_path / "a", [_run("plain", 3.0, 1.0), _run("kselect-verify", 4.0, 0.9, load=0.1)])
    b = _write(tmp_path / "b", [_run("plain", 3.0, 1.0), _run("kselect-verify", 3.5, 0.9, load=0.1)], k=1)
    c = _write(tmp_path / "c", [_run("plain", 3.0, 1.0, batch=2)])
    assert main(["bench", "e2e-pool", str(a), str(b), str(c), "--out", str(tmp_path / "out")]) == 0
    headings = [line for line in (tmp_path / "out" / "README.md").read_text().splitlines() if line.startswith("## ")]
    assert sorted(h.split("processes")[1] for h in headings) == ["", " -- k 1", " -- k 4"]


def test_runs_on_hosts_of_different_speed_compare_within_each_run(tmp_path):
    """A fast host ran plain 4 times and predict twice, a host twice as slow the reverse: the
    pooled medians then compare mostly-fast plain with mostly-slow predict (about 2x), while
    each run says about 1.036x, and so does their combination."""
    fast = _write(
        tmp_path / "fast",
        [_run("plain", c, 1.0) for c in (1.0, 1.02, 1.01, 0.99)]
        + [_run("kselect-predict", 1.04, 1.0, load=0.0) for _ in range(2)],
    )
    slow = _write(
        tmp_path / "slow",
        [_run("plain", 2.0, 1.0) for _ in range(2)]
        + [_run("kselect-predict", c, 1.0, load=0.0) for c in (2.08, 2.1, 2.06, 2.07)],
    )
    alone = _write(tmp_path / "alone", [_run("default", 30.0, 1.0), _run("kselect-verify", 2.0, 0.9, load=0.1)])
    runs, _ = load_runs([fast, slow, alone])
    (s,) = pool(runs)
    pooled = _named(s["comparisons"], "predict compile / plain's")
    assert pooled["ratio"] == pytest.approx(2.065 / 1.015)
    (per_run,) = s["per_run"]  # verify vs DEFAULT ran in one run only: its pooled row is that run
    assert per_run["comparison"] == "predict compile / plain's"
    assert [r["ratio"] for r in per_run["runs"]] == pytest.approx([1.04 / 1.005, 2.075 / 2.0])
    assert [r["n"] for r in per_run["runs"]] == [[2, 4], [4, 2]]
    assert per_run["ratio"] == pytest.approx((1.04 / 1.005 * 2.075 / 2.0) ** 0.5)
    lo, hi = per_run["interval"]
    assert 1.0 < lo <= per_run["ratio"] <= hi < 1.1
    assert s["targets_per_run"] == {"kselect-predict": True}  # 1.036 <= 1.05; verify: no plain with it
    text = render({"command": "c", "sources": [], "skipped": [], "setups": [s]})
    assert "| predict compile / plain's | 2 | 1.035 (2 vs 4), 1.038 (4 vs 2) | 1.036 | 1.0" in text
    assert "| kselect-predict | compile <= 1.05x plain's | **not met** | met | compile 2.03x plain" in text
    # a run with one process of a variant: its ratio counts, but no interval can be had
    single = _write(tmp_path / "single", [_run("plain", 3.0, 1.0), _run("kselect-predict", 3.1, 1.0, load=0.0)])
    (s,) = pool(load_runs([fast, single])[0])
    (per_run,) = s["per_run"]
    assert per_run["interval"] is None and [r["n"] for r in per_run["runs"]] == [[2, 4], [1, 1]]
    assert "| 1.035 (2 vs 4), 1.033 (1 vs 1) | " in render(
        {"command": "c", "sources": [], "skipped": [], "setups": [s]}
    )


@pytest.mark.parametrize(
    "content, message", [("{not json", "not JSON"), ('{"runs": []}', "not a `kselect bench e2e` results.json")]
)
def test_a_file_that_is_not_bench_results_is_a_clear_error(tmp_path, capsys, content, message):
    bad = tmp_path / "results.json"
    bad.write_text(content)
    assert main(["bench", "e2e-pool", str(bad), "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert main(["bench", "e2e-pool", str(tmp_path / "nothing"), "--out", str(tmp_path / "out")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_pools_the_h200_one_layer_decode_runs_in_reports(tmp_path):
    """The 2026-12-03 and 2026-12-04 one-layer decode benches: 18 plain and 17
    predict processes (reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun/dev-cpu/pooled_one_layer.txt), profiled run left out."""
    files = [
        REPO / p
        for p in (
            "reports/2026-12-03-predict-compile-first-decision-forest-serving/call2/b/decode",
            "reports/2026-12-03-predict-compile-first-decision-forest-serving/call3/c/decode",
            "reports/2026-12-03-verify-measurement-8-layer-model-fp32-check/call1/decode",
            "reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun/call2/y/decode1",
            "reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun/call2/y/decode1-prof",
        )
    ]
    if not all(f.exists() for f in files):
        pytest.skip("the H200 reports are not in this checkout")
    runs, skipped = load_runs(files)
    (s,) = pool(runs)
    assert len(skipped) == 1 and "decode1-prof" in skipped[0]
    pred = _named(s["comparisons"], "predict compile / plain's")
    assert pred["n"] == [17, 18] and pred["ratio"] == pytest.approx(3.867 / 3.642, abs=1e-3)
    assert pred["p_slower"] == pytest.approx(0.134, abs=1e-3)
    per_run = _named(s["per_run"], "predict compile / plain's")
    assert [r["n"] for r in per_run["runs"]] == [[2, 2], [3, 3], [4, 4], [8, 9]]
    assert [r["ratio"] for r in per_run["runs"]] == pytest.approx([1.126, 1.168, 1.086, 1.042], abs=1e-3)
    assert per_run["ratio"] == pytest.approx(1.082, abs=1e-3)
    assert s["targets_per_run"] == {"kselect-predict": False}  # 1.082 > 1.05, as pooled 1.062


def _rounds(order_per_round, second_slower=1.01):
    """Runs in the order they ran: in every round the process that runs second reads 1 %
    slower (a position effect), whatever its variant."""
    runs = []
    for rep, order in enumerate(order_per_round):
        for pos, variant in enumerate(order):
            r = _run(variant, 3.0, 1.0 * (second_slower if pos else 1.0))
            runs.append({**r, "repeat": rep})
    return runs


def test_pairs_split_by_who_ran_first_tell_a_position_effect_from_a_variant_effect(tmp_path):
    fixed = _write(tmp_path / "fixed", _rounds([("default", "kselect-verify")] * 4))
    runs, _ = load_runs([fixed])
    (s,) = pool(runs)
    step = _named(s["pairs"], "verify step / DEFAULT's")
    # one fixed order: the position effect reads as verify being 1 % slower in every pair
    assert step["n"] == 4 and step["slower"] == 4 and step["median_ratio"] == pytest.approx(1.01)
    assert step["ran_first"] == {"n": 0, "median_ratio": None} and step["ran_second"]["n"] == 4
    assert step["p_sign"] == pytest.approx(0.125)  # 4 of 4: 2 / 2**4

    alternating = _write(tmp_path / "alt", _rounds([("default", "kselect-verify"), ("kselect-verify", "default")] * 2))
    runs, _ = load_runs([alternating])
    (s,) = pool(runs)
    step = _named(s["pairs"], "verify step / DEFAULT's")
    # reversed rounds: slower only when second, faster when first -- the position's, not verify's
    assert step["slower"] == 2 and step["p_sign"] == pytest.approx(1.0)
    assert step["ran_first"]["median_ratio"] == pytest.approx(1 / 1.01)
    assert step["ran_second"]["median_ratio"] == pytest.approx(1.01)
    assert main(["bench", "e2e-pool", str(alternating), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "README.md").read_text()
    assert "| verify step / DEFAULT's | 4 | 2 | 1.000 | 1.000 | 2, 0.990 | 2, 1.010 |" in text


# The H200's 8-layer prefill runs in which verify ran after DEFAULT in every round.
SAME_ROUND_PREFILL_RUNS = (
    "reports/2026-12-03-8-layers-all-workloads-kernel-time/call1/p/prefill8",
    "reports/2026-12-03-8-layers-all-workloads-kernel-time/call3/k/prefill8",
    "reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun/call1/x/prefill8",
    "reports/2026-12-04-prefill-tie-rounds-8-layer-decode-exhaustive/call1/p/prefill8",
)


def test_the_h200_prefill_pairs_all_ran_verify_second():
    """The 2026-12-03 and 2026-12-04 8-layer prefill runs: verify's graph replay slower than
    DEFAULT's in 9 of 10 same-round pairs, and verify ran second in all ten
    (reports/2026-12-04-prefill-tie-rounds-8-layer-decode-exhaustive/dev-cpu/prefill_pairs.txt)."""
    runs, s = _pooled(*SAME_ROUND_PREFILL_RUNS)
    gpu = _named(s["pairs"], "verify GPU-only step / DEFAULT's")
    assert gpu["n"] == 10 and gpu["slower"] == 9 and gpu["ran_second"]["n"] == 10
    assert gpu["p_sign"] == pytest.approx(22 / 1024)  # 9 or more of 10, either way
    step = _named(s["pairs"], "verify step / DEFAULT's")
    assert step["n"] == 10 and step["slower"] == 7


def test_in_counterbalanced_rounds_the_h200_prefill_replay_gap_follows_verify():
    """The two prefill runs of reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k alternate who runs first. With the four earlier
    runs: verify's graph replay slower in 14 of 16 pairs, including all 3 where verify ran
    first -- the gap is the variant's, not the position's (reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k s2)."""
    runs, s = _pooled(
        *SAME_ROUND_PREFILL_RUNS,
        "reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/call2/b/prefill8",
        "reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/call4/d/prefill8",
    )
    gpu = _named(s["pairs"], "verify GPU-only step / DEFAULT's")
    assert gpu["n"] == 16 and gpu["slower"] == 14 and gpu["ran_first"]["n"] == 3
    assert all(p["ratio"] > 1 for p in gpu["pairs"] if p["first"])
    assert gpu["p_sign"] == pytest.approx(2 * (1 + 16 + 120) / 2**16)  # 14 or more of 16, either way


def test_on_the_h200_prefill_verify_replays_slower_than_predict_whose_lm_head_is_cublas():
    """Predict and verify run the same kernels but lm_head's (cuBLAS against the Triton tile
    verify measured ~4 % faster). Every H200 run with both up to reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode:
    verify's graph replay slower in 10 of 11 rounds, by ~0.5 % (reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode). The
    next test shows the same gap with identical kernels."""
    runs, s = _pooled(
        *SAME_ROUND_PREFILL_RUNS[:2],
        "reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode/call1/a/prefill8",
        "reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode/call4/d/prefill8vp",
    )
    gpu = _named(s["pairs"], "verify GPU-only step / predict's")
    assert gpu["n"] == 11 and gpu["slower"] == 10
    assert gpu["p_sign"] == pytest.approx(2 * (1 + 11) / 2**11)  # 10 or more of 11, either way
    pooled = _named(s["comparisons"], "verify GPU-only step / predict's")
    assert 1.002 < pooled["ratio"] < 1.01 and pooled["p_slower"] < 0.05
    checked = 0
    for r in runs:  # every verify and predict process: the picks differ in lm_head alone
        if r["variant"] in ("kselect-verify", "kselect-predict") and "picks" in (r.get("kselect") or {}):
            checked += 1
            picks = r["kselect"]["picks"]
            head = picks.pop("mm:8x128256x4096:bf16:nt")[0]
            assert set(map(tuple, picks.values())) == {("aten:mm",)}, picks
            assert head.startswith("triton:mm:" if r["variant"] == "kselect-verify" else "aten:mm"), head
    assert checked == 22


def test_on_the_h200_prefill_verify_replays_slower_than_predict_on_identical_kernels():
    """With --aten-margin 0 predict keeps its top-1 on lm_head, verify's own tile, so both replay
    one kernel list, name for name; verify still read slower in 8 of 10 rounds, while its
    kernels summed no slower (reports/2026-12-04-prefill-gap-process-not-tile s3): the gap is its process, not a kernel."""
    runs, s = _pooled(
        "reports/2026-12-04-prefill-gap-process-not-tile/call2/b/prefill8m0",
        "reports/2026-12-04-prefill-gap-process-not-tile/call4/d/prefill8m0b",
    )
    assert s["setup"]["settings"]["aten_margin"] == 0.0
    picks = {tuple(sorted((k, tuple(v)) for k, v in r["kselect"]["picks"].items())) for r in runs}
    assert len(picks) == 1 and dict(next(iter(picks)))["mm:8x128256x4096:bf16:nt"] == (
        "triton:mm:BK128-BM16-BN256-G8-S3-W8",
    )
    (gap,) = s["sequence_gaps"]
    assert gap["positions"] == 154 and gap["first_swap"] is None and gap["total_us"] < 0  # same kernels, no slower
    assert gap["gpu_step_diff_us"] > 100
    gpu = _named(s["pairs"], "verify GPU-only step / predict's")
    assert gpu["n"] == 10 and gpu["slower"] == 8
    before = {v["variant"]: v["device_state"]["before_steps"] for v in s["variants"]}
    assert before["kselect-verify"]["temperature_c"] > before["kselect-predict"]["temperature_c"]
    assert before["kselect-verify"]["reserved_gb"] - before["kselect-predict"]["reserved_gb"] == pytest.approx(0.25)


def test_the_run_effects_fit_takes_hosts_out_and_shows_in_the_report(tmp_path):
    """Two runs on hosts 1 ms apart: pooled medians mix them, the fit with one term per run
    gives verify's +0.2 ms over DEFAULT back, from a run without predict too."""
    a = _write(
        tmp_path / "a",
        [
            _run("default", 30.0, 47.0),
            _run("kselect-verify", 4.0, 47.2),
            _run("default", 30.0, 47.1),
            _run("kselect-verify", 4.0, 47.3),
        ],
    )
    b = _write(
        tmp_path / "b",
        [
            _run("kselect-predict", 3.0, 48.0),
            _run("kselect-verify", 4.0, 48.2),
            _run("default", 30.0, 48.0),
            _run("kselect-predict", 3.0, 48.1),
        ],
    )
    assert main(["bench", "e2e-pool", str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    (s,) = json.loads((tmp_path / "out" / "results.json").read_text())["setups"]
    step = s["effects"]["step"]
    assert step["baseline"] == "default" and step["runs"] == 2 and step["baseline_processes"] == 3
    terms = {e["variant"]: e for e in step["effects"]}
    assert terms["kselect-verify"]["diff"] == pytest.approx(0.2, abs=0.02)
    assert terms["kselect-predict"]["diff"] == pytest.approx(0.05, abs=0.02)
    gpu = {e["variant"]: e["diff"] for e in s["effects"]["gpu"]["effects"]}  # _run's replay: half the step
    assert gpu["kselect-verify"] == pytest.approx(0.1, abs=0.01)
    text = (tmp_path / "out" / "README.md").read_text()
    assert "Each variant's step against default's (3 processes), with one term per run" in text
    assert "| kselect-verify | 3 | +0.200 +- " in text and "| residual | - | sd 0.0" in text


def _h200_prefill_pool(warmup_s: float, compile_budget: float = 0.0) -> dict:
    """The committed 8-layer H200 prefill runs at the default aten margin with this warm-up and
    compile budget, pooled again from the files the pooled README's command names."""
    text = (REPO / "reports/2026-12-05-e2e-h200-pooled/8-layers/README.md").read_text()
    command = next(line for line in text.splitlines() if line.startswith("Command: "))
    files = [REPO / w for w in command.strip("`").split() if w.startswith("reports/") and "/call" in w]
    runs, _ = load_runs(files)
    (s,) = [
        x
        for x in pool(runs)
        if x["setup"]["workload"] == "prefill"
        and x["setup"]["settings"]["aten_margin"] == 2.0
        and x["setup"]["settings"]["warmup_s"] == warmup_s
        and x["setup"]["settings"]["compile_budget"] == compile_budget
    ]
    return s


def test_on_the_h200_prefill_the_run_effects_fit_puts_verify_over_default():
    """Every H200 8-layer prefill run at the default aten margin, warm-up-free (the
    2026-12-03 to 2026-12-04 runs): with one term per run, verify's graph replay is ~0.18 ms over
    DEFAULT's, more than three standard errors, and predict's is not (reports/2026-12-04-memory-release-warm-up s2)."""
    s = _h200_prefill_pool(warmup_s=0.0)
    gpu = s["effects"]["gpu"]
    assert gpu["baseline"] == "default" and gpu["runs"] == 10
    terms = {e["variant"]: e for e in gpu["effects"]}
    assert 0.1 < terms["kselect-verify"]["diff"] < 0.3 and terms["kselect-verify"]["t"] > 3
    assert abs(terms["kselect-predict"]["t"]) < 2


@pytest.mark.parametrize("compile_budget", [0.0, 1.5])
def test_on_the_h200_prefill_after_a_warm_up_verify_meets_its_step_target(compile_budget):
    """The rule fixed before the 2026-12-04 steady-state prefill run: after 10 s of warm-up verify's eager
    step is <= DEFAULT's by pooled medians and runs combined, and its GPU-only step is not
    slower in a significant share of pairs. Twice: without the compile price
    (reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait s2) and with it (reports/2026-12-05-decode-compile-test-prefill-steady-state s3)."""
    s = _h200_prefill_pool(warmup_s=10.0, compile_budget=compile_budget)
    pooled = {c["comparison"]: c for c in s["comparisons"]}
    assert pooled["verify step / DEFAULT's"]["ratio"] <= 1.0
    per_run = {c["comparison"]: c for c in s["per_run"]}  # one run: the pooled comparison is its own
    assert per_run.get("verify step / DEFAULT's", pooled["verify step / DEFAULT's"])["ratio"] <= 1.0
    pairs = {c["comparison"]: c for c in s["pairs"]}["verify GPU-only step / DEFAULT's"]
    assert pairs["n"] >= 4 and pairs["p_sign"] > 0.05


def test_on_the_h200_one_layer_decode_the_warm_start_meets_the_compile_target():
    """The rules fixed before the 2026-12-05 warm-start runs (reports/device/rules.md, 2026-12-05,
    "The warm start on the one-layer decode compile"):
    verify's compile (+ load) is <= 1.25x plain's in each run of the warm-start setup and by
    the pooled median, and the warm start stays the default because verify compiled faster
    than verify-cold-start in at least 3 of the 4 pairs of the first run
    (reports/2026-12-05-decode-compile-warm-start s2). The older runs, without the setting, are another setup."""
    files = [REPO / f"reports/2026-12-05-decode-compile-warm-start/call{i}/d/decode1" for i in (1, 2, 3)]
    older = REPO / "reports/2026-12-05-decode-compile-test-prefill-steady-state/call1/d/decode1"
    if not all(f.exists() for f in (*files, older)):
        pytest.skip("the H200 reports are not in this checkout")
    runs, _ = load_runs([*files, older])
    setups = pool(runs)
    assert sorted(st["setup"]["settings"]["warm_start"] for st in setups) == [False, True]
    (s,) = [st for st in setups if st["setup"]["settings"]["warm_start"]]
    pooled = {c["comparison"]: c for c in s["comparisons"]}
    assert pooled["verify compile / plain's"]["n"] == [11, 11]
    assert pooled["verify compile / plain's"]["ratio"] <= 1.25
    per_run = {c["comparison"]: c for c in s["per_run"]}["verify compile / plain's"]
    assert len(per_run["runs"]) == 3 and all(r["ratio"] <= 1.25 for r in per_run["runs"])
    first = [r for r in runs if r["source"].startswith(str(files[0])) and r["variant"] != "plain"]
    by_round = {}
    for r in first:
        by_round.setdefault(r["repeat"], {})[r["variant"]] = r["compile_s"] + r.get("kselect_load_s", 0)
    faster = sum(v["kselect-verify"] < v["kselect-verify-cold-start"] for v in by_round.values())
    assert len(by_round) == 4 and faster >= 3


# Each experiment's variant (bench e2e's opt-in verify variants): the processes of one run, the
# comparisons it adds with their ratios, and a phrase of its target's detail (judged as verify's).
EXPERIMENTS = {
    # the memory experiment: verify (memory freed) against verify-keep, verify-keep against predict
    "kselect-verify-keep": (
        [("kselect-verify", 10.0, 3.00), ("kselect-verify-keep", 10.0, 3.06), ("kselect-predict", 9.0, 3.00)],
        {"verify GPU-only step / verify-keep's": 3.00 / 3.06, "verify-keep GPU-only step / predict's": 3.06 / 3.00},
        None,
    ),
    # the wake experiment: the GPU idle while verify's templates compile
    "kselect-verify-cool": (
        [
            ("default", 30.0, 6.04),
            ("kselect-verify", 10.0, 6.04),
            ("kselect-verify-cool", 10.1, 6.00),
            ("kselect-predict", 9.0, 6.00),
        ],
        {"verify-cool GPU-only step / predict's": 1.0, "verify GPU-only step / verify-cool's": 6.04 / 6.00},
        "step 0.993x default",
    ),
    # the compile-wait experiment: verify's templates compiled in Inductor's warmed workers
    "kselect-verify-workers": (
        [("plain", 4.0, 0.60), ("kselect-verify", 5.0, 0.59), ("kselect-verify-workers", 4.6, 0.59)],
        {"verify-workers compile / verify's": 4.6 / 5.0, "verify-workers compile / plain's": 4.6 / 4.0},
        "compile 1.15x plain",
    ),
    # the compile-price experiment: verify keeping its slow-to-compile templates
    "kselect-verify-unpriced": (
        [("plain", 4.0, 0.60), ("kselect-verify", 4.6, 0.59), ("kselect-verify-unpriced", 5.2, 0.59)],
        {
            "verify compile / verify-unpriced's": 4.6 / 5.2,
            "verify-unpriced compile / plain's": 5.2 / 4.0,
            "verify GPU-only step / verify-unpriced's": 1.0,
        },
        "compile 1.30x plain",
    ),
    # the warm-start experiment: verify whose compile prepares Triton itself and meets cold workers
    "kselect-verify-cold-start": (
        [("plain", 4.0, 0.60), ("kselect-verify", 4.6, 0.59), ("kselect-verify-cold-start", 5.5, 0.59)],
        {"verify compile / verify-cold-start's": 4.6 / 5.5, "verify-cold-start compile / plain's": 5.5 / 4.0},
        "compile 1.38x plain",
    ),
}


@pytest.mark.parametrize("variant", list(EXPERIMENTS))
def test_each_experiment_pools_with_its_own_comparisons(tmp_path, variant):
    runs_given, ratios, detail = EXPERIMENTS[variant]
    a = _write(tmp_path / "a", [_run(*r) for r in runs_given])
    runs, _ = load_runs([a])
    (s,) = pool(runs)
    got = {c["comparison"]: c["ratio"] for c in s["comparisons"]}
    for comparison, ratio in ratios.items():
        assert got[comparison] == pytest.approx(ratio), comparison
    if detail:
        (target,) = [t for t in s["targets"] if t["variant"] == variant]
        assert target["target"].startswith("step <= default's") and detail in target["detail"], target


def test_the_gpu_state_and_the_replay_gap_are_pooled_per_variant(tmp_path):
    """Processes that recorded the GPU's state: medians per variant and moment, rendered beside
    the GPU-only step and the replay time outside kernels; a reading NVML did not give stays
    out of its median, and a setup without any such record gets no table."""

    def run(variant, graph_ms, kernels_ms, reserved, clock, temp, power=None, during=None):
        r = _run(variant, 3.0, 1.0)
        state = {"reserved_gb": reserved, "allocated_gb": 1.0, "sm_clock_mhz": clock, "temperature_c": temp}
        if power is not None:
            state["power_mw"] = power
        sampled = {"during_replays": during} if during else {}
        r.update(
            {
                "graph_step_ms": graph_ms,
                "device_state": {"before_steps": state, **sampled, "after_replays": state},
                "graph_kernel_time": {
                    "source": "GPU kernels",
                    "steps": 5,
                    "kernels": {},
                    "ms_per_step": {"gemm": kernels_ms, "total": kernels_ms},
                },
            }
        )
        return r

    a = _write(
        tmp_path / "a",
        [
            run("default", 47.3, 45.5, 30.0, 1980, 40, 600e3),
            run("kselect-verify", 47.8, 45.4, 20.0, 1755, 35, 500e3),
            run("default", 47.5, 45.5, 34.0, 1980, 42),
            run(
                "kselect-verify",
                47.6,
                45.6,
                22.0,
                1785,
                37,
                520e3,
                during={
                    "samples": 90,
                    "sm_clock_mhz": 1485,
                    "sm_clock_mhz_min": 1410,
                    "sm_clock_mhz_max": 1980,
                    "power_mw": 695e3,
                    "temperature_c": 55,
                    "energy_j": 660.0,
                    "window_ms": 956.0,
                    "energy_mj_per_step": 33000.0,
                    "counter_power_mw": 690e3,
                },
            ),
        ],
    )
    runs, _ = load_runs([a])
    (s,) = pool(runs)
    verify = next(v for v in s["variants"] if v["variant"] == "kselect-verify")
    assert verify["device_state"]["before_steps"]["sm_clock_mhz"] == 1770
    assert verify["device_state"]["after_replays"]["power_mw"] == 510e3
    default = next(v for v in s["variants"] if v["variant"] == "default")
    assert default["device_state"]["after_replays"]["power_mw"] == 600e3  # the one that had it
    assert default["graph_gap_ms"] == pytest.approx(1.9)  # median of 1.8, 2.0
    text = render({"command": "c", "sources": [str(a)], "skipped": [], "setups": [s]})
    assert verify["device_state"]["during_replays"] == {
        "sm_clock_mhz": 1485,
        "temperature_c": 55,
        "power_mw": 695e3,
        "energy_mj_per_step": 33000.0,
    }
    assert "| kselect-verify | 47.700 | 2.200 | 21.00 | 1770 / 1485 / 1770 | 36 / 36 | 695 / 510 | 33.00 |" in text
    assert "| default | 47.400 | 1.900 | 32.00 | 1980 / - / 1980 | 41 / 41 | - / 600 | - |" in text
    # a --warmup-s run also read the state once warm: the clock and temperature show it
    warm = _write(
        tmp_path / "w",
        [run("kselect-verify", 47.6, 45.6, 22.0, 1785, 37, 520e3, during={"sm_clock_mhz": 1485, "power_mw": 690e3})],
        warmup_s=10.0,
    )
    runs, _ = load_runs([warm])
    runs[0]["device_state"]["after_warmup"] = {"sm_clock_mhz": 1500, "temperature_c": 58}
    (ws,) = pool(runs)
    wtext = render({"command": "c", "sources": [str(warm)], "skipped": [], "setups": [ws]})
    assert "SM MHz, before / warm / during / after" in wtext
    assert "| kselect-verify | 47.600 | 2.000 | 22.00 | 1785 / 1500 / 1485 / 1785 | 37 / 58 / 37 |" in wtext
    # entry-to-exit joules only (reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode) are off by up to a counter step:
    # no energy per step from them
    older = {"during_replays": {"sm_clock_mhz": 1500, "energy_j": 600.0, "energy_mj_per_step": 30000.0}}
    assert device_state_medians([{"device_state": older}]) == {"during_replays": {"sm_clock_mhz": 1500}}
    b = _write(tmp_path / "b", [_run("plain", 3.0, 1.0)])
    runs, _ = load_runs([b])
    (s,) = pool(runs)
    assert "what may move it" not in render({"command": "c", "sources": [str(b)], "skipped": [], "setups": [s]})


def test_replay_kernel_sequences_show_where_a_gap_sits_around_the_swapped_gemm(tmp_path):
    """Verify and predict processes whose replays ran one kernel sequence but lm_head's kernel:
    the medians per position are compared -- the whole kernel gap, its part before, at and
    after the swap, and the positions that moved most; a process whose sequence has other
    kernels stays out of its variant's median, and runs without sequences get no table."""

    def run(variant, step_ms, head, head_us, after_us):
        r = _run(variant, 3.0, step_ms * 1.01)
        r["graph_step_ms"] = step_ms
        r["graph_kernel_time"] = {
            "source": "GPU kernels",
            "steps": 5,
            "kernels": {},
            "ms_per_step": {"total": 1.0},
            "sequence": [["embed", 5.0], ["nvjet_qkv", 100.0], [head, head_us], ["triton_red_next", after_us]],
        }
        return r

    other = run("kselect-verify", 48.9, "triton_tem_head", 24.0, 99.0)
    other["graph_kernel_time"]["sequence"].append(["extra", 1.0])
    a = _write(
        tmp_path / "a",
        [
            run("kselect-verify", 48.3, "triton_tem_head", 24.0, 12.0),
            run("kselect-predict", 48.0, "nvjet_head", 25.0, 7.0),
            run("kselect-verify", 48.2, "triton_tem_head", 24.4, 10.0),
            run("kselect-predict", 47.9, "nvjet_head", 25.2, 8.0),
            other,
        ],
    )
    runs, _ = load_runs([a])
    (s,) = pool(runs)
    (gap,) = s["sequence_gaps"]  # no DEFAULT in this run: one pair
    assert (gap["variant"], gap["baseline"], gap["processes"]) == ("kselect-verify", "kselect-predict", [2, 2])
    assert gap["first_swap"] == 2 and gap["swap_us"] == pytest.approx(24.2 - 25.1)
    assert gap["after_swap_us"] == pytest.approx(11.0 - 7.5) and gap["before_swap_us"] == 0
    assert gap["gpu_step_diff_us"] == pytest.approx(350.0)  # medians over all processes: 48.3 - 47.95 ms
    text = render({"command": "c", "sources": [str(a)], "skipped": [], "setups": [s]})
    assert (
        "| kselect-verify vs kselect-predict | 2 vs 2 | 4 | +350.0 | +2.6 | +0.0 | -0.9 (1 vs 1 kernels) | +3.5 "
        "| #3 triton_red_next +3.5"
    ) in text
    longer = run("default", 48.0, "triton_tem_head", 24.0, 7.0)
    longer["graph_kernel_time"]["sequence"].insert(0, ["triton_poi_extra", 3.0])
    c = _write(tmp_path / "c", [run("kselect-verify", 48.3, "triton_tem_head", 24.0, 12.0), longer])
    runs, _ = load_runs([c])
    (s,) = pool(runs)
    (gap,) = s["sequence_gaps"]  # another kernel count: lined up from both ends
    assert gap["positions"] == [4, 5] and gap["swap_kernels"] == [0, 1] and gap["total_us"] == pytest.approx(2.0)
    assert (
        "| kselect-verify vs default | 1 vs 1 | 4 vs 5 | +300.0 | +2.0 | +0.0 | -3.0 (0 vs 1 kernels) | +5.0 |"
        in render({"command": "c", "sources": [str(c)], "skipped": [], "setups": [s]})
    )
    b = _write(tmp_path / "b", [_run("kselect-verify", 3.0, 1.0), _run("kselect-predict", 3.0, 1.0)])
    runs, _ = load_runs([b])
    (s,) = pool(runs)
    assert s["sequence_gaps"] == [] and "position by position" not in render(
        {"command": "c", "sources": [str(b)], "skipped": [], "setups": [s]}
    )
