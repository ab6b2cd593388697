"""The one JSON encoder default for numpy values (sidecars, evaluation results, reports)."""

from __future__ import annotations

import numpy as np


def json_default(o):
    """`json.dumps(..., default=json_default)`: numpy scalars and arrays as plain JSON values."""
    if isinstance(o, (np.bool_,)):
        return bool(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")
