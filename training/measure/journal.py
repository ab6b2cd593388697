"""The in-flight journal of a crash-safe worker: the unit (a shape being set up, or a candidate
running) written before it starts and cleared once its row is on disk, so the supervisor knows
what a dead worker was doing (docs/measurement.md, "Crash safety"); and where a worker's plan is
written."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem

log = logging.getLogger(__name__)


def inflight_path(plan) -> Path:
    """Where a crash-safe worker (any plan with `out` and `worker`) records the work in flight."""
    return Path(plan.out) / "inflight" / f"{plan.worker}.json"


def plan_path(plan) -> Path:
    """Where its supervisor writes the plan the worker process reads."""
    return Path(plan.out) / "inflight" / f"{plan.worker}.plan.json"


def write_inflight(path: Path, record: dict) -> None:
    """Replace the in-flight record atomically: a reader sees the old or the new one whole."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)


def read_inflight(path: Path) -> dict | None:
    """The in-flight record, or None when there is none or it cannot be read (a torn or
    foreign file is reported, never fatal: the unit it named is simply measured again)."""
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable in-flight record %s (%s)", path, exc)
        return None
    if not isinstance(record, dict):
        log.warning("ignoring in-flight record %s: not a JSON object", path)
        return None
    return record


def inflight_unit(record: dict | None) -> tuple[Problem, Candidate | None] | None:
    """(problem, candidate or None while the shape is being set up) of a collection's
    in-flight record; None when there is none or it does not name one."""
    if record is None:
        return None
    try:
        problem = Problem.from_dict(record["problem"])
        cand = Candidate.from_json(record["candidate"]) if record.get("candidate") else None
    except Exception as exc:  # noqa: BLE001 -- any malformed record is ignored alike
        log.warning("ignoring in-flight record that names no unit (%s: %s)", type(exc).__name__, exc)
        return None
    return problem, cand
