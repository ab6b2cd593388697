"""The oracle measures: which shapes have their whole space, by M class, and how far the best of
the sampled subset falls short of the best of the whole space."""

import pandas as pd

from kselect.kernels import Problem
from kselect.kernels.candidate_list import candidate_list
from kselect.training.data.oracle import mark_oracle, oracle_shapes_by_class, sample_gap, shape_class
from kselect.training.data.rows import row_for


def _shape_rows(problem, time_of):
    cands = candidate_list(problem, ["aten", "triton"], "exhaustive", 0)
    return [row_for(problem, c, status="ok", time_ms=time_of(c)) for c in cands], cands


def test_shape_class_bounds():
    assert [shape_class(m) for m in (1, 16, 17, 256, 257)] == ["m<=16", "m<=16", "16<m<=256", "16<m<=256", "m>256"]


def test_sample_gap_is_the_best_sampled_over_the_best_overall():
    problem = Problem(64, 4096, 4096, "bf16", "nt")
    sample = {c.key for c in candidate_list(problem, ["aten", "triton"], "sample", 200)}
    full = candidate_list(problem, ["aten", "triton"], "exhaustive", 0)
    outside = next(c.key for c in full if c.key not in sample)
    # every sampled candidate 1.25 ms, one of them 1.1; the one best candidate outside the sample 1.0
    best_sampled = sorted(sample)[0]
    rows, _ = _shape_rows(problem, lambda c: 1.0 if c.key == outside else 1.1 if c.key == best_sampled else 1.25)
    # a second, partial shape is no oracle shape and is left out
    partial = Problem(512, 4096, 4096, "bf16", "nt")
    rows += [
        row_for(partial, c, status="ok", time_ms=1.0)
        for c in candidate_list(partial, ["aten", "triton"], "sample", 200)
    ]
    df = mark_oracle(pd.DataFrame(rows))
    assert oracle_shapes_by_class(df) == {"m<=16": 0, "16<m<=256": 1, "m>256": 0}
    gap = sample_gap(df)
    assert gap["all"]["shapes"] == 1
    assert abs(gap["by_class"]["16<m<=256"]["max"] - 0.1) < 1e-9
    assert gap["by_class"]["m>256"] == {"shapes": 0}
    assert gap["worst"][0]["problem_key"] == problem.key
