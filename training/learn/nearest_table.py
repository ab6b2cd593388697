"""Build the nearest-shape template table verify reads (selector/decide/nearest.py) from a dataset, and
score a dataset's rows by it the way the selector would (held-out evaluation).

The table holds the shapes Inductor autotunes as measured (the ones the model trains on), each
with its TEMPLATES_PER_SHAPE fastest measured templates, one per tile family (ATen and failed
rows left out), with each one's log(time / the shape's best time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kselect.selector.decide.nearest import NearestTemplates, shape_kind
from kselect.training.learn.ranking_metrics import ShapeSet

TEMPLATES_PER_SHAPE = 8
LOOKUP = "nearest_templates"  # the lookup's held-out costs in an evaluation's costs (not a ranker)


def _shape_rows(shapes: ShapeSet) -> list[tuple[int, int, int, str]]:
    first = shapes.rows.iloc[shapes.starts]
    return [
        (int(m), int(n), int(k), shape_kind(str(lay), str(op), str(dt)))
        for m, n, k, lay, op, dt in zip(
            first["M"], first["N"], first["K"], first["layout"], first["op"], first["dtype"]
        )
    ]


def nearest_table(shapes: ShapeSet, per_shape: int = TEMPLATES_PER_SHAPE) -> NearestTemplates:
    """The table of `shapes`' realistic shapes (decision-free ones left out)."""
    from kselect.training.learn.headroom import _ATEN, shape_table, tile_family_ids

    keep = ~shape_table(shapes)["decision_free"]
    keys = shapes.rows["candidate_key"].to_numpy(dtype=str)
    fam = tile_family_ids(shapes)
    usable = np.flatnonzero((shapes.tmpl != _ATEN) & np.isfinite(shapes.time))
    order = usable[np.lexsort((shapes.time[usable], shapes.sid[usable]))]
    lists: list[list[tuple[str, float]]] = [[] for _ in range(shapes.n_shapes)]
    seen: list[set] = [set() for _ in range(shapes.n_shapes)]
    for r in order:
        s = shapes.sid[r]
        if len(lists[s]) < per_shape and fam[r] not in seen[s]:
            seen[s].add(fam[r])
            lists[s].append((keys[r], float(np.log(shapes.time[r] / shapes.best[s]))))
    info = _shape_rows(shapes)
    idx = [s for s in range(shapes.n_shapes) if keep[s] and lists[s]]
    return NearestTemplates.build([info[s] for s in idx], [lists[s] for s in idx])


def preference_cost(table: NearestTemplates, shapes: ShapeSet) -> np.ndarray:
    """Per row: its position in the table's preference order for its shape (inf: not listed),
    so the first finite row of a shape is what the selector's lookup would time."""
    keys = shapes.rows["candidate_key"].to_numpy(dtype=str)
    ends = np.r_[shapes.starts[1:], len(keys)]
    cost = np.full(len(keys), np.inf)
    for s, (info, a, b) in enumerate(zip(_shape_rows(shapes), shapes.starts, ends)):
        rank = {k: i for i, k in enumerate(table.preferences(*info))}
        cost[a:b] = [rank.get(k, np.inf) for k in keys[a:b]]
    return cost


@dataclass
class NearestTemplatesRanker:
    """The shipped lookup as a ranker: fitted on the training folds' shapes, it scores a held-out
    shape's rows by their place in the nearest training shapes' lists."""

    per_shape: int = TEMPLATES_PER_SHAPE
    name: str = "nearest_templates"

    def fit(self, shapes: ShapeSet, X: np.ndarray) -> "NearestTemplatesRanker":
        self.table_ = nearest_table(shapes, self.per_shape)
        return self

    def cost(self, shapes: ShapeSet, X: np.ndarray) -> np.ndarray:
        return preference_cost(self.table_, shapes)
