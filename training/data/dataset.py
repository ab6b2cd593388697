"""The measured-GEMM dataset: one schema, crash-safe part files, loading, compaction, summary.

Layout of a dataset directory:
  fingerprint.json          hardware/software fingerprint of the machine that measured it
  measurements.parquet      compacted rows (zstd), what we commit
  parts/*.parquet           rows appended by collectors, each file written atomically
  quarantine/               part files that failed to parse (moved aside, never deleted)
  DATASET.md                the dataset card

One row = one (problem, candidate) measurement, including failures. Rows are identified
by (problem_key, candidate_key); a collector skips identities already on disk, so a rerun
after a crash neither loses nor duplicates rows. Should two rows of one identity exist (two
directories merged, a dataset written by an older collector), loading keeps one by a fixed
rule: a measured `ok` row beats a failure, otherwise the newest.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from kselect.kernels.problem import Problem
from kselect.selector.atomic_write import write_text

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
# A dataset directory's subdirectory of rows re-timed as Inductor's kernels (training/measure/retime.py).
RETIMED_DIR = "retimed"
STATUSES = ("ok", "compile_error", "launch_error", "wrong_result", "pruned")

# column -> pandas dtype. The one definition of a measurement row.
COLUMNS: dict[str, str] = {
    # problem
    "problem_key": "string",
    "op": "string",
    "M": "int64",
    "N": "int64",
    "K": "int64",
    "batch": "int64",
    "dtype": "string",
    "layout": "string",
    "model": "string",
    "workload": "string",
    # candidate
    "candidate_key": "string",
    "backend": "string",
    "template": "string",
    "params": "string",
    "BLOCK_M": "int64",
    "BLOCK_N": "int64",
    "BLOCK_K": "int64",
    "GROUP_M": "int64",
    "num_stages": "int64",
    "num_warps": "int64",
    "k_split": "int64",
    # measurement
    "status": "string",
    "error": "string",
    "time_ms": "float64",
    "time_min_ms": "float64",
    "time_max_ms": "float64",
    "spread": "float64",
    "noisy": "bool",
    "reps": "int64",
    "method": "string",
    "rel_error": "float64",
    "compile_s": "float64",
    # provenance
    "oracle": "bool",
    "space": "string",
    "fingerprint_id": "string",
    "worker": "string",
    "collected_at": "float64",
    # fp8 scaled_mm's problem fields (Problem.out_dtype, scaling, fast_accum); added after
    # schema 1 was written, so a file without them reads with their defaults ("", "", False)
    "out_dtype": "string",
    "scaling": "string",
    "fast_accum": "bool",
}
ADDED_COLUMNS = {"out_dtype": "", "scaling": "", "fast_accum": False}
KEY = ["problem_key", "candidate_key"]


class DatasetError(ValueError):
    """A dataset directory or part file that cannot be used; the message names the file."""


class CorruptShardError(DatasetError):
    def __init__(self, paths: list[Path], reasons: list[str]):
        self.paths = paths
        detail = "; ".join(f"{p}: {r}" for p, r in zip(paths, reasons))
        super().__init__(f"{len(paths)} corrupt part file(s): {detail}")


def empty_frame() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in COLUMNS.items()})


def row_problem(row) -> Problem:
    """The Problem a dataset row measured: its shape columns and model tag."""
    return Problem(
        int(row["M"]),
        int(row["N"]),
        int(row["K"]),
        str(row["dtype"]),
        str(row["layout"]),
        str(row["op"]),
        int(row["batch"]),
        str(row["model"]),
        str(row.get("out_dtype", "") or ""),
        str(row.get("scaling", "") or ""),
        bool(row.get("fast_accum", False)),
    )


def conform(df: pd.DataFrame) -> pd.DataFrame:
    """Exactly the schema's columns and dtypes; a missing column is an error naming it (the
    ADDED_COLUMNS of files written before them read as their defaults)."""
    absent = {c: v for c, v in ADDED_COLUMNS.items() if c not in df.columns}
    if absent:
        df = df.assign(**absent)
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise DatasetError(f"rows are missing column(s) {missing}")
    out = df[list(COLUMNS)].copy()
    for col, dtype in COLUMNS.items():
        if dtype == "string":
            out[col] = out[col].astype("string").fillna("")
        elif dtype == "bool":
            out[col] = out[col].fillna(False).astype(bool)
        elif dtype == "int64":
            out[col] = pd.to_numeric(out[col]).fillna(0).astype("int64")
        else:
            out[col] = pd.to_numeric(out[col]).astype("float64")
    return out


def _atomic_write_parquet(df: pd.DataFrame, path: Path, before_publish=None) -> None:
    """Write to a hidden temp file, fsync, rename over `path`: readers see all or nothing.
    `before_publish()` runs between the write and the rename (a fault-injection point)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    df.to_parquet(tmp, index=False, compression="zstd")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    if before_publish is not None:
        before_publish()
    os.replace(tmp, path)


