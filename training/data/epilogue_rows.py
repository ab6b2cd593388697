"""A dataset's GEMM + epilogue labels (`epilogue_labels.jsonl`), as training rows with their
epilogue, and the epilogue feature block of such rows.

One JSON line per pinned compile (training/measure/epilogue_labels.py's `time_pinned`): {"case"
(the function's name), "problem" (Problem.to_dict of its GEMM), "candidate" ({"backend",
"template", "params"}: the pinned choice), "ms" (the whole function's median time, on a GPU its
GPU time alone; null when it did not run), "step_ms" (timed call by call, the host's launch
overhead in it; absent in records written before it was kept), "kernels", "fused", "epilogue" (Epilogue.as_dict as kselect read it during the
lowering), "error"}. Written on the GPU next to the bare measurements (`append_records`), read by
`kselect train --feature-block epilogue`: each line becomes a dataset row (training/data/dataset.py
COLUMNS) whose time is the whole GEMM + epilogue, plus an `epilogue` column (the epilogue's
JSON). Its problem_key is the GEMM's key + KEY_MARK + a digest of the epilogue, so the candidates
of one GEMM with one epilogue are ranked against each other, never against the bare GEMM's.
Bare rows carry no epilogue (NO_EPILOGUE): a GEMM timed alone has none.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from kselect.kernels.candidate import Candidate
from kselect.kernels.epilogue import NO_EPILOGUE, OP_KINDS, Epilogue
from kselect.kernels.problem import Problem, ProblemError
from kselect.selector.atomic_write import write_text
from kselect.selector.model.feature_blocks import epilogue_block

FILE_NAME = "epilogue_labels.jsonl"
EPILOGUE_COLUMN = "epilogue"  # a row's epilogue as JSON; "" (or no such column): none
KEY_MARK = "+epi:"  # problem_key = the GEMM's key + KEY_MARK + the epilogue's digest
_FIELDS = ("case", "problem", "candidate", "ms", "epilogue")


class EpilogueLabelsError(ValueError):
    """An epilogue_labels.jsonl that cannot be read; the message names the file and line."""


def path_of(data: str | Path) -> Path:
    return Path(data) / FILE_NAME


def record_of(case: str, timing, problem: Problem | None = None) -> dict:
    """One line of the file from an EpilogueTiming (training/measure/epilogue_labels.py); `problem`:
    the case's GEMM, for a compile that failed before kselect saw it."""
    ms = float(timing.ms)
    return {
        "case": case,
        "problem": dict(timing.problem or (problem.to_dict() if problem is not None else {})),
        "candidate": dict(timing.pinned),
        "ms": ms if math.isfinite(ms) else None,
        "step_ms": float(timing.step_ms) if math.isfinite(timing.step_ms) else None,
        "kernels": int(timing.kernels),
        "fused": timing.fused,
        "epilogue": dict(timing.epilogue),
        "error": timing.error,
    }


def append_records(data: str | Path, records: Iterable[dict]) -> Path:
    """The file's lines followed by `records`, replacing it whole (a reader never meets half)."""
    path = path_of(data)
    old = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    lines = [line for line in old if line.strip()] + [json.dumps(r, sort_keys=True) for r in records]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, "\n".join(lines) + "\n")
    return path


def read_records(data: str | Path) -> list[dict]:
    """Every record of DIR/epilogue_labels.jsonl ([] when there is none)."""
    path = path_of(data)
    if not path.exists():
        return []
    records = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise EpilogueLabelsError(f"{path}:{n}: not JSON ({exc})") from None
        missing = [f for f in _FIELDS if not isinstance(rec, dict) or f not in rec]
        if missing:
            raise EpilogueLabelsError(f"{path}:{n}: an epilogue label lacks {missing}")
        records.append(rec)
    return records


def epilogue_of(d: Mapping) -> Epilogue:
    """The Epilogue an `as_dict()` describes; ValueError naming a field it cannot be."""
    known = {"ops", "kinds", "extra_inputs", "extra_bytes", "out_bytes", "gemm_out_bytes"}
    known |= {"gemm_output_escapes", "fusable"}
    unknown = sorted(set(d) - known)
    if unknown:
        raise ValueError(f"unknown epilogue field(s) {unknown}")
    kinds = d.get("kinds") or {}
    if not isinstance(kinds, Mapping) or set(kinds) - set(OP_KINDS):
        raise ValueError(f"epilogue kinds must map {OP_KINDS} to counts, got {kinds!r}")
    return Epilogue(
        ops=tuple(map(str, d.get("ops") or ())),
        kinds=tuple((k, int(kinds[k])) for k in OP_KINDS if k in kinds),
        extra_inputs=int(d.get("extra_inputs") or 0),
        extra_bytes=_bytes(d.get("extra_bytes", 0)),
        out_bytes=_bytes(d.get("out_bytes", 0)),
        gemm_out_bytes=_bytes(d.get("gemm_out_bytes", 0)),
        gemm_output_escapes=bool(d.get("gemm_output_escapes", False)),
        fusable=bool(d.get("fusable", False)),
    )


