"""`kselect bench gemm` end to end on the CPU: real compiles in fresh processes, real timings.

On the CPU, max-autotune does not tune a plain (unfrozen) mm and the shipped model refuses the
device, so kselect falls back to stock; what this checks is the pipeline: every variant runs in
its own process, each shape yields a correct compiled result, a time and a report. The numbers
that matter come from the GPU (reports/2026-12-02-bench-gemm-h200).
"""

from __future__ import annotations

import json

import pytest

from kselect.training.bench import gemm_summary, gemm_variants
from kselect.training.cli.main import main


def _bench_gemm_on_the_cpu(shapes, out, variants: str, *options: str) -> int:
    """`kselect bench gemm --json` of `variants` over the shapes file `shapes` on the CPU."""
    argv = ["bench", "gemm", "--shapes-file", str(shapes), "--device", "cpu", "--variants", variants, *options]
    return main([*argv, "--out", str(out), "--json"])


FP8_ROWWISE = "scaled_mm:24x64x128:fp8e4m3:nt:rowwise:bf16"
TF32 = "mm:16x32x48:tf32:nt"


@pytest.mark.slow
def test_bench_gemm_cpu_end_to_end(tmp_path):
    """Two fp32 mms, a TF32 one (compiled and timed under torch's TF32 setting, as a user's
    `set_float32_matmul_precision("high")` runs it) and an fp8 rowwise `_scaled_mm` (compiled as
    `torch._scaled_mm` with its scales, as the fp8 unseen bench runs them)."""
    shapes = tmp_path / "shapes.csv"
    shapes.write_text(
        "M,N,K,op,dtype,layout,batch,model,out_dtype,scaling,fast_accum\n32,48,64,mm,fp32,nt,1,,,,\n"
        "17,40,96,mm,fp32,nn,1,,,,\n16,32,48,mm,tf32,nt,1,,,,\n24,64,128,scaled_mm,fp8e4m3,nt,1,,bf16,rowwise,False\n"
    )
    out = tmp_path / "report"
    rc = _bench_gemm_on_the_cpu(shapes, out, "plain,default,kselect-predict")
    assert rc == 0
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert {(r["variant"], r["problem"]) for r in rows} == {
        (v, p)
        for v in ("plain", "default", "kselect-predict")
        for p in ("mm:32x48x64:fp32:nt", "mm:17x40x96:fp32:nn", TF32, FP8_ROWWISE)
    }
    # the math torch's matmul setting gave each fp32 GEMM while it compiled and ran
    assert {r["problem"]: r.get("fp32_math") for r in rows if r["variant"] == "plain"} == {
        "mm:32x48x64:fp32:nt": "fp32",
        "mm:17x40x96:fp32:nn": "fp32",
        TF32: "tf32",
        FP8_ROWWISE: None,
    }
    for r in rows:
        assert "error" not in r, r
        assert r["correct"] and r["rel_error"] < 1e-4
        assert r["kernel_ms"] > 0 and r["compile_s"] > 0
        # the worker waited for the compile pool before its first shape (None: no pool here)
        assert r["compile_pool_s"] is None or r["compile_pool_s"] >= 0
    summary = json.loads((out / "summary.json").read_text())["summary"]
    assert summary["variants"]["plain"]["shapes"] == 4
    assert summary["kernel_time_ratio"]["kselect-predict/default"]["shapes"] == 4
    readme = (out / "README.md").read_text()
    assert "kselect bench gemm" in readme and "mm:17x40x96:fp32:nn" in readme
    from kselect.training.measure.provenance import code_digest

    assert f"kselect code {code_digest()};" in readme


def test_bench_gemm_rejects_unknown_variant():
    with pytest.raises(gemm_variants.BenchError, match="unknown variant"):
        gemm_variants.parse_variants("plain,fastest")


