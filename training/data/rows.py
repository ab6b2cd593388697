"""A collection row: one candidate's measurement of one problem, in the dataset's one schema
(training/data/dataset.py), and the rows of a shape that failed before its first candidate."""

from __future__ import annotations

import json
import time

from kselect.kernels.backend import shared_knobs
from kselect.kernels.candidate import KNOBS, Candidate
from kselect.kernels.problem import Problem

SHAPE_FAILED = "shape failed before its first candidate: "
CANDIDATE_DIED = "worker died while running this candidate"


def row_for(problem: Problem, cand: Candidate, **measured) -> dict:
    row = {
        "problem_key": problem.key,
        "op": problem.op,
        "M": problem.M,
        "N": problem.N,
        "K": problem.K,
        "batch": problem.batch,
        "dtype": problem.dtype,
        "layout": problem.layout,
        "model": problem.model,
        # scaled_mm's fields; other problems (a grouped GEMM's own type too) leave them unset
        "out_dtype": getattr(problem, "out_dtype", ""),
        "scaling": getattr(problem, "scaling", ""),
        "fast_accum": bool(getattr(problem, "fast_accum", False)),
        "candidate_key": cand.key,
        "backend": cand.backend,
        "template": cand.template,
        "params": json.dumps(cand.kwargs, sort_keys=True),
    }
    knobs = shared_knobs(cand)  # e.g. FlyDSL's TILE_M as BLOCK_M, as the features read it
    row.update({k: int(knobs.get(k, 0) or 0) for k in KNOBS})
    row.update(
        {
            "status": "ok",
            "error": "",
            "time_ms": float("nan"),
            "time_min_ms": float("nan"),
            "time_max_ms": float("nan"),
            "spread": float("nan"),
            "noisy": False,
            "reps": 0,
            "method": "",
            "rel_error": float("nan"),
            "compile_s": 0.0,
            "oracle": False,
            "space": "",
            "fingerprint_id": "",
            "worker": "",
            "workload": "",
            "collected_at": time.time(),
        }
    )
    row.update(measured)
    return row


def shape_failure_rows(problem: Problem, cands: list[Candidate], why: str, common: dict) -> list[dict]:
    """One failed row per candidate of a shape that could not be set up, so it is skipped."""
    error = (SHAPE_FAILED + why)[:500]
    return [row_for(problem, c, status="launch_error", error=error, **common) for c in cands]
