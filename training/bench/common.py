"""What `kselect bench gemm` and `kselect bench e2e` share: cold-cache worker processes and
counting what Inductor benchmarked."""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Mapping


def cold_cache_env(tmp: Path, keep: tuple[str, ...] = ()) -> dict:
    """The parent's environment with fresh, empty compile caches and no KSELECT_* options
    (other than `keep`): with KSELECT_MODE set, `import torch` would enable kselect in a stock
    variant's worker through torch's autoload entry point."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KSELECT_") or k in keep}
    env.pop("TORCHINDUCTOR_FORCE_DISABLE_CACHES", None)
    env.update(
        {
            "TORCHINDUCTOR_CACHE_DIR": str(Path(tmp) / "inductor"),
            "TRITON_CACHE_DIR": str(Path(tmp) / "triton"),
            "TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE": "0",
            "TORCHINDUCTOR_AUTOTUNE_REMOTE_CACHE": "0",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def ranker_ident(device, model: str | None = None, selector=None) -> str:
    """Load the ranker kselect would use on `device` (the shipped model for its GPU, or `model`)
    and return its ident. Raises when there is none -- no model for this GPU, a broken file --
    because a kselect variant would then time stock Inductor under kselect's name. With an
    enabled `selector`, its own ranker is loaded (and kept for the compile that follows)."""
    from kselect.selector.fingerprint import device_fingerprint
    from kselect.selector.inductor.hook import Selector

    selector = selector or Selector(mode="predict", model=model or None)
    ranker = selector.ranker_for(device_fingerprint(device))
    return str(getattr(ranker, "ident", type(ranker).__name__))


# The selector settings a bench run sets by flag (their type, default and help come from
# config.SelectorSettings); a setting named with a flag is on by default and that flag turns it
# off, the others take `--<setting> VALUE`.
BENCH_SETTINGS = {
    "k": None,
    "adaptive_k": "--fixed-k",
    "min_k": None,
    "aten_margin": None,
    "compile_budget": None,
    "early_decision": "--late-decision",
    "warm_start": "--cold-start",
    "measured_picks": "--no-measured-picks",  # predict's model alone, where the table holds the run's GEMMs
}


def setting_fields() -> dict:
    """SelectorSettings' fields by name: each carries its default and its declaration (kernels/settings.spec)."""
    from kselect.selector.config import SelectorSettings

    return {f.name: f for f in dataclasses.fields(SelectorSettings)}


def policy_settings(args) -> dict:
    """The flags of cli.flags.add_policy_args as run settings, {setting: value}: what a worker's plan
    carries and a results.json records."""
    fields = setting_fields()
    return {name: getattr(args, name, fields[name].default) for name in BENCH_SETTINGS}


def run_settings(recorded: Mapping) -> dict:
    """A plan's or results.json's settings with every policy setting under its own name: a
    record that says `fixed_k` (adaptive_k turned off) reads as adaptive_k."""
    out = dict(recorded)
    if "fixed_k" in out:
        out.setdefault("adaptive_k", not out.pop("fixed_k"))
    return out


def policy_keywords(settings: Mapping) -> dict:
    """selector.enable()'s policy keywords from run settings (policy_settings); a setting a
    record lacks takes enable()'s default."""
    fields, recorded = setting_fields(), run_settings(settings)
    return {name: recorded.get(name, fields[name].default) for name in BENCH_SETTINGS}


def describe_choice(choice) -> str:
    """A benchmarked choice as a kselect candidate key (or Inductor's name for it)."""
    from kselect.selector.compat.choice_candidates import caller_candidate

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
        self.calls.append(
            {
                "name": str(name),
                "choices": len(timings),
                "benchmarked": fresh,
                "problem": _problem_key(choices),
                "winner": describe_choice(best) if best is not None else "",
                "winner_inductor_ms": finite[best] if best is not None else None,
            }
        )

    def summary(self) -> dict:
        """Counts, and `winners`: per GEMM (kselect problem key) the choice Inductor timed fastest
        -- what stock max-autotune picked, before any epilogue-fusion benchmark at scheduling."""
        bench = [c for c in self.calls if c["benchmarked"]]
        return {
            "autotuned": len(self.calls),
            "benchmarked": len(bench),
            "candidates": sum(c["choices"] for c in bench),
            "cache_hits": len(self.calls) - len(bench),
            "per_gemm": [c["choices"] for c in bench],
            "winners": {c["problem"]: c["winner"] for c in self.calls if c["problem"] and c["winner"]},
        }


def _problem_key(choices) -> str:
    """The GEMM's kselect problem key ('' when its choices do not read as one)."""
    from kselect.selector.compat.signatures import choices_signature

    try:
        return choices_signature(list(choices))[0].key
    except Exception:  # noqa: BLE001 -- description only
        return ""
