"""What the GPU is like while `bench e2e` times a step: memory held, SM clock, temperature, power.

Why: verify's 8-layer prefill replays ~0.4 % slower than predict's even on identical kernels
(8 of 10 pairs, reports/2026-12-04-prefill-gap-process-not-tile), and the kernels are no slower in a profile a second
later. The prefill holds the H200 at its power limit (~690 W, SM clock ~1500 MHz), where the
clock may follow the chip's temperature; a decode step does not reach it (~170 W, 1980 MHz).
Snapshots before and after (`device_state`) cannot say what the clock did in between;
`StateSampler` reads it throughout.
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Callable

# Reading name -> the torch.cuda function (NVML underneath) that gives it.
READINGS = {"sm_clock_mhz": "clock_rate", "temperature_c": "temperature", "power_mw": "power_draw"}
SAMPLED = ("sm_clock_mhz", "power_mw", "temperature_c")


def nvml_readings(device, names=tuple(READINGS)) -> dict:
    """The readings NVML gives now ({} where it gives none: no binding, another vendor)."""
    import torch

    out = {}
    for name in names:
        try:
            out[name] = getattr(torch.cuda, READINGS[name])(device)
        except Exception:  # noqa: BLE001 -- a reading NVML cannot give is left out
            pass
    return out


def energy_mj(device) -> int | None:
    """The GPU's energy counter (mJ since the driver loaded; NVML, Volta and later), or None.

    Why: at the power limit a step's time follows its energy, not the sum of its kernels'
    times at full clock, so a kernel faster alone but hungrier may slow the step."""
    try:
        import pynvml
        import torch

        # torch.cuda's NVML handle maps CUDA_VISIBLE_DEVICES to NVML's index (private helper,
        # the one torch.cuda.power_draw uses; 2.11 and 2.13)
        return int(pynvml.nvmlDeviceGetTotalEnergyConsumption(torch.cuda._get_pynvml_handler(device)))
    except Exception:  # noqa: BLE001 -- no NVML, no counter on this GPU: the reading is left out
        return None


def device_state(device) -> dict | None:
    """A snapshot: the caching allocator's reserved and allocated GiB, and, where NVML answers,
    SM clock MHz, temperature and power. None on the CPU."""
    import torch

    if device.type != "cuda":
        return None
    state = {
        "reserved_gb": round(torch.cuda.memory_reserved(device) / 2**30, 3),
        "allocated_gb": round(torch.cuda.memory_allocated(device) / 2**30, 3),
    }
    return {**state, **nvml_readings(device)}


class StateSampler:
    """Reads the GPU's clock, power and temperature every `period_s` in a thread while its
    `with` block runs; `summary()` gives their medians and the clock's range.

    NVML averages a reading over its own period (1/6 to 1 s, per torch.cuda's docs), so a
    sample is a moving average, and a block shorter than that period reads one value. The
    energy counter is read at entry, exit and with every sample. It moves in steps (every
    ~100 ms on the H200: a 1-s window of 20 prefill replays read 31.1 or 34.6 J per step,
    nothing between; reports/2026-12-04-prefill-gap-process-not-tile), so entry-to-exit joules are off by up to one
    step. Between the first and the last sample that saw it move, it gives the mean power
    exactly (`counter_power_mw`, to the sampling period). `read` and `energy` replace NVML
    (callables like nvml_readings and energy_mj), for hosts without it."""

    def __init__(
        self,
        device=None,
        period_s: float = 0.01,
        read: Callable[[], dict] | None = None,
        energy: Callable[[], int | None] | None = None,
    ):
        if period_s <= 0:
            raise ValueError(f"period_s must be > 0, got {period_s}")
        self.period_s = period_s
        self.samples: list[dict] = []
        self._read, self._energy = read, energy
        if device is not None and getattr(device, "type", None) == "cuda":
            self._read = read or (lambda: nvml_readings(device, SAMPLED))
            self._energy = energy or (lambda: energy_mj(device))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._counter: list[tuple[float, int | None]] = []  # (perf_counter s, mJ) per reading

    def _loop(self) -> None:
        while True:
            got = self._read()
            if got:
                self.samples.append(got)
            self._read_counter()
            if self._stop.wait(self.period_s):
                return

    def _read_counter(self) -> None:
        if self._energy is not None:
            self._counter.append((time.perf_counter(), self._energy()))

    def __enter__(self) -> "StateSampler":
        self._counter = []
        self._read_counter()
        if self._read is not None and self._read():  # nothing to sample: stay idle
            self._thread = threading.Thread(target=self._loop, name="kselect-gpu-state", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._read_counter()

    def summary(self) -> dict | None:
        """{reading: median, "sm_clock_mhz_min"/"_max", "samples", and where the counter
        answered "energy_j" and "window_ms" of the block, plus counter_power's figures where
        it moved at least twice}; None with nothing read."""
        out: dict = {}
        counter = self._counter
        if len(counter) >= 2 and counter[0][1] is not None and counter[-1][1] is not None:
            out["energy_j"] = (counter[-1][1] - counter[0][1]) / 1e3
            out["window_ms"] = round((counter[-1][0] - counter[0][0]) * 1e3, 3)
            out.update(counter_power(counter))
        if not self.samples:
            return out or None
        out["samples"] = len(self.samples)
        for name in SAMPLED:
            values = [s[name] for s in self.samples if s.get(name) is not None]
            if values:
                out[name] = statistics.median(values)
                if name == "sm_clock_mhz":
                    out["sm_clock_mhz_min"], out["sm_clock_mhz_max"] = min(values), max(values)
        return out


def counter_power(readings: list[tuple[float, int | None]]) -> dict:
    """Mean power from an energy counter that moves in steps: {"counter_power_mw",
    "counter_updates", "counter_period_ms"} between the first and the last reading at which it
    moved, or {} where it moved fewer than twice (the window is shorter than two steps).

    Why: joules from entry to exit miss up to one step (~10 % of a 1-s window on the H200);
    taken between two moves, the span holds whole steps only."""
    moves = [
        (t, mj)
        for (t, mj), (_, before) in zip(readings[1:], readings)
        if mj is not None and before is not None and mj != before
    ]
    if len(moves) < 2:
        return {}
    (t0, e0), (t1, e1) = moves[0], moves[-1]
    if t1 <= t0:
        return {}
    gaps = [b[0] - a[0] for a, b in zip(moves, moves[1:])]
    return {
        "counter_power_mw": round((e1 - e0) / (t1 - t0), 1),
        "counter_updates": len(moves),
        "counter_period_ms": round(statistics.median(gaps) * 1e3, 2),
    }
