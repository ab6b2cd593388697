"""The nearest measured shape's fastest templates: a lookup verify times beside the model's picks.

The cost model and a plain lookup ("what won on the most similar GEMM we measured") err on
different shapes, so verify gives one of its timed slots to the lookup (policy.choose_kept,
`nearest`). The table ships inside the model's sidecar JSON (`nearest_templates`), built from
the training data (training/learn/nearest_table.py); serving needs numpy only.

Similarity is the nearest-shape baseline's: Euclidean distance of (log2 M, log2 N, log2 K),
plus KIND_PENALTY when the layout, op or dtype differ. A shape's entry lists its fastest
measured templates (ATen left out) with each one's log(time / the shape's best time). A GEMM's
preference order scores each template listed by its NEIGHBOURS nearest shapes by that gap on
the nearest shape listing it, plus NEIGHBOUR_STEP per neighbour farther away (the nearest-shape
baseline's scoring, training/learn/baselines.py), lowest first.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

NEAREST_FORMAT = "kselect-nearest-templates"
NEAREST_FORMAT_VERSION = 1
KIND_PENALTY = 4.0  # distance added between shapes of another layout, op or dtype
NEIGHBOURS = 3  # shapes whose lists make up a GEMM's preference order
NEIGHBOUR_STEP = 0.05  # log-time handicap per neighbour farther away


class NearestTableError(ValueError):
    """A nearest-templates table that cannot be used; the message names the problem."""


def shape_kind(layout: str, op: str, dtype: str) -> str:
    """What must match for two shapes to be near at no penalty."""
    return f"{op}:{dtype}:{layout}"


class NearestTemplates:
    """Measured shapes and each one's fastest template keys with their gaps to its best."""

    def __init__(
        self,
        points: np.ndarray,
        kinds: Sequence[str],
        keys: Sequence[str],
        templates: Sequence[Sequence[int]],
        gaps: Sequence[Sequence[float]],
    ):
        self.points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        self.kinds = np.asarray(list(kinds), dtype=object)
        self.keys = list(keys)
        self.templates = [list(map(int, t)) for t in templates]
        self.gaps = [list(map(float, g)) for g in gaps]
        if not (len(self.points) == len(self.kinds) == len(self.templates) == len(self.gaps)):
            raise NearestTableError(
                f"nearest table: {len(self.points)} shapes, {len(self.kinds)} kinds, "
                f"{len(self.templates)} template lists and {len(self.gaps)} gap lists "
                "differ in length"
            )
        if any(len(t) != len(g) for t, g in zip(self.templates, self.gaps)):
            raise NearestTableError("nearest table: a shape's template and gap lists differ in length")
        if not all(math.isfinite(v) for g in self.gaps for v in g):
            raise NearestTableError("nearest table: a gap is not finite")
        if not np.isfinite(self.points).all():
            raise NearestTableError("nearest table: a shape's log2 sizes are not finite")
        bad = [i for t in self.templates for i in t if not 0 <= i < len(self.keys)]
        if bad:
            raise NearestTableError(f"nearest table: template index {bad[0]} outside the {len(self.keys)} keys")

    @classmethod
    def build(
        cls, shapes: Sequence[tuple[int, int, int, str]], lists: Sequence[Sequence[tuple[str, float]]]
    ) -> "NearestTemplates":
        """From (M, N, K, kind) per shape and its (template key, log(time / best)) pairs."""
        if len(shapes) != len(lists):
            raise NearestTableError(f"{len(shapes)} shapes but {len(lists)} template lists")
        vocab: dict[str, int] = {}
        templates = [[vocab.setdefault(k, len(vocab)) for k, _ in pairs] for pairs in lists]
        gaps = [[round(float(g), 4) for _, g in pairs] for pairs in lists]
        points = np.log2(np.array([s[:3] for s in shapes], dtype=np.float64).reshape(-1, 3))
        return cls(points, [s[3] for s in shapes], list(vocab), templates, gaps)

    def to_json(self) -> dict:
        return {
            "format": NEAREST_FORMAT,
            "format_version": NEAREST_FORMAT_VERSION,
            "log2_mnk": [[round(float(v), 6) for v in p] for p in self.points],
            "kinds": [str(k) for k in self.kinds],
            "keys": self.keys,
            "templates": self.templates,
            "gaps": self.gaps,
        }

    @classmethod
    def from_json(cls, d: Mapping) -> "NearestTemplates":
        if not isinstance(d, Mapping):
            raise NearestTableError(f"nearest table is a JSON {type(d).__name__}, not an object")
        if d.get("format") != NEAREST_FORMAT:
            raise NearestTableError(f"not a {NEAREST_FORMAT} table (format={d.get('format')!r})")
        if d.get("format_version") != NEAREST_FORMAT_VERSION:
            raise NearestTableError(
                f"nearest table version {d.get('format_version')!r}; this kselect reads {NEAREST_FORMAT_VERSION}"
            )
        try:
            return cls(np.array(d["log2_mnk"], dtype=np.float64), d["kinds"], d["keys"], d["templates"], d["gaps"])
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, NearestTableError):
                raise
            raise NearestTableError(f"nearest table is malformed: {exc!r}") from None

    def __len__(self) -> int:
        return len(self.templates)

    def preferences(self, M: int, N: int, K: int, kind: str) -> list[str]:
        """Template keys for a GEMM, most preferred first (see the module docstring)."""
        if not len(self.templates):
            return []
        at = np.log2(np.array([M, N, K], dtype=np.float64))
        d = np.linalg.norm(self.points - at, axis=1) + KIND_PENALTY * (self.kinds != kind)
        score: dict[int, float] = {}
        for j, s in enumerate(np.argsort(d, kind="stable")[:NEIGHBOURS]):
            for i, g in zip(self.templates[s], self.gaps[s]):
                score.setdefault(i, g + NEIGHBOUR_STEP * j)
        return [self.keys[i] for i in sorted(score, key=score.__getitem__)]


def from_metadata(meta: Mapping | None) -> NearestTemplates | None:
    """The table a model's sidecar carries (None when it has none)."""
    d = (meta or {}).get("nearest_templates")
    return None if d is None else NearestTemplates.from_json(d)
