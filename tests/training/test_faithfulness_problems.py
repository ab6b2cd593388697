"""What `kselect faithfulness` measures, read on the CPU: the problems a shapes file's sample
takes, and the candidates each problem's check spreads over (the timing itself needs a GPU:
reports/2026-12-05-faithful-kernels)."""

from __future__ import annotations

from pathlib import Path

from kselect.kernels.problem import Problem
from kselect.training.measure.faithfulness import bf16_problems, pick_candidates, spread_sample
from kselect.training.workloads.shapes import read_shapes_csv

FP8_SHAPES = Path(__file__).resolve().parents[2] / "data" / "shapes" / "fp8.csv"


def test_a_sample_of_the_fp8_shapes_spans_both_scalings_and_decode_to_prefill():
    """Catches: a sample taken from the file's head (one model, one M, one scaling), or one
    that drops the file's last problem."""
    problems = read_shapes_csv(FP8_SHAPES)
    sample = spread_sample(problems, 8)
    assert len(sample) == 8 == len(set(sample))
    assert sample[0] == problems[0] and sample[-1] == problems[-1]
    assert {p.scaling for p in sample} == {"rowwise", "tensorwise"}
    assert min(p.M for p in sample) <= 8 and max(p.M for p in sample) >= 2048
    assert spread_sample(problems, 0) == problems == spread_sample(problems, len(problems) + 5)


def test_a_scaled_mm_is_checked_on_atens_scaled_mm_and_both_scaled_templates():
    """Catches: a bf16 mm's templates (mm, persistent_tma) listed for an fp8 problem, which the
    collector cannot build for it, or ATen's candidate named as a plain mm."""
    problem = Problem(2048, 14336, 4096, "fp8e4m3", "nt", "scaled_mm", scaling="rowwise", out_dtype="bf16")
    cands = pick_candidates(problem, per_template=3, large_per_template=2)
    assert cands[0].key == "aten:scaled_mm"
    by_template = {}
    for c in cands[1:]:
        by_template.setdefault(c.template, []).append(c)
    assert {t: len(cs) for t, cs in by_template.items()} == {"scaled_mm": 5, "scaled_persistent_tma": 5}
    assert len({c.key for c in cands}) == len(cands)


def test_bf16_shapes_keep_their_templates():
    (problem,) = bf16_problems(["4096x4096x4096"])
    assert problem == Problem(4096, 4096, 4096, "bf16", "nt", "mm")
    assert {c.template for c in pick_candidates(problem)} == {"mm", "persistent_tma"}