def test_summary_ratios_are_exact_on_a_known_case():
    def row(v, p, ms, cs):
        return {"variant": v, "problem": p, "kernel_ms": ms, "compile_s": cs, "correct": True, "benchmarked": 0}

    rows = [
        row("plain", "a", 1.0, 1.0),
        row("plain", "b", 1.0, 1.0),
        row("default", "a", 2.0, 5.0),
        row("default", "b", 8.0, 9.0),
        row("kselect-verify", "a", 1.0, 2.0),
        row("kselect-verify", "b", 2.0, 3.0),
        dict(row("exhaustive", "a", 1.0, 101.0)),
    ]
    s = gemm_summary.summarize(rows)
    # kernel verify/default: geomean(1/2, 2/8) = sqrt(1/8)
    assert s["kernel_time_ratio"]["kselect-verify/default"]["geomean"] == pytest.approx(8**-0.5)
    # tuning = compile - plain: verify (1, 2) vs default (4, 8) -> geomean(1/4, 2/8) = 1/4
    assert s["tuning_time_ratio"]["kselect-verify/default"]["geomean"] == pytest.approx(0.25)
    assert s["tuning_time_ratio"]["kselect-verify/exhaustive"] == {"shapes": 1, "geomean": pytest.approx(0.01)}
    assert s["targets"]["verify tuning <= 1/3 of DEFAULT's"][1] is True
    assert s["targets"]["verify kernel within 1% of EXHAUSTIVE (geomean ratio <= 1.01)"][1] is True
    # decision time per GEMM: one decision per row here; median and max over the shapes
    pre = [
        dict(
            row("kselect-predict", p, 1.0, 1.5),
            decisions=n,
            decision_ms=ms,
            setup_ms=setup,
            decision_phases_ms={"map": ms / 4, "rank": ms / 2},
        )
        for p, n, ms, setup in (("a", 1, 4.0, 61.0), ("b", 2, 12.0, 0.5), ("c", 1, 3.0, 20.0))
    ]
    d = gemm_summary.summarize(rows + pre)["variants"]["kselect-predict"]
    assert d["decision_ms_median"] == 4.0 and d["decision_ms_max"] == 6.0
    # the set-up before a shape's decisions (load, warm-up for its graph) is per shape, apart
    assert d["setup_ms_median"] == 20.0 and d["setup_ms_max"] == 61.0
    # phases per decision, median over GEMMs: map (1, 1.5, 0.75) -> 1; rank (2, 3, 1.5) -> 2
    assert d["decision_phases_ms_median"] == {"map": 1.0, "rank": 2.0}


def test_ranker_preflight_names_why_kselect_cannot_rank_here(tmp_path):
    """The benches' check before timing kselect variants (on the GPU it returns the ranker's
    ident): the shipped model is per GPU, a given model ranks only the GPU it was trained on,
    and a broken file is refused with its reason -- three different messages."""
    from pathlib import Path

    torch = pytest.importorskip("torch")
    from kselect.selector.decide.rankers import RankerUnavailable
    from kselect.training.bench.common import ranker_ident

    cpu = torch.device("cpu")
    with pytest.raises(RankerUnavailable, match="no cost model for cpu devices"):
        ranker_ident(cpu)
    shipped = Path(__file__).parents[2] / "models" / "h200-bf16.json"
    with pytest.raises(RankerUnavailable, match="only ranks the GPU it was trained on"):
        ranker_ident(cpu, str(shipped))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(RankerUnavailable, match="cannot use cost model"):
        ranker_ident(cpu, str(broken))


