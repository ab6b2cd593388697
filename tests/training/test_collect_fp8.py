"""fp8 `_scaled_mm` through the collector on the CPU: every candidate's output checked against
ATen's own `_scaled_mm` (which runs here), a wrong candidate recorded as `wrong_result` with its
error, and no wrong row reaching the best-per-shape that labels, the oracle and picks read.

The collector's worker runs in this process (its real code: operands, ATen's reference, the
check, the rows, the part files); the only stand-in is the second backend's kernels, CPU
computations of the scaled product, two of them wrong in the ways fp8 kernels go wrong: a
rowwise scale applied as one scalar, and a K tile left out."""

import json
import math

import pandas as pd
import pytest

from kselect.kernels.backend import Availability, Backend, register_backend
from kselect.kernels.candidate import Candidate
from kselect.kernels.operands import TOLERANCE
from kselect.kernels.problem import Problem
from kselect.training.data.dataset import DatasetDir, row_problem
from kselect.training.learn.ranking_metrics import ShapeSet
from kselect.training.measure.collect_plan import CollectPlan
from kselect.training.measure.collect_worker import run_worker

torch = pytest.importorskip("torch")

BACKEND = "fp8_cpu_variants"


@register_backend(BACKEND)
class Fp8CpuVariants(Backend):
    """The scaled product computed on the CPU three ways: right, one scale, a K tile short."""

    templates = ("dequant", "one_scale", "short_k")

    def availability(self, device="cpu"):
        return Availability(True)

    def candidates(self, problem, search_space="exhaustive"):
        return [Candidate.make(BACKEND, t) for t in self.templates]

    def compile(self, candidate, problem):
        return candidate.template

    def runner(self, how, ops):
        def run():
            a, b = ops.a.float(), ops.b.float()
            sa, sb = ops.scale_a, ops.scale_b
            if how == "one_scale":  # a rowwise scale read as one scalar: right only for tensorwise
                sa = sa.mean()
            if how == "short_k":
                a, b = a[:, :-32], b[:-32]
            return ops.out.copy_(((a @ b) * sa * sb).to(ops.out.dtype))

        return run


ROWWISE = Problem(48, 96, 256, "fp8e4m3", "nt", "scaled_mm", model="t", scaling="rowwise")
TENSORWISE = Problem(40, 64, 192, "fp8e4m3", "nt", "scaled_mm", model="t", out_dtype="fp32", scaling="tensorwise")


@pytest.fixture(scope="module")
def fp8_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("fp8")
    plan = CollectPlan(
        out=str(out),
        problems=[ROWWISE.to_dict(), TENSORWISE.to_dict()],
        backends=["aten", BACKEND],
        space="default",
        device="cpu",
        target_ms=0.02,
    )
    assert run_worker(plan) == 0
    return out


@pytest.fixture(scope="module")
def rows(fp8_dir):
    return DatasetDir(fp8_dir).load().set_index(["problem_key", "candidate_key"])


def test_wrong_candidates_are_recorded_wrong_against_aten(rows):
    status = rows["status"].to_dict()
    key = f"{BACKEND}:"
    assert status[(ROWWISE.key, "aten:scaled_mm")] == "ok"
    assert status[(ROWWISE.key, key + "dequant")] == "ok"
    assert status[(ROWWISE.key, key + "one_scale")] == "wrong_result"
    assert status[(ROWWISE.key, key + "short_k")] == "wrong_result"
    assert status[(TENSORWISE.key, key + "one_scale")] == "ok"  # one scale is right for tensorwise
    assert status[(TENSORWISE.key, key + "short_k")] == "wrong_result"
    wrong = rows[rows["status"] == "wrong_result"]
    assert (wrong["rel_error"] > TOLERANCE["fp8e4m3"]).all() and wrong["time_ms"].isna().all()
    assert wrong["error"].str.contains("against ATen's output").all()
    ok = rows[rows["status"] == "ok"]
    assert (ok["rel_error"] <= TOLERANCE["fp8e4m3"]).all() and (ok["time_ms"] > 0).all()


def test_rows_carry_the_scaled_problem(rows):
    flat = rows.reset_index()
    for problem in (ROWWISE, TENSORWISE):
        sub = flat[flat["problem_key"] == problem.key]
        assert len(sub) == 4
        assert {row_problem(r) for _, r in sub.iterrows()} == {problem}


def test_no_wrong_row_reaches_the_best_per_shape(rows):
    """Labels, the oracle's best and every pick read ShapeSet: wrong rows are infinitely slow."""
    flat = rows.reset_index()
    shapes = ShapeSet.from_frame(flat, default_keys=lambda row: set())  # no DEFAULT-list reading here
    wrong = (shapes.rows["status"] == "wrong_result").to_numpy()
    assert wrong.sum() == 3 and math.isinf(shapes.time[wrong].min())
    ok_best = flat[flat["status"] == "ok"].groupby("problem_key")["time_ms"].min()
    assert shapes.best.tolist() == pd.Series(ok_best).reindex(shapes.keys).tolist()


def test_the_headroom_before_any_model_reads_each_scaling_apart_and_counts_wrong_rows(fp8_dir, capsys):
    """`kselect dataset headroom` on the collected rows. Catches: the two scalings pooled into one
    kind, a wrong row's time taken as the best, ATen's time read from another candidate, a
    wrong row missing from the per-template count."""
    from kselect.training.cli.main import main

    assert main(["dataset", "headroom", str(fp8_dir), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    flat = DatasetDir(fp8_dir).load()
    for problem in (ROWWISE, TENSORWISE):
        kind = got["kinds"][f"scaled_mm:{problem.scaling} fp8e4m3"]
        ok = flat[(flat["problem_key"] == problem.key) & (flat["status"] == "ok")]
        aten = ok[ok["backend"] == "aten"]["time_ms"].min()
        assert kind["all"]["shapes"] == 1 and kind["classes"]["16<M<=256"]["shapes"] == 1
        assert kind["all"]["best_over_aten_geomean"] == pytest.approx(ok["time_ms"].min() / aten)
    assert len(got["kinds"]) == 2 and got["no_aten"] == 0
    assert got["wrong"]["rows"] == 3
    assert got["wrong"]["per_template"] == {f"{BACKEND}:one_scale": 1, f"{BACKEND}:short_k": 2}
    assert {w["problem_key"] for w in got["wrong"]["listed"] if w["template"] == f"{BACKEND}:one_scale"} == {
        ROWWISE.key
    }
