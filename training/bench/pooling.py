"""What the two poolers (`bench gemm-pool`, `bench e2e-pool`) share: their error and how
they find and read a run's results file."""

from __future__ import annotations

from pathlib import Path


class PoolError(ValueError):
    """A results file a pooler cannot use; the message names it and why."""


def read_results(given: str | Path, name: str) -> tuple[Path, str]:
    """(path, text) of a run's results file: `given` itself, or the file `name` in the folder
    `given`; a missing one raises PoolError naming it."""
    path = Path(given)
    path = path / name if path.is_dir() else path
    try:
        return path, path.read_text()
    except FileNotFoundError:
        raise PoolError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise PoolError(f"{path}: not text ({exc})") from None
