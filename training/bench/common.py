"""What `kselect bench gemm` and `kselect bench e2e` share: cold-cache worker processes and
counting what Inductor benchmarked."""
from __future__ import annotations

import math
import os
from pathlib import Path


def cold_cache_env(tmp: Path, keep: tuple[str, ...] = ()) -> dict:
    """The parent's environment with fresh, empty compile caches and no KSELECT_* options
    (other than `keep`): with KSELECT_MODE set, `import torch` would enable kselect in a stock
    variant's worker through torch's autoload entry point."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KSELECT_") or k in keep}
    env.pop("TORCHINDUCTOR_FORCE_DISABLE_CACHES", None)
    env.update({"TORCHINDUCTOR_CACHE_DIR": str(Path(tmp) / "inductor"),
                "TRITON_CACHE_DIR": str(Path(tmp) / "triton"),
                "TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE": "0", "TORCHINDUCTOR_AUTOTUNE_REMOTE_CACHE": "0",
                "PYTHONUNBUFFERED": "1"})
    return env


def ranker_ident(device, model: str | None = None, selector=None) -> str:
    """Load the ranker kselect would use on `device` (the shipped model for its GPU, or `model`)
    and return its ident. Raises when there is none -- no model for this GPU, a broken file --
    because a kselect variant would then time stock Inductor under kselect's name. With an
    enabled `selector`, its own ranker is loaded (and kept for the compile that follows)."""
    from kselect.selector.inductor import hook as ksi
    from kselect.selector.inductor import compat

    selector = selector or ksi.Selector(mode="predict", model=model or None)
    ranker = selector.ranker_for(compat.device_fingerprint(device))
    return str(getattr(ranker, "ident", type(ranker).__name__))


def policy_settings(args) -> dict:
    """The flags of add_policy_args as run settings: what a worker's plan carries and a
    results.json records."""
    from kselect.selector.decide.policy import ATEN_MARGIN_SD, COMPILE_BUDGET

    return {"k": args.k, "fixed_k": bool(getattr(args, "fixed_k", False)), "min_k": getattr(args, "min_k", 1),
            "aten_margin": getattr(args, "aten_margin", ATEN_MARGIN_SD),
            "compile_budget": getattr(args, "compile_budget", COMPILE_BUDGET),
            "early_decision": not getattr(args, "late_decision", False),
            "warm_start": not getattr(args, "cold_start", False)}


def policy_keywords(settings: dict) -> dict:
    """selector.enable()'s policy keywords from run settings (policy_settings); a setting an
    older plan lacks takes enable()'s default."""
    from kselect.selector.decide.policy import ATEN_MARGIN_SD, COMPILE_BUDGET

    return {"k": settings["k"], "adaptive_k": not settings.get("fixed_k", False),
            "min_k": settings.get("min_k", 1), "aten_margin": settings.get("aten_margin", ATEN_MARGIN_SD),
            "compile_budget": settings.get("compile_budget", COMPILE_BUDGET),
            "early_decision": settings.get("early_decision", True), "warm_start": settings.get("warm_start", True)}


def describe_choice(choice) -> str:
    """A benchmarked choice as a kselect candidate key (or Inductor's name for it)."""
    from kselect.selector.inductor.compat import caller_candidate

    try:
        cand = caller_candidate(choice)
    except Exception:  # noqa: BLE001 -- description only
        cand = None
    return cand.key if cand is not None else str(getattr(choice, "name", choice))


class GemmCounter:
    """Inductor's feedback saver: one call per autotuned GEMM, benchmarked or from the autotune
    cache, with its winner. Inductor's `select_algorithm_autotune` counter moves only when it
    really benchmarks, which tells the two apart (if the counter is unreadable every call
    counts as benchmarked)."""

    def __init__(self):
        self.calls: list[dict] = []
        self._last = self._benchmarks()

    @staticmethod
    def _benchmarks():
        try:
            from torch._dynamo.utils import counters

            return int(counters["inductor"]["select_algorithm_autotune"])
        except Exception:  # noqa: BLE001 -- private counter; only sharpens the count
            return None

    def __call__(self, timings, name, input_nodes, choices, profiled_time_fn, precompile_times=None):
        now = self._benchmarks()
        fresh = True if now is None or self._last is None else now > self._last
        self._last = now
        finite = {c: float(t) for c, t in timings.items() if t == t and t != math.inf}
        best = min(finite, key=finite.get) if finite else None
        self.calls.append({"name": str(name), "choices": len(timings), "benchmarked": fresh,
                           "problem": _problem_key(choices),
                           "winner": describe_choice(best) if best is not None else "",
                           "winner_inductor_ms": finite[best] if best is not None else None})

    def summary(self) -> dict:
        """Counts, and `winners`: per GEMM (kselect problem key) the choice Inductor timed fastest
        -- what stock max-autotune picked, before any epilogue-fusion benchmark at scheduling."""
        bench = [c for c in self.calls if c["benchmarked"]]
        return {"autotuned": len(self.calls), "benchmarked": len(bench),
                "candidates": sum(c["choices"] for c in bench), "cache_hits": len(self.calls) - len(bench),
                "per_gemm": [c["choices"] for c in bench],
                "winners": {c["problem"]: c["winner"] for c in self.calls if c["problem"] and c["winner"]}}


def _problem_key(choices) -> str:
    """The GEMM's kselect problem key ('' when its choices do not read as one)."""
    from kselect.selector.inductor.compat import choices_signature

    try:
        return choices_signature(list(choices))[0].key
    except Exception:  # noqa: BLE001 -- description only
        return ""
