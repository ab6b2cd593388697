"""What one collection worker is asked to do (CollectPlan), and the arguments that make it:
the shard spec, the space spec, the shard's problems (training/measure/collect.py runs it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kselect.kernels.candidate_list import stable_hash
from kselect.kernels.problem import Problem


class CollectError(ValueError):
    """Bad collection arguments (shard spec, space spec, ...)."""


def parse_shard(spec: str) -> tuple[int, int]:
    """'i/n' with 0 <= i < n."""
    try:
        i, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise CollectError(f"--shard must look like i/n (e.g. 0/4), got {spec!r}") from None
    if n < 1 or not 0 <= i < n:
        raise CollectError(f"--shard {spec!r}: need 0 <= i < n and n >= 1")
    return i, n


def parse_space(spec: str) -> tuple[str, int]:
    """'exhaustive' | 'default' | 'sample:N' (DEFAULT space + seeded sample of EXHAUSTIVE)."""
    if spec in ("exhaustive", "default"):
        return spec, 0
    if spec.startswith("sample:"):
        try:
            n = int(spec.split(":", 1)[1])
        except ValueError:
            n = 0
        if n > 0:
            return "sample", n
    raise CollectError(f"--space must be exhaustive, default or sample:N (N > 0), got {spec!r}")


def shard_problems(problems: list[Problem], shard: tuple[int, int]) -> list[Problem]:
    """Deterministic split; hashed order so a time-limited run still spans every family."""
    ordered = sorted({p.key: p for p in problems}.values(), key=lambda p: stable_hash(p.key))
    return ordered[shard[0] :: shard[1]]


@dataclass
class CollectPlan:
    """What one worker measures; serialised to JSON for the worker process."""

    out: str
    problems: list[dict]
    workloads: dict = field(default_factory=dict)  # problem key -> workload tag
    backends: list[str] = field(default_factory=lambda: ["aten", "triton"])
    space: str = "sample"
    n_sample: int = 240
    deadline: float = 0.0  # unix time; 0 = none
    worker: str = "w0"
    fingerprint_id: str = ""
    target_ms: float = 0.25
    precompile_workers: int = 0
    device: str = "cuda"
