"""What a kselect variant's process did, read from kselect's own log and its Selector: the
decisions (candidates seen, kept, ranking time), the ops its gate left to stock Inductor, the
fallback warnings, and the picks and measurements each GEMM ended with. The end-to-end worker
(e2e_worker.py) attaches one to kselect's logger and saves its summary in the run's row."""

from __future__ import annotations

import logging
import re


class SelectorLog(logging.Handler):
    """kselect's own log: decisions (candidates seen, kept, ms), the ops its gate left to stock
    Inductor (the op gate's INFO line, once per kind: "scaled_mm", "rowwise scaled_mm", ...) and
    fallback warnings."""

    STOCK = re.compile(r"^kselect: (.+) is not modelled; stock autotuning$")

    def __init__(self):
        super().__init__(logging.INFO)
        self.seen = self.kept = self.decisions = 0
        self.ms = 0.0
        self.warnings: list[str] = []
        self.threads: dict[str, int] = {}  # decisions per thread (backward compiles may run elsewhere)
        self.stock_ops: list[str] = []

    def emit(self, record):
        try:
            if str(record.msg).startswith("kselect %s %s: %d candidates seen") and len(record.args) >= 6:
                self.decisions += 1
                self.seen += int(record.args[2])
                self.kept += int(record.args[3])
                self.ms += float(record.args[5])
                self.threads[record.threadName] = self.threads.get(record.threadName, 0) + 1
            elif record.levelno == logging.INFO and (stock := self.STOCK.match(record.getMessage())):
                self.stock_ops.append(stock.group(1))
            elif record.levelno >= logging.WARNING and record.getMessage() not in self.warnings:
                self.warnings.append(record.getMessage())
        except Exception:  # noqa: BLE001 -- a log format change must not fail the bench
            pass

    def summary(self, selector) -> dict:
        out = {
            "decisions_logged": self.decisions,
            "candidates_ranked": self.seen,
            "kept": self.kept,
            "ranking_ms": round(self.ms, 1),
            "threads": self.threads,
            "stock_ops": self.stock_ops,
            "warnings": self.warnings[:10],
        }
        if selector is not None:
            out["stats"] = dict(selector.stats)
            out.update(selector_picks(selector))
        return out


# what a run keeps of each verify measurement: its times, where they went, the compiles and the
# price's prediction for each (the calibration every GPU run adds), and why a choice was dropped
MEASUREMENT_FIELDS = (
    "problem",
    "ms",
    "winner",
    "wall_ms",
    "compiled_in",
    "phases_ms",
    "compiles",
    "predicted_compile_ms",
    "dropped",
    "memory_mb",
)
# and of each decision: what was kept and why (the price's "passed over ..." is in `why`)
DECISION_FIELDS = ("stage", "problem", "seen", "kept", "why", "ms", "early", "setup_ms")


def selector_picks(selector) -> dict:
    """What kselect finally handed Inductor per GEMM (the later stage and a verify measurement
    override the earlier), counted by template, plus its own measurements, its decisions with
    their reasons, and its CPU time."""
    final: dict = {}
    for d in selector.decisions:
        final[d["problem"]] = d["kept"]
    measured = list(selector.measurements)
    for m in measured:
        final[m["problem"]] = [m["winner"]]
    by_template: dict = {}
    for kept in final.values():
        name = ":".join(kept[0].split(":")[:2]) if len(kept) == 1 else "set-of-%d" % len(kept)
        by_template[name] = by_template.get(name, 0) + 1
    return {
        "picks": final,
        "picks_by_template": by_template,
        "decision_cpu_ms": round(sum(d.get("cpu_ms", 0.0) for d in selector.decisions), 1),
        "early_decisions": sum(1 for d in selector.decisions if d.get("early")),
        "release_memory": getattr(selector, "release_memory", None),
        "warm_while_compiling": getattr(selector, "warm_while_compiling", None),
        "compile_in": getattr(selector, "compile_in", None),
        "compile_budget": getattr(selector, "compile_budget", None),
        "warm_start": (selector.warm_start.summary() if getattr(selector, "warm_start", None) is not None else None),
        "decisions": [{k: d[k] for k in DECISION_FIELDS if k in d} for d in selector.decisions],
        "measurements": [{k: m[k] for k in MEASUREMENT_FIELDS if k in m} for m in measured],
    }
