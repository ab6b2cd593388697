"""The early decision: decide a GEMM over kselect's own enumeration of its space before Inductor
generates it, so Inductor converts only what is kept (compat/enumeration.py). The same decider
decides, and the verifier awaits the kept set's benchmark, as for a decision over Inductor's
choices."""

from __future__ import annotations

import logging
import time

from kselect.selector.compat import enumeration, inductor_settings, signatures
from kselect.selector.decide.rankers import RankerUnavailable
from kselect.selector.fingerprint import device_fingerprint
from kselect.selector.ops import registry as op_kinds
from kselect.selector.ops.naming import lowering_kind

log = logging.getLogger("kselect.selector")


class EarlyDecision:
    """The selecting handler's call before Inductor generates a GEMM's template configs
    (`Selector.plan_ktcs`), for one configuration (its `early_decision` and `mode` settings).
    `prepare(fingerprint)` loads and warms the device's ranker (Selector._load_ranker);
    `read_epilogue(fingerprint)` reads the GEMM's epilogue (Selector._read_epilogue)."""

    def __init__(self, config, decider, verifier, prepare, read_epilogue):
        self.config, self.decider, self.verifier = config, decider, verifier
        self.prepare, self.read_epilogue = prepare, read_epilogue

    def plan(self, kernel_inputs, templates, op_name: str, generate=None):
        """The early decision: the template choices to keep, decided over kselect's own
        enumeration of the space (enumeration.template_candidates) before Inductor generates
        it -- Inductor then converts only what is kept, not ~2,400 configs per GEMM
        (`generate(template)`: Inductor's own candidates of a template kselect does not
        enumerate, mapped; without it such a template means no early decision). None = the
        usual path (deciding over Inductor's generated choices), which also owns every warning
        and fallback: a GEMM this cannot decide is decided there, exactly as without it."""
        kind = op_kinds.get(lowering_kind(op_name))
        if not self.config.early_decision or self.config.mode == "off" or (kind is not None and not kind.early_decided):
            return None  # (kselect enumerates the dense GEMMs' spaces; scaled_mm is decided over Inductor's)
        started = time.perf_counter(), time.thread_time()
        inductor_s = [0.0]  # Inductor generating a template kselect does not enumerate

        def timed_generate(template):
            t = time.perf_counter()
            try:
                return list(generate(template))
            finally:
                inductor_s[0] += time.perf_counter() - t

        try:
            problem, fields, device = signatures.ktc_signature(kernel_inputs, op_name)
            if getattr(device, "type", None) != "cuda":  # the enumeration is CUDA's space
                return None
            if fields.get("dynamic"):  # decided per size over Inductor's choices (Decider.decide_per_size)
                return None
            t_sig = time.perf_counter()
            fingerprint = device_fingerprint(device)
            t_dev = time.perf_counter()
            load = self.prepare(fingerprint)  # before enumerating: its warm-up primes the memos
            t_load = time.perf_counter()
            gemm_epilogue, epilogue = self.read_epilogue(fingerprint)  # the loaded ranker may read it
            t_enum = time.perf_counter()
            cands = enumeration.template_candidates(
                problem,
                templates,
                inductor_settings.gemm_search_space(),
                timed_generate if generate is not None else None,
            )
            t_mapped = time.perf_counter()
            if cands is None or len(cands) <= 1:
                log.debug(
                    "kselect %s: no early decision (templates %s give %s candidates)",
                    problem.key,
                    [str(getattr(t, "uid", t)) for t in templates],
                    "unknown" if cands is None else len(cands),
                )
                return None
            # the ranker's load is left out by its wall time around the call (its own timer misses
            # the call's edges), so the map phase is exactly the sum of its parts below
            mapped = (t_mapped - started[0] - (t_load - t_dev), time.thread_time() - started[1] - load[1])
            # the map phase taken apart (ms): reading the GEMM, device fingerprint + epilogue
            # check, kselect's enumeration, and Inductor's own generation of the templates kselect
            # does not enumerate (inside the enumeration; work stock Inductor does for every GEMM)
            map_parts = {
                "map_signature": (t_sig - started[0]) * 1e3,
                "map_device": (t_dev - t_sig + t_enum - t_load) * 1e3,
                "map_enumerate": (t_mapped - t_enum - inductor_s[0]) * 1e3,
                "map_inductor_generate": inductor_s[0] * 1e3,
            }
            kept, entry = self.decider.decide(
                "templates",
                problem,
                fields,
                fingerprint,
                cands,
                epilogue=epilogue,
                mapped=mapped,
                early=True,
                map_parts=map_parts,
                gemm_epilogue=gemm_epilogue,
            )
        except RankerUnavailable as exc:
            log.debug("kselect: no early decision: %s", exc)
            return None
        except Exception as exc:  # noqa: BLE001 -- the usual path decides instead
            log.debug(
                "kselect: early decision failed (%s: %s); deciding over Inductor's choices",
                type(exc).__name__,
                exc,
                exc_info=True,
            )
            return None
        out = [cands[i] for i in kept]
        if (self.config.mode == "verify" or epilogue) and entry is not None and len(out) > 1:
            self.verifier.await_verification("templates", problem.key, (*entry, False), out)
        return out
