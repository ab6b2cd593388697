"""What the GPU is like while `bench e2e` times a step: memory held, SM clock, temperature, power.

Why: verify's 8-layer prefill replays 0.4-0.9 % slower than DEFAULT's and predict's on the same
kernel list but lm_head's (17 of 19 pairs against DEFAULT; reports/h200-session17), while that
lm_head kernel profiles faster. The prefill holds the H200 at its power limit (~690 W, SM clock
1500 MHz after the replays) and a decode step does not (~170 W, 1980 MHz). A snapshot before
and after (`device_state`) cannot say whether the clock during the replays differed between
variants; `StateSampler` reads it throughout.
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
    state = {"reserved_gb": round(torch.cuda.memory_reserved(device) / 2**30, 3),
             "allocated_gb": round(torch.cuda.memory_allocated(device) / 2**30, 3)}
    return {**state, **nvml_readings(device)}


class StateSampler:
    """Reads the GPU's clock, power and temperature every `period_s` in a thread while its
    `with` block runs; `summary()` gives their medians and the clock's range.

    NVML averages a reading over its own period (1/6 to 1 s, per torch.cuda's docs), so a
    sample is a moving average, and a block shorter than that period reads one value. The
    energy counter, read at entry and exit, gives the block's joules (to the counter's own
    update interval). `read` and `energy` replace NVML (callables like nvml_readings and
    energy_mj), for hosts without it."""

    def __init__(self, device=None, period_s: float = 0.01, read: Callable[[], dict] | None = None,
                 energy: Callable[[], int | None] | None = None):
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
        self._energy_mj: list[int | None] = []
        self._window_s: list[float] = []

    def _loop(self) -> None:
        while True:
            got = self._read()
            if got:
                self.samples.append(got)
            if self._stop.wait(self.period_s):
                return

    def __enter__(self) -> "StateSampler":
        if self._read is not None and self._read():   # nothing to sample: stay idle
            self._thread = threading.Thread(target=self._loop, name="kselect-gpu-state", daemon=True)
            self._thread.start()
        self._energy_mj = [self._energy() if self._energy else None]
        self._window_s = [time.perf_counter()]
        return self

    def __exit__(self, *exc) -> None:
        self._energy_mj.append(self._energy() if self._energy else None)
        self._window_s.append(time.perf_counter())
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def summary(self) -> dict | None:
        """{reading: median, "sm_clock_mhz_min"/"_max", "samples", and where the counter
        answered "energy_j" and "window_ms" of the block}; None with neither."""
        out: dict = {}
        if len(self._energy_mj) == 2 and None not in self._energy_mj:
            out["energy_j"] = (self._energy_mj[1] - self._energy_mj[0]) / 1e3
            out["window_ms"] = round((self._window_s[1] - self._window_s[0]) * 1e3, 3)
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