def preferred_rows(df: pd.DataFrame) -> pd.DataFrame:
    """One row per identity: a measured `ok` row beats a failure; among equals the newest
    (`collected_at`) wins, then the later file. Rows keep their original order."""
    if not len(df):
        return df
    rank = pd.DataFrame(
        {"ok": df["status"] == "ok", "at": df["collected_at"].fillna(-np.inf), "pos": np.arange(len(df))},
        index=df.index,
    )
    best = rank.sort_values(["ok", "at", "pos"], ascending=False)
    keep = best.index[~df.loc[best.index].duplicated(KEY, keep="first").to_numpy()]
    return df.loc[sorted(keep)].reset_index(drop=True)


@dataclass
class DatasetDir:
    root: Path
    _corrupt: list = field(default_factory=list)

    def __post_init__(self):
        self.root = Path(self.root)

    @property
    def parts_dir(self) -> Path:
        return self.root / "parts"

    @property
    def compact_path(self) -> Path:
        return self.root / "measurements.parquet"

    @property
    def fingerprint_path(self) -> Path:
        return self.root / "fingerprint.json"

    def exists(self) -> bool:
        return self.compact_path.exists() or any(self.parts_dir.glob("*.parquet"))

    # -- writing ---------------------------------------------------------------------
    def append(self, rows: list[dict], tag: str, before_publish=None) -> Path | None:
        """Write rows as one new part file, atomically; returns its path."""
        if not rows:
            return None
        self.parts_dir.mkdir(parents=True, exist_ok=True)
        path = self.parts_dir / f"{tag}-{uuid.uuid4().hex[:12]}.parquet"
        _atomic_write_parquet(conform(pd.DataFrame(rows)), path, before_publish)
        return path

    def remove_temp_files(self, tag: str) -> int:
        """Delete half-written part files a killed writer `tag` left behind (never visible
        to loading); only call while no process writes as `tag`. Returns the count."""
        stale = list(self.parts_dir.glob(f".{tag}-*.tmp")) if self.parts_dir.is_dir() else []
        for path in stale:
            path.unlink(missing_ok=True)
        return len(stale)

    def write_fingerprint(self, fingerprint: dict) -> None:
        """Record the fingerprint; refuse to mix measurements from different machines."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.fingerprint_path.exists():
            old = self.read_fingerprint()
            if old.get("fingerprint_id") != fingerprint.get("fingerprint_id"):
                raise DatasetError(
                    f"{self.root} was measured on {old.get('gpu_name')} ({old.get('fingerprint_id')}); "
                    f"this machine is {fingerprint.get('gpu_name')} ({fingerprint.get('fingerprint_id')}): "
                    "use another --out directory"
                )
            return
        write_text(self.fingerprint_path, json.dumps(fingerprint, indent=2, sort_keys=True))

    def read_fingerprint(self) -> dict:
        if not self.fingerprint_path.exists():
            raise DatasetError(f"{self.root} has no fingerprint.json")
        try:
            return json.loads(self.fingerprint_path.read_text())
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{self.fingerprint_path} is not valid JSON: {exc}") from None

    # -- reading ---------------------------------------------------------------------
    def _read_one(self, path: Path) -> pd.DataFrame:
        try:
            return conform(pd.read_parquet(path))
        except DatasetError:
            raise
        except Exception as exc:  # pyarrow raises many types for a damaged file
            raise DatasetError(f"{type(exc).__name__}: {exc}") from None

    def _read_columns(self, path: Path, columns: list[str]) -> pd.DataFrame:
        """Just `columns` of a file that has the whole schema (far cheaper than a full read)."""
        try:
            pf = pq.ParquetFile(path)
            names = pf.schema_arrow.names
            missing = [c for c in COLUMNS if c not in names and c not in ADDED_COLUMNS]
            if missing:
                raise DatasetError(f"rows are missing column(s) {missing}")
            df = pf.read(columns=[c for c in columns if c in names]).to_pandas()
            return df.assign(**{c: ADDED_COLUMNS[c] for c in columns if c not in names})
        except DatasetError:
            raise
        except Exception as exc:  # pyarrow raises many types for a damaged file
            raise DatasetError(f"{type(exc).__name__}: {exc}") from None

    def load(self, on_corrupt: str = "raise", columns: list[str] | None = None) -> pd.DataFrame:
        """All rows, one per identity (`preferred_rows`: a measured `ok` row beats a
        failure, otherwise the newest).

        on_corrupt: 'raise' -> CorruptShardError naming every bad file (good rows are
        untouched on disk); 'skip' -> warn once and return the good rows; 'quarantine'
        -> move bad part files to quarantine/ and return the good rows.
        columns: only these columns (plus those that pick the preferred row), as stored:
        what a resume or a progress count needs, at a fraction of a full load's cost.
        """
        if on_corrupt not in ("raise", "skip", "quarantine"):
            raise ValueError(f"on_corrupt must be raise|skip|quarantine, got {on_corrupt!r}")
        if not self.root.exists():
            raise DatasetError(f"dataset directory {self.root} does not exist")
        files = ([self.compact_path] if self.compact_path.exists() else []) + sorted(self.parts_dir.glob("*.parquet"))
        wanted = None if columns is None else list(dict.fromkeys([*KEY, "status", "collected_at", *columns]))
        frames, bad, reasons = [], [], []
        for path in files:
            try:
                frames.append(self._read_one(path) if wanted is None else self._read_columns(path, wanted))
            except DatasetError as exc:
                bad.append(path)
                reasons.append(str(exc))
        self._corrupt = bad
        if bad:
            if on_corrupt == "raise":
                raise CorruptShardError(bad, reasons)
            if on_corrupt == "quarantine":
                qdir = self.root / "quarantine"
                qdir.mkdir(exist_ok=True)
                for p in bad:
                    if p != self.compact_path:
                        os.replace(p, qdir / p.name)
            log.warning(
                "skipped %d corrupt part file(s): %s",
                len(bad),
                "; ".join(f"{p.name} ({r})" for p, r in zip(bad, reasons)),
            )
        if not frames:
            return empty_frame() if wanted is None else empty_frame()[wanted]
        return preferred_rows(pd.concat(frames, ignore_index=True))

    @property
    def corrupt_files(self) -> list[Path]:
        return list(self._corrupt)

    def done_keys(self) -> set[tuple[str, str]]:
        """Identities already measured (for resume); corrupt parts are quarantined."""
        df = self.load(on_corrupt="quarantine", columns=KEY)
        return set(zip(df["problem_key"], df["candidate_key"]))

    def compact(self, transform=None) -> int:
        """Fold all part files into measurements.parquet; returns the row count.

        Crash-safe: the new compact file replaces the old atomically before any part is
        removed, and loading deduplicates, so a crash in between duplicates nothing.
        `transform(df) -> df` may recompute derived columns (the oracle flag) on the way.
        """
        # Only parts listed before loading are removed: one a collector adds meanwhile stays.
        parts = sorted(self.parts_dir.glob("*.parquet"))
        df = self.load(on_corrupt="raise")
        if transform is not None:
            df = conform(transform(df))
        df = df.sort_values(["problem_key", "candidate_key"]).reset_index(drop=True)
        self.root.mkdir(parents=True, exist_ok=True)
        _atomic_write_parquet(df, self.compact_path)
        for p in parts:
            p.unlink()
        return len(df)


def load_dataset(path: str | Path, on_corrupt: str = "raise") -> pd.DataFrame:
    """Rows of a dataset directory (or of a single parquet file)."""
    path = Path(path)
    if path.is_file():
        try:
            return conform(pd.read_parquet(path))
        except DatasetError:
            raise
        except Exception as exc:
            raise DatasetError(f"{path}: {type(exc).__name__}: {exc}") from None
    return DatasetDir(path).load(on_corrupt=on_corrupt)


def summarize(root: str | Path) -> dict:
    """The numbers a dataset card and `kselect dataset summary --json` report."""
    from kselect.training.data.oracle import oracle_shapes_by_class, sample_gap  # oracle needs the collector's lists

    ds = DatasetDir(Path(root))
    df = ds.load(on_corrupt="skip")
    fingerprint = ds.read_fingerprint() if ds.fingerprint_path.exists() else {}
    ok = df[df["status"] == "ok"]
    per_shape = df.groupby("problem_key")["candidate_key"].nunique() if len(df) else pd.Series(dtype=int)
    triton_per_shape = (
        df[df["backend"] == "triton"].groupby("problem_key")["candidate_key"].nunique()
        if len(df)
        else pd.Series(dtype=int)
    )
    oracle_keys = set(df[df["oracle"]]["problem_key"]) if len(df) else set()
    oracle = len(oracle_keys)
    aten_ok = set(df[(df["backend"] == "aten") & (df["status"] == "ok")]["problem_key"]) if len(df) else set()
    # ATen + >= 200 Triton candidates, or ATen + the whole space when the space is smaller
    floor = {k for k, n in triton_per_shape.items() if n >= 200} | oracle_keys
    return {
        "path": str(root),
        "schema_version": SCHEMA_VERSION,
        "shapes": int(df["problem_key"].nunique()),
        "rows": int(len(df)),
        "ok_rows": int(len(ok)),
        "failed_rows": int(len(df) - len(ok)),
        "failed_by_status": {k: int(v) for k, v in df[df["status"] != "ok"]["status"].value_counts().items()},
        "noisy_rows": int(ok["noisy"].sum()),
        "candidates_per_shape_min": int(per_shape.min()) if len(per_shape) else 0,
        "candidates_per_shape_median": float(np.median(per_shape)) if len(per_shape) else 0.0,
        "triton_candidates_per_shape_min": int(triton_per_shape.min()) if len(triton_per_shape) else 0,
        "oracle_shapes": int(oracle),
        "oracle_shapes_by_class": oracle_shapes_by_class(df) if len(df) else {},
        "sample_gap": sample_gap(df) if oracle else {},
        "shapes_with_aten_and_200_triton_or_full_space": len(floor & aten_ok),
        "shapes_with_aten": len(aten_ok),
        "by_template": {f"{b}:{t}": int(v) for (b, t), v in df.groupby(["backend", "template"]).size().items()},
        "workloads": {k: int(v) for k, v in df.groupby("workload")["problem_key"].nunique().items()},
        "corrupt_files": [str(p) for p in ds.corrupt_files],
        "fingerprint": fingerprint,
        "retimed": retimed_summary(Path(root) / RETIMED_DIR),
    }


def retimed_summary(path: Path) -> dict:
    """Counts of the re-timed rows beside the collector's (empty when there are none)."""
    again = DatasetDir(path)
    if not path.is_dir() or not again.exists():
        return {}
    df = again.load(on_corrupt="skip")
    ok = df[df["status"] == "ok"]
    return {
        "path": str(path),
        "shapes": int(df["problem_key"].nunique()),
        "rows": int(len(df)),
        "ok_rows": int(len(ok)),
        "shapes_with_ok_rows": int(ok["problem_key"].nunique()),
    }