def _bytes(value) -> int | None:
    return None if value is None else int(value)


def epilogue_json(epilogue: Epilogue) -> str:
    return json.dumps(epilogue.as_dict(), sort_keys=True)


def label_rows(data: str | Path) -> pd.DataFrame:
    """The records of DIR/epilogue_labels.jsonl as dataset rows with their `epilogue` column (one
    row per GEMM + epilogue and candidate: an ok run beats a failure, then the later line)."""
    from kselect.training.data.dataset import COLUMNS, conform, preferred_rows

    path = path_of(data)
    rows = []
    for n, rec in enumerate(read_records(data), start=1):
        if rec.get("error") and not rec["candidate"]:  # never pinned (not among Inductor's choices)
            continue
        try:
            problem = Problem.from_dict(rec["problem"])
            cand = Candidate.from_json(rec["candidate"])
            epilogue = epilogue_of(rec["epilogue"])
        except (ProblemError, ValueError, KeyError, TypeError) as exc:
            raise EpilogueLabelsError(f"{path}: record {n} ({rec.get('case')}): {exc}") from None
        text = epilogue_json(epilogue)
        ms = rec["ms"]
        ok = not rec.get("error") and ms is not None and math.isfinite(float(ms)) and float(ms) > 0
        knobs = cand.kwargs
        rows.append(
            {
                **{k: getattr(problem, k) for k in ("op", "M", "N", "K", "batch", "dtype", "layout", "model")},
                "problem_key": problem.key + KEY_MARK + hashlib.sha256(text.encode()).hexdigest()[:12],
                "workload": str(rec["case"]),
                "candidate_key": cand.key,
                "backend": cand.backend,
                "template": cand.template,
                "params": json.dumps(knobs, sort_keys=True),
                **{k: knobs.get(k, 0) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")},
                **{k: knobs.get(k, 0) for k in ("num_stages", "num_warps", "k_split")},
                "status": "ok" if ok else "compile_error",
                "error": str(rec.get("error") or ("" if ok else "no time")),
                "time_ms": float(ms) if ok else float("nan"),
                "method": "inductor-whole-function",
                "space": "epilogue-pinned",
                "collected_at": float(n),  # the later line wins a tie
                "out_dtype": problem.out_dtype,
                "scaling": problem.scaling,
                "fast_accum": problem.fast_accum,
                EPILOGUE_COLUMN: text,
            }
        )
    if not rows:
        raise EpilogueLabelsError(f"{path}: no epilogue labels (written by training/measure/epilogue_labels.py)")
    frame = pd.DataFrame(rows)
    # a column these rows lack reads as its default (False for a flag)
    flags = {c: False for c, kind in COLUMNS.items() if kind == "bool" and c not in frame}
    rows_ = conform(frame.assign(**flags).reindex(columns=list(COLUMNS)))
    return preferred_rows(rows_.assign(**{EPILOGUE_COLUMN: frame[EPILOGUE_COLUMN].to_numpy()}))


def with_label_rows(parts: list[tuple[pd.DataFrame, Mapping]], data: list) -> list[tuple[pd.DataFrame, Mapping]]:
    """Each dataset's (bare rows, fingerprint), its epilogue label rows (label_rows) appended where
    it has epilogue_labels.jsonl: what a model with the epilogue block trains on. Some dataset
    must have them (EpilogueLabelsError naming the directories otherwise)."""
    if not any(path_of(d).exists() for d in data):
        raise EpilogueLabelsError(
            f"no {FILE_NAME} in {[str(d) for d in data]}: the epilogue block needs GEMM + epilogue labels "
            "(`kselect collect-epilogue --data DIR` on the dataset's card)"
        )
    return [
        (pd.concat([rows, label_rows(d)], ignore_index=True) if path_of(d).exists() else rows, fp)
        for (rows, fp), d in zip(parts, data)
    ]


def epilogue_columns(rows: pd.DataFrame, fingerprint: Mapping) -> np.ndarray:
    """The epilogue feature block of dataset rows measured on one card: each row's `epilogue`
    (NO_EPILOGUE where it has none) through the selector's own `epilogue_block`, so training and
    ranking compute the same columns."""
    texts = rows[EPILOGUE_COLUMN].fillna("").astype(str).to_numpy() if EPILOGUE_COLUMN in rows else None
    backend, template = rows["backend"].astype(str).to_numpy(), rows["template"].astype(str).to_numpy()
    cands = [Candidate.make(b, t) for b, t in zip(backend, template)]  # fuses_epilogue reads these two
    if texts is None:
        return epilogue_block(NO_EPILOGUE, cands, fingerprint)
    out = None
    for text in np.unique(texts):
        mine = np.flatnonzero(texts == text)
        epilogue = epilogue_of(json.loads(text)) if text else NO_EPILOGUE
        block = epilogue_block(epilogue, [cands[i] for i in mine], fingerprint)
        if out is None:
            out = np.empty((len(rows), block.shape[1]))
        out[mine] = block
    return out