def test_repeated_shapes_count_once_at_their_medians():
    """Several processes of one variant (--repeats, or pooled runs): a shape's numbers are its
    medians, its pick the most frequent; an error stands only where nothing was measured."""

    def row(v, p, ms, cs, chosen="aten:mm", **extra):
        return {
            "variant": v,
            "problem": p,
            "kernel_ms": ms,
            "compile_s": cs,
            "correct": True,
            "benchmarked": 20,
            "chosen": chosen,
            **extra,
        }

    rows = [
        row("plain", "a", 1.0, 0.1),
        row("plain", "b", 2.0, 0.1),
        row("default", "a", 1.5, 10.0, "triton:mm:X"),
        row("default", "a", 1.0, 12.0),
        row("default", "a", 1.1, 11.0),
        {"variant": "default", "problem": "a", "error": "killed"},
        row("default", "b", 2.0, 9.0),
        {"variant": "default", "problem": "c", "error": "killed"},
        row("kselect-verify", "a", 1.0, 0.2, decisions=1, decision_ms=3.0, decision_phases_ms={"trees": 2.0}),
        row(
            "kselect-verify", "a", 1.0, 0.4, decisions=1, decision_ms=5.0, decision_phases_ms={"trees": 4.0, "map": 1.0}
        ),
        row("kselect-verify", "b", 1.6, 0.2),
    ]
    combined = {(r["variant"], r["problem"]): r for r in gemm_summary.combine_repeats(rows)}
    assert set(combined) == {
        ("plain", "a"),
        ("plain", "b"),
        ("default", "a"),
        ("default", "b"),
        ("default", "c"),
        ("kselect-verify", "a"),
        ("kselect-verify", "b"),
    }
    d = combined[("default", "a")]
    assert d["repeats"] == 3 and d["kernel_ms"] == 1.1 and d["compile_s"] == 11.0
    assert d["kernel_ms_samples"] == [1.5, 1.0, 1.1] and d["chosen"] == "aten:mm"
    assert d["chosen_all"] == ["triton:mm:X", "aten:mm", "aten:mm"]
    assert "error" in combined[("default", "c")] and "repeats" not in combined[("default", "b")]
    v = combined[("kselect-verify", "a")]
    assert v["decision_ms"] == 4.0 and v["decision_phases_ms"] == {"map": 0.5, "trees": 3.0}
    s = gemm_summary.summarize(rows)
    # verify/default on medians: geomean(1.0/1.1, 1.6/2.0)
    assert s["kernel_time_ratio"]["kselect-verify/default"]["geomean"] == pytest.approx((1 / 1.1 * 0.8) ** 0.5)
    assert s["variants"]["default"]["shapes"] == 2


@pytest.mark.slow
def test_bench_gemm_repeats_run_each_variant_in_as_many_processes(tmp_path):
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("M,N,K,op,dtype,layout\n32,48,64,mm,fp32,nt\n")
    out = tmp_path / "report"
    assert _bench_gemm_on_the_cpu(shapes, out, "plain", "--repeats", "2") == 0
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["variant"], r["repeat"]) for r in rows] == [("plain", 0), ("plain", 1)]
    assert all(r["kernel_ms"] > 0 and r["correct"] for r in rows)
    assert "(median of 2)" in (out / "README.md").read_text()


def _gemm_run(folder, rows, device_name="NVIDIA H200"):
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "summary.json").write_text(
        json.dumps(
            {
                "summary": {},
                "environment": {"torch": "2.11.0", "triton": "3.6.0", "device": "cuda", "device_name": device_name},
            }
        )
    )
    return folder


def test_gemm_pool_reports_each_shape_at_its_median_over_runs(tmp_path, capsys):
    def row(v, p, ms, cs):
        return {"variant": v, "problem": p, "kernel_ms": ms, "compile_s": cs, "correct": True, "benchmarked": 20}

    a = _gemm_run(
        tmp_path / "a",
        [row("plain", "a", 1.0, 0.1), row("default", "a", 1.3, 10.0), row("kselect-verify", "a", 1.0, 0.2)],
    )
    b = _gemm_run(tmp_path / "b", [row("default", "a", 1.1, 11.0)])
    c = _gemm_run(tmp_path / "c", [row("default", "a", 1.0, 9.0)])
    assert main(["bench", "gemm-pool", str(a), str(b / "results.jsonl"), str(c), "--out", str(tmp_path / "o")]) == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())["summary"]
    assert summary["kernel_time_ratio"]["kselect-verify/default"]["geomean"] == pytest.approx(1 / 1.1)
    text = (tmp_path / "o" / "README.md").read_text()
    assert "| a | 1.0000 / 0.1 / 20 | 1.0000 / 0.2 / 20 | 1.1000 / 10.0 / 20 (median of 3) |" in text
    assert f"- `{b / 'results.jsonl'}`" in text and "kselect code not recorded (3 runs)" in text
    other = _gemm_run(tmp_path / "d", [row("default", "a", 1.0, 9.0)], device_name="NVIDIA A100")
    assert main(["bench", "gemm-pool", str(a), str(other), "--out", str(tmp_path / "o2")]) == 2
    assert "measured elsewhere" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"variant": "plain"}\n')
    assert main(["bench", "gemm-pool", str(bad), "--out", str(tmp_path / "o3")]) == 2
    assert "not a `kselect bench gemm` row" in capsys.readouterr().err
