"""Faults injected into a collection worker on request (KSELECT_COLLECT_FAULT), so the kill
suite (tests/training/faults/) can crash it at a chosen unit of work."""

from __future__ import annotations

import os
import re
from pathlib import Path

FAULT_ENV = "KSELECT_COLLECT_FAULT"


class FaultInjector:
    """Test hook: KSELECT_COLLECT_FAULT kills the worker (exit 137, as SIGKILL would) at a
    chosen point of its work.

      "N:MARKER"        when its N-th unit of work (collection: candidate; re-timing: shape)
                        is in flight, once (MARKER, a file, records that it fired)
      "STAGE:N:MARKER"  the N-th time it reaches STAGE, once; collection's stages are
                        `start` (the worker, nothing in flight yet), `setup` (a shape's
                        operands), `unit` (a candidate), `write` (a part file written, not yet
                        renamed into place) and `written` (renamed)
      "at:REGEX"        every time it reaches a point whose "STAGE LABEL" matches REGEX
                        (labels: the problem key, or "problem_key candidate_key" for a unit):
                        units that always crash, as a faulting kernel does
    """

    def __init__(self, after: int = 0, marker: str = "", stage: str = "unit", at: str = ""):
        self.after, self.marker, self.stage, self.at = after, marker, stage, at
        self.count = 0

    @classmethod
    def from_env(cls) -> "FaultInjector":
        spec = os.environ.get(FAULT_ENV, "")
        if not spec:
            return cls()
        if spec.startswith("at:"):
            return cls(at=spec[3:])
        head, _, rest = spec.partition(":")
        if head.isdigit():
            return cls(int(head), rest)
        after, _, marker = rest.partition(":")
        return cls(int(after), marker, stage=head)

    def tick(self, label: str = "") -> None:
        """A unit of work is in flight."""
        self.point("unit", label)

    def point(self, stage: str, label: str = "") -> None:
        if self.at and re.search(self.at, f"{stage} {label}"):
            os._exit(137)
        if not self.after or stage != self.stage:
            return
        self.count += 1
        if self.count == self.after and not (self.marker and os.path.exists(self.marker)):
            if self.marker:
                Path(self.marker).write_text("fired")
            os._exit(137)
