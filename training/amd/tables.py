"""AMD's tuned-GEMM tables: loading, validating, and which columns mean what.

ROCm/aiter ships exhaustively tuned bf16 GEMM tables: for every (GPU, M, N, K, flags) it
records only the winning backend (flydsl, asm, torch = hipBLASLt, triton, opus, skinny) and
that winner's time. Each table is one model's shapes. Every problem of a bad file is
reported with the file's name.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

# Per-row columns that describe the problem: the only ones features may read.
INPUT_COLUMNS = ("gfx", "cu_num", "M", "N", "K", "bias", "dtype", "outdtype", "scaleAB", "bpreshuffle")
LABEL_COLUMN = "libtype"  # the winning backend: the target
TIME_COLUMN = "us"  # the winner's measured time: used only to judge near-ties
# Outcomes of tuning: never features (they would leak the answer).
OUTCOME_COLUMNS = ("libtype", "solidx", "splitK", "us", "kernelName", "err_ratio", "tflops", "bw")
REQUIRED_COLUMNS = INPUT_COLUMNS + (LABEL_COLUMN, TIME_COLUMN)
FLAG_COLUMNS = ("bias", "scaleAB", "bpreshuffle")
# A table's problems of one weight matrix: same GPU, N, K and flags, varying M.
SERIES_COLUMNS = ("gfx", "cu_num", "N", "K", "bias", "dtype", "outdtype", "scaleAB", "bpreshuffle")


class TableError(ValueError):
    """A tuned-GEMM table (or directory of them) that cannot be used; names the file."""


def file_sha256(path: str | Path) -> str:
    """Content hash, so a model card pins exactly which tables trained the model."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _as_bool(series: pd.Series, path: Path, column: str) -> pd.Series:
    if series.dtype == bool:
        return series
    text = series.astype(str).str.strip().str.lower()
    mapping = {"true": True, "false": False, "1": True, "0": False}
    bad = ~text.isin(list(mapping))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise TableError(f"{path}: column {column!r} row {row + 2} is {series.iloc[row]!r}, expected True/False")
    return text.map(mapping).astype(bool)


def load_table(path: str | Path) -> pd.DataFrame:
    """One table, validated: every problem of a bad file is reported with the file's name."""
    path = Path(path)
    if not path.is_file():
        raise TableError(f"{path}: no such table file")
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError as exc:
        raise TableError(f"{path}: empty table ({exc})") from exc
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise TableError(f"{path}: not a readable CSV table ({exc})") from exc
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise TableError(
            f"{path}: missing column(s) {', '.join(missing)}; a tuned-GEMM table needs {', '.join(REQUIRED_COLUMNS)}"
        )
    if frame.empty:
        raise TableError(f"{path}: table has a header but no rows")
    for column in ("cu_num", "M", "N", "K"):
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = values.isna() | (values <= 0) | (values != values.round())
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise TableError(
                f"{path}: column {column!r} row {row + 2} is {frame[column].iloc[row]!r}, expected a positive integer"
            )
        frame[column] = values.astype(np.int64)
    times = pd.to_numeric(frame[TIME_COLUMN], errors="coerce")
    if (times.isna() | (times < 0)).any():  # 0 is the tables' own "not timed" marker
        row = int(np.flatnonzero((times.isna() | (times < 0)).to_numpy())[0])
        raise TableError(
            f"{path}: column {TIME_COLUMN!r} row {row + 2} is "
            f"{frame[TIME_COLUMN].iloc[row]!r}, expected a time in us (>= 0)"
        )
    frame[TIME_COLUMN] = times.astype(float)
    for column in ("gfx", "dtype", "outdtype", LABEL_COLUMN):
        if frame[column].isna().any():
            row = int(np.flatnonzero(frame[column].isna().to_numpy())[0])
            raise TableError(f"{path}: column {column!r} row {row + 2} is empty")
        frame[column] = frame[column].astype(str).str.strip()
    for column in FLAG_COLUMNS:
        frame[column] = _as_bool(frame[column], path, column)
    frame["table"] = path.name
    return frame


def table_files(directory: str | Path) -> list[Path]:
    """The *.csv tables of a directory, sorted; an error if there are none."""
    directory = Path(directory)
    if not directory.is_dir():
        raise TableError(f"{directory}: tables directory does not exist")
    files = sorted(p for p in directory.glob("*.csv") if p.is_file())
    if not files:
        raise TableError(f"{directory}: no tuned-GEMM tables (*.csv) in this directory")
    return files


def load_tables(directory: str | Path, measured_only: bool = True) -> pd.DataFrame:
    """All tables of a directory in one frame, with a `table` column naming each row's file.

    measured_only drops rows whose winner time is 0: aiter writes those as untuned defaults
    (all are gfx1250 `triton auto` rows in the shipped tables), so their label was never
    measured and their time cannot bound anything.
    """
    frames = [load_table(p) for p in table_files(directory)]
    frame = pd.concat(frames, ignore_index=True)
    if measured_only:
        frame = frame[frame[TIME_COLUMN] > 0].reset_index(drop=True)
        if frame.empty:
            raise TableError(f"{directory}: no measured rows (every {TIME_COLUMN!r} is 0)")
    return frame
