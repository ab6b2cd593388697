"""The same frontier (frontier.py) for the shipped recipes retrained with the gap target clipped
higher than 0.30, so that a score can say how far past ATen a template lands: can verify then
time no template where none is credibly within reach, and keep its capture?

    python reports/2026-12-07-verify-budget/unclipped.py > reports/2026-12-07-verify-budget/unclipped.json
"""

import json

import frontier

from kselect.training.learn.headroom import best_template_gaps

CLIPS = (0.3, 0.7, 1.5)
# (bound, templates) tiers; 0 templates past the last bound: ATen alone, nothing timed
TIERS = (
    ((9, 4),),
    ((0.4, 4), (9, 0)),
    ((0.5, 4), (9, 0)),
    ((0.7, 4), (9, 0)),
    ((0.3, 4), (0.7, 1), (9, 0)),
    ((0.25, 4), (9, 1)),
)


def held_out(model_path: str, data: str, clip: float):
    """frontier.held_out with the gap target clipped at `clip` (failed rows sit there too)."""
    return frontier.held_out(model_path, data, gap_max=clip)


def clipped_frontier(model_path: str, data: str, clip: float, reach_clip: float | None = None) -> dict:
    """Tiers on the clip-`clip` model's costs; with `reach_clip`, the budget (the tiers' gap) read
    from a second model of that clip while the shipped clip's costs rank (two models served)."""
    shapes, cost = held_out(model_path, data, clip)
    budget_cost = cost if reach_clip is None else held_out(model_path, data, reach_clip)[1]
    _, gap = best_template_gaps(shapes, budget_cost)
    return {
        "model": model_path,
        "data": data,
        "clip": clip,
        "reach_clip": reach_clip,
        "gap_quantiles": frontier.gap_quantiles(shapes, gap, (0.5, 0.75, 0.9, 0.97)),
        "tiers": frontier.tier_rows(shapes, cost, gap, TIERS),
    }


if __name__ == "__main__":
    runs = [clipped_frontier(m, d, c) for m, d in frontier.CASES for c in CLIPS]
    runs += [clipped_frontier(m, d, CLIPS[0], reach_clip=c) for m, d in frontier.CASES for c in CLIPS[1:]]
    print(json.dumps(runs, indent=1))
