"""What one Selector did, as one value its parts write and benches and tests read: the counters,
and the latest decisions, verify's own measurements and the dynamic-M picks. The decider and
the verifier are each handed it; nothing else writes it."""

from __future__ import annotations

import collections

LATEST = 1024  # entries each deque keeps: the latest ones, for benchmarks and debugging


class SelectorRecord:
    """`stats`: decisions, cache hits, fallbacks, verified sets, choices measured.
    `decisions`: each decision (stage, problem, kept keys, ms, why, phases).
    `measurements`: verify's own measurements of kept sets (problem, {key: ms}, winner, wall ms).
    `dynamic_picks`: a dynamic M's picks per size and the union kept."""

    def __init__(self):
        self.stats = {"decisions": 0, "cache_hits": 0, "fallbacks": 0, "verified": 0, "measured": 0}
        self.decisions: collections.deque = collections.deque(maxlen=LATEST)
        self.measurements: collections.deque = collections.deque(maxlen=LATEST)
        self.dynamic_picks: collections.deque = collections.deque(maxlen=LATEST)
