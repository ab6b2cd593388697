"""The one feature schema of the cost model, shared by training and selection.

Training featurises dataset rows (`featurize_frame`); selection featurises one Problem and
its candidate list (`featurize_candidates`). Both go through `featurize_arrays`, so the
two can never drift apart. Every feature is a numpy expression over whole arrays (no
per-candidate Python in the hot path): ~2,400 candidates take well under a millisecond.

Bump FEATURE_SCHEMA_VERSION whenever a feature is added, removed, reordered or its
meaning changes; saved models record it and refuse to load against another version.

Why one module of ~520 lines, above the selector's ~400-line rule: it is the schema. The column
list, the arrays each column is computed from and the expressions computing them change
together under one version number; split apart, a feature could change in one file while its
column or version stayed behind in another.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from kselect.kernels.aten.launched import ATEN_KERNEL_COLUMNS
from kselect.kernels.backend import shared_knobs
from kselect.kernels.candidate import KNOBS, Candidate
from kselect.kernels.op_names import ADDMM, BMM
from kselect.kernels.problem import DTYPE_BYTES, Problem
from kselect.selector.fingerprint import device_peaks
from kselect.selector.identity_memo import IdentityMemo

# v2 also reads a dtype's peak its fingerprint lacks (TF32's, in the bf16 datasets' fingerprints)
# from the card's datasheet: no model trained before held TF32 rows, so none read it otherwise.
FEATURE_SCHEMA_VERSION = 2

TEMPLATE_CLASSES = ("aten", "mm", "persistent_tma", "decompose_k", "other")
_TEMPLATE_CODE = {name: i for i, name in enumerate(TEMPLATE_CLASSES)}
KNOB_COLUMNS = KNOBS

# Fallbacks when a fingerprint lacks a field (CPU fingerprints, old datasets): H100/H200-like.
DEFAULT_SMEM_OPTIN = 232_448
_MAX_WARPS_PER_SM = 64
_MAX_CTAS_PER_SM = 32

# The candidate's own columns: its template class (one-hot), its knobs, two tile sizes.
_CONFIG_COLUMNS = (
    *(f"tmpl_{name}" for name in TEMPLATE_CLASSES),
    *KNOB_COLUMNS,
    "log2_tile_area",
    "acc_regs_per_thread",
)

FEATURE_NAMES: tuple[str, ...] = (
    # problem
    "M",
    "N",
    "K",
    "batch",
    "log2_M",
    "log2_N",
    "log2_K",
    "log2_flops",
    "log2_MN_over_K",
    "dtype_bytes",
    "a_transposed",
    "b_transposed",
    "op_bmm",
    "op_addmm",
    "a_inner_align16",
    "b_inner_align16",
    "c_inner_align16",
    "a_ld_align_log2",
    "b_ld_align_log2",
    "c_ld_align_log2",
    "pow2_div_M",
    "pow2_div_N",
    "pow2_div_K",
    "log2_N_over_M",
    "log2_K_over_N",
    # config
    *_CONFIG_COLUMNS,
    # derived
    "tiles_m",
    "tiles_n",
    "tiles",
    "waves",
    "last_wave_eff",
    "ctas_per_sm",
    "waves_resident",
    "pad_m",
    "pad_n",
    "pad_k",
    "k_iters",
    "smem_bytes",
    "smem_frac",
    "smem_over_limit",
    "even_k",
    "arith_intensity",
    "tile_intensity",
    "log10_t_compute_ms",
    "log10_t_memory_ms",
    "log10_t_roofline_ms",
    "log10_t_tile_traffic_ms",
    "log10_t_waves_ms",
    "log10_t_estimate_ms",
    "roofline_bound_memory",
    # device
    "sm_count",
    "peak_tflops",
    "mem_bandwidth_gbs",
    "smem_optin",
    "l2_mbytes",
    # what ATen itself launches for the problem (cuBLAS's kernel choice; kernels/aten/launched.py):
    # NaN -- missing, which the trees route by their default direction -- where nobody probed it
    *ATEN_KERNEL_COLUMNS,
)


class FeatureError(ValueError):
    """Input that cannot be featurised; the message names the field."""


# ---------------------------------------------------------------------------------------
# device
def device_constants(device: Mapping, dtype: str = "bf16") -> dict:
    """SM count, peak FLOP/s of `dtype`, bandwidth, shared memory and L2 from a fingerprint. A
    fingerprint without `dtype`'s peak (a bf16 dataset's records no TF32 peak) takes the
    datasheet's for its card (selector/fingerprint.py DEVICE_PEAKS), else bf16's."""
    if not isinstance(device, Mapping):
        raise FeatureError(f"device must be a fingerprint dict, got {type(device).__name__}")
    peaks = device.get("peak_tflops") or {}
    sheet = device_peaks(str(device.get("gpu_name") or ""))["peak_tflops"]
    peak = float(peaks.get(dtype) or sheet.get(dtype) or peaks.get("bf16") or 0.0)
    bw = float(device.get("mem_bandwidth_gbs") or 0.0)
    sm = int(device.get("sm_count") or 0)
    if sm <= 0 or peak <= 0 or bw <= 0:
        raise FeatureError(
            f"device fingerprint {device.get('gpu_name')!r} lacks sm_count/peak_tflops[{dtype}]/"
            f"mem_bandwidth_gbs (got {sm}, {peak}, {bw}): cannot featurise for it"
        )
    return {
        "sm_count": float(sm),
        "peak_tflops": peak,
        "mem_bandwidth_gbs": bw,
        "smem_optin": float(device.get("shared_memory_per_block_optin") or DEFAULT_SMEM_OPTIN),
        "l2_mbytes": float(device.get("l2_cache_bytes") or 0) / 2**20,
    }


# ---------------------------------------------------------------------------------------
# encoding inputs into plain arrays
def _pow2_divisor_log2(x: np.ndarray, cap: int = 10) -> np.ndarray:
    """log2 of the largest power of two dividing x, capped: alignment/divisibility in one number."""
    xi = x.astype(np.int64)
    low = xi & -xi
    return np.minimum(np.log2(np.maximum(low, 1)), cap)


def problem_arrays(problem: Problem) -> dict:
    """One Problem as scalars (they broadcast against candidate arrays)."""
    return {
        "M": float(problem.M),
        "N": float(problem.N),
        "K": float(problem.K),
        "batch": float(problem.batch),
        "dtype_bytes": float(problem.dtype_bytes),
        "a_t": float(problem.layout[0] == "t"),
        "b_t": float(problem.layout[1] == "t"),
        "op_bmm": float(problem.op == BMM),
        "op_addmm": float(problem.op == ADDMM),
        "dtype": problem.dtype,
    }


def _template_code(backend: str, template: str) -> int:
    if backend == "aten" or template == "aten":
        return _TEMPLATE_CODE["aten"]
    return _TEMPLATE_CODE.get(template, _TEMPLATE_CODE["other"])


class _CandidateRegistry:
    """Every candidate ever featurised gets a row in one growing table of (code, knobs).

    Turning ~2,400 Candidates into arrays is then one dict lookup each plus one fancy-index,
    which keeps selection-time featurisation near a millisecond.
    """

    def __init__(self):
        self.index: dict = {}
        self.table = np.zeros((0, 1 + len(KNOB_COLUMNS)), dtype=np.float64)

    def _add_missing(self, idx: list, candidates: Sequence[Candidate]) -> list:
        """Give every candidate without a row one (all new rows written in one block)."""
        new: dict = {}  # key -> (row number, encoded row); a repeated candidate is added once
        out = list(idx)
        for j, (i, c) in enumerate(zip(idx, candidates)):
            if i is not None:
                continue
            if not isinstance(c, Candidate):
                raise FeatureError(f"candidates must be kselect Candidates, got {type(c).__name__}")
            if c.key not in new:
                kw = shared_knobs(c)
                row = [_template_code(c.backend, c.template)] + [float(kw.get(k, 0) or 0) for k in KNOB_COLUMNS]
                new[c.key] = (len(self.index) + len(new), row)
            out[j] = new[c.key][0]
        first, need = len(self.index), len(self.index) + len(new)
        if need > self.table.shape[0]:
            grown = np.zeros((max(1024, 2 * need), self.table.shape[1]))
            grown[:first] = self.table[:first]
            self.table = grown
        self.table[first:need] = [row for _, row in new.values()]
        self.index.update((key, i) for key, (i, _) in new.items())
        return out

    def rows(self, candidates: Sequence[Candidate]) -> np.ndarray:
        get = self.index.get
        try:  # by key: a cached str whose hash is cached too (a dataclass re-hashes its fields)
            idx = [get(c.key) for c in candidates]
        except AttributeError:
            bad = next(c for c in candidates if not isinstance(c, Candidate))
            raise FeatureError(f"candidates must be kselect Candidates, got {type(bad).__name__}") from None
        if None in idx:
            idx = self._add_missing(idx, candidates)
        return self.table[np.fromiter(idx, dtype=np.int64, count=len(idx))]


_REGISTRY = _CandidateRegistry()


def candidate_arrays(candidates: Sequence[Candidate]) -> dict:
    """Template code and knobs of a candidate list as arrays."""
    if len(candidates) == 0:
        raise FeatureError("no candidates to featurise")
    enc = _REGISTRY.rows(candidates)
    out = {"template_code": enc[:, 0].astype(np.int64)}
    for i, k in enumerate(KNOB_COLUMNS):
        out[k] = enc[:, i + 1]
    return out


def frame_arrays(df) -> tuple[dict, dict]:
    """(problem arrays, candidate arrays) of dataset rows (training/data/dataset.py COLUMNS)."""
    need = ("M", "N", "K", "batch", "dtype", "layout", "op", "backend", "template") + KNOB_COLUMNS
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise FeatureError(f"rows are missing column(s) {missing}")
    dtype = df["dtype"].astype(str).to_numpy()
    unknown = sorted(set(np.unique(dtype)) - set(DTYPE_BYTES))
    if unknown:
        raise FeatureError(f"unknown dtype(s) {unknown}: expected one of {sorted(DTYPE_BYTES)}")
    layout = df["layout"].astype(str).to_numpy()
    op = df["op"].astype(str).to_numpy()
    batch = df["batch"].to_numpy(dtype=np.float64)
    prob = {
        "M": df["M"].to_numpy(dtype=np.float64),
        "N": df["N"].to_numpy(dtype=np.float64),
        "K": df["K"].to_numpy(dtype=np.float64),
        "batch": np.where(batch > 0, batch, 1.0),
        "dtype_bytes": df["dtype"].astype(str).map(DTYPE_BYTES).to_numpy(dtype=np.float64),
        "a_t": np.char.startswith(layout.astype(str), "t").astype(np.float64),
        "b_t": np.char.endswith(layout.astype(str), "t").astype(np.float64),
        "op_bmm": (op == BMM).astype(np.float64),
        "op_addmm": (op == ADDMM).astype(np.float64),
        "dtype": dtype,
    }
    present = [c for c in ATEN_KERNEL_COLUMNS if c in df.columns]
    if present:
        prob["aten_kernel"] = {c: df[c].to_numpy(dtype=np.float64) for c in present}
    backend = df["backend"].astype(str).to_numpy()
    template = df["template"].astype(str).to_numpy()
    code = np.full(len(df), _TEMPLATE_CODE["other"], dtype=np.int64)
    for name in ("mm", "persistent_tma", "decompose_k"):
        code[template == name] = _TEMPLATE_CODE[name]
    code[(backend == "aten") | (template == "aten")] = _TEMPLATE_CODE["aten"]
    cand = {"template_code": code}
    for k in KNOB_COLUMNS:
        cand[k] = df[k].fillna(0).to_numpy(dtype=np.float64)
    return prob, cand


# ---------------------------------------------------------------------------------------
# the features
# columns that need only the candidates, the dtype's width and the device's shared memory
_BLOCK_COLUMNS = (
    *_CONFIG_COLUMNS,
    "ctas_per_sm",
    "smem_bytes",
    "smem_frac",
    "smem_over_limit",
    "tile_intensity",
    "smem_optin",
)


def candidate_block(cand: Mapping, dtype_bytes, smem_optin: float) -> dict:
    """What the features need of the candidates alone (given the dtype's width and the device's
    shared memory): tile sizes with their no-tile stand-ins, and `matrix`, a feature matrix
    whose candidate-only columns are filled. The selection path memoises it per candidate
    tuple, so a GEMM of a size class seen before computes only its problem's columns."""
    code = np.asarray(cand["template_code"])
    n = code.shape[0]
    eb = np.asarray(dtype_bytes, dtype=np.float64)
    bm, bn, bk, gm, st, wp, ks = (np.asarray(cand[k], dtype=np.float64) for k in KNOB_COLUMNS)
    has_tile = bm > 0
    b = {
        "has_tile": has_tile,
        "bm": bm,
        "bn": bn,
        "bk": bk,
        "ks": ks,
        "split": np.where(ks > 0, ks, 1.0),
        "bm1": np.where(has_tile, bm, 1.0),
        "bn1": np.where(has_tile, bn, 1.0),
        "bk1": np.where(bk > 0, bk, 1.0),
    }
    wp1 = np.where(wp > 0, wp, 1.0)
    smem = np.where(has_tile, eb * (bm * bk + bn * bk) * np.maximum(st, 1.0) + 128.0, 0.0)
    # what the pipelined loop really holds: (stages - 1) buffers (the collector's pruning rule)
    smem_pipe = np.where(has_tile, eb * (bm * bk + bn * bk) * np.maximum(st - 1.0, 1.0), 0.0)
    ctas_by_smem = np.floor(smem_optin / np.maximum(smem, 1.0))
    ctas_by_warps = np.floor(_MAX_WARPS_PER_SM / wp1)
    b["ctas_per_sm"] = np.where(has_tile, np.clip(np.minimum(ctas_by_smem, ctas_by_warps), 0, _MAX_CTAS_PER_SM), 0.0)
    cols = {
        **{f"tmpl_{name}": (code == i) for i, name in enumerate(TEMPLATE_CLASSES)},
        "BLOCK_M": bm,
        "BLOCK_N": bn,
        "BLOCK_K": bk,
        "GROUP_M": gm,
        "num_stages": st,
        "num_warps": wp,
        "k_split": ks,
        "log2_tile_area": np.where(has_tile, np.log2(b["bm1"] * b["bn1"]), 0.0),
        "acc_regs_per_thread": np.where(has_tile, bm * bn / (wp1 * 32.0), 0.0),
        "ctas_per_sm": b["ctas_per_sm"],
        "smem_bytes": smem,
        "smem_frac": smem / smem_optin,
        "smem_over_limit": smem_pipe > smem_optin,
        "tile_intensity": np.where(has_tile, b["bm1"] * b["bn1"] / (b["bm1"] + b["bn1"]), 0.0),
        "smem_optin": smem_optin,
    }
    matrix = np.full((n, len(FEATURE_NAMES)), np.nan, dtype=np.float32)  # a column never written shows
    for name in _BLOCK_COLUMNS:
        matrix[:, _COLUMN[name]] = cols[name]
    b["matrix"] = matrix
    return b


_COLUMN = {name: j for j, name in enumerate(FEATURE_NAMES)}


def featurize_arrays(prob: Mapping, cand: Mapping, device: Mapping, block: Mapping | None = None) -> np.ndarray:
    """The feature matrix (n_candidates x len(FEATURE_NAMES), float32) from encoded arrays.

    `prob` values are scalars or arrays aligned with `cand`; `device` is a fingerprint dict.
    `block`: candidate_block(cand, ...) for this dtype width and device, when the caller
    remembers it (its matrix is copied, never written). Tile features of templates without
    tiles (ATen, decompose-k) are 0, never NaN; the ATen-kernel columns are NaN (missing) unless
    `prob["aten_kernel"]` gives them (scalars or arrays aligned with `cand`).
    """
    # sorted(set()), not np.unique: numpy 2's unique imports numpy.ma (once per process, inside
    # the model load: 17 ms under cProfile on the dev CPU)
    dtypes = sorted(set(np.atleast_1d(np.asarray(prob["dtype"])).tolist()))
    consts = {d: device_constants(device, str(d)) for d in dtypes}
    base = consts[dtypes[0]]
    if len(dtypes) == 1:
        peak = base["peak_tflops"]
    else:
        peak = np.vectorize(lambda d: consts[d]["peak_tflops"], otypes=[np.float64])(prob["dtype"])
    sm, bw, smem_optin = base["sm_count"], base["mem_bandwidth_gbs"], base["smem_optin"]

    M, N, K, B = (np.asarray(prob[k], dtype=np.float64) for k in ("M", "N", "K", "batch"))
    eb = np.asarray(prob["dtype_bytes"], dtype=np.float64)
    a_t, b_t = np.asarray(prob["a_t"], dtype=np.float64), np.asarray(prob["b_t"], dtype=np.float64)
    if block is None:
        block = candidate_block(cand, eb, smem_optin)
        out = block["matrix"]
    else:
        out = block["matrix"].copy()
    has_tile, bm, bn, bk, ks = (block[k] for k in ("has_tile", "bm", "bn", "bk", "ks"))
    split, bm1, bn1, bk1 = (block[k] for k in ("split", "bm1", "bn1", "bk1"))

    flops = 2.0 * B * M * N * K
    k_part = K / split

    tiles_m = np.where(has_tile, np.ceil(M / bm1), 0.0)
    tiles_n = np.where(has_tile, np.ceil(N / bn1), 0.0)
    tiles = np.where(has_tile, tiles_m * tiles_n * B * split, 0.0)
    waves = tiles / sm
    full_waves = np.ceil(waves)
    last_wave_eff = np.where(tiles > 0, waves / np.maximum(full_waves, 1.0), 0.0)
    waves_resident = tiles / (sm * np.maximum(block["ctas_per_sm"], 1.0))
    pad_m = np.where(has_tile, tiles_m * bm1 / M - 1.0, 0.0)
    pad_n = np.where(has_tile, tiles_n * bn1 / N - 1.0, 0.0)
    k_iters = np.where(bk > 0, np.ceil(k_part / bk1), 0.0)
    pad_k = np.where(bk > 0, k_iters * bk1 / k_part - 1.0, 0.0)
    even_k = np.where(bk > 0, (np.mod(k_part, bk1) == 0).astype(np.float64), 1.0)

    bytes_min = eb * B * (M * K + K * N + M * N)
    intensity = flops / bytes_min
    peak_flops = peak * 1e12
    bw_bytes = bw * 1e9
    t_compute = flops / peak_flops * 1e3
    t_memory = bytes_min / bw_bytes * 1e3
    t_roof = np.maximum(t_compute, t_memory)
    # every tile streams its A row-panel and B column-panel; no L2 reuse assumed
    traffic = np.where(has_tile, eb * B * (M * K * tiles_n + K * N * tiles_m) + eb * B * M * N * split, bytes_min)
    t_traffic = traffic / bw_bytes * 1e3
    per_tile_flops = 2.0 * bm1 * bn1 * np.ceil(k_part / bk1) * bk1
    t_waves = np.where(has_tile, full_waves * per_tile_flops / (peak_flops / sm) * 1e3, t_compute)
    t_est = np.maximum(np.maximum(t_waves, t_traffic), t_roof)

    def lg(x):
        return np.log10(np.maximum(x, 1e-9))

    a_inner = np.where(a_t > 0, M, K) * eb
    b_inner = np.where(b_t > 0, K, N) * eb
    cols = {
        "M": M,
        "N": N,
        "K": K,
        "batch": B,
        "log2_M": np.log2(M),
        "log2_N": np.log2(N),
        "log2_K": np.log2(K),
        "log2_flops": np.log2(flops),
        "log2_MN_over_K": np.log2(M * N / K),
        "dtype_bytes": eb,
        "a_transposed": a_t,
        "b_transposed": b_t,
        "op_bmm": prob["op_bmm"],
        "op_addmm": prob["op_addmm"],
        "a_inner_align16": np.mod(a_inner, 16) == 0,
        "b_inner_align16": np.mod(b_inner, 16) == 0,
        "c_inner_align16": np.mod(N * eb, 16) == 0,
        "a_ld_align_log2": _pow2_divisor_log2(a_inner, 7),
        "b_ld_align_log2": _pow2_divisor_log2(b_inner, 7),
        "c_ld_align_log2": _pow2_divisor_log2(N * eb, 7),
        "pow2_div_M": _pow2_divisor_log2(M),
        "pow2_div_N": _pow2_divisor_log2(N),
        "pow2_div_K": _pow2_divisor_log2(K),
        "log2_N_over_M": np.log2(N / M),
        "log2_K_over_N": np.log2(K / N),
        "tiles_m": tiles_m,
        "tiles_n": tiles_n,
        "tiles": tiles,
        "waves": waves,
        "last_wave_eff": last_wave_eff,
        "waves_resident": waves_resident,
        "pad_m": pad_m,
        "pad_n": pad_n,
        "pad_k": pad_k,
        "k_iters": k_iters,
        "even_k": even_k,
        "arith_intensity": intensity,
        "log10_t_compute_ms": lg(t_compute),
        "log10_t_memory_ms": lg(t_memory),
        "log10_t_roofline_ms": lg(t_roof),
        "log10_t_tile_traffic_ms": lg(t_traffic),
        "log10_t_waves_ms": lg(t_waves),
        "log10_t_estimate_ms": lg(t_est),
        "roofline_bound_memory": t_memory > t_compute,
        "sm_count": sm,
        "peak_tflops": peak,
        "mem_bandwidth_gbs": bw,
        "l2_mbytes": base["l2_mbytes"],
    }
    aten_kernel = prob.get("aten_kernel") or {}
    for name in ATEN_KERNEL_COLUMNS:
        cols[name] = aten_kernel.get(name, np.nan)
    for name, col in cols.items():
        out[:, _COLUMN[name]] = col
    return out


def featurize_candidates(
    problem: Problem, candidates: Sequence[Candidate], device: Mapping, aten_kernel: Mapping | None = None
) -> np.ndarray:
    """Selection path: the feature matrix of `candidates` for one `problem` on `device`;
    `aten_kernel`: the problem's ATEN_KERNEL_COLUMNS where ATen's launch was probed.

    A tuple of candidates (the early decision's, one object per size class) has its encoding
    and candidate-only columns remembered; any other sequence is encoded afresh."""
    if not isinstance(problem, Problem):
        raise FeatureError(f"problem must be a kselect Problem, got {type(problem).__name__}")
    prob = problem_arrays(problem)
    if aten_kernel:
        unknown = sorted(set(aten_kernel) - set(ATEN_KERNEL_COLUMNS))
        if unknown:
            raise FeatureError(f"unknown ATen kernel column(s) {unknown}")
        prob["aten_kernel"] = dict(aten_kernel)
    if type(candidates) is not tuple:
        return featurize_arrays(prob, candidate_arrays(candidates), device)
    known = _KNOWN_CANDIDATES(candidates)
    slot = (prob["dtype_bytes"], device_constants(device, problem.dtype)["smem_optin"])
    block = known["blocks"].get(slot)
    if block is None:
        block = known["blocks"][slot] = candidate_block(known["arrays"], *slot)
    return featurize_arrays(prob, known["arrays"], device, block)


# candidate tuple -> its encoding and candidate blocks (per dtype width and device shared memory)
_KNOWN_CANDIDATES = IdentityMemo(lambda cands: {"arrays": candidate_arrays(cands), "blocks": {}})


def featurize_frame(df, device: Mapping) -> np.ndarray:
    """Training path: the feature matrix of dataset rows, one row per measurement."""
    if len(df) == 0:
        raise FeatureError("no rows to featurise")
    prob, cand = frame_arrays(df)
    return featurize_arrays(prob, cand, device)


def featurize(problems, candidates, device: Mapping) -> np.ndarray:
    """Either path: (Problem, list[Candidate]) or (rows DataFrame, None / the same DataFrame)."""
    if isinstance(problems, Problem):
        return featurize_candidates(problems, candidates, device)
    if hasattr(problems, "columns"):
        return featurize_frame(problems, device)
    raise FeatureError(f"cannot featurise {type(problems).__name__}: pass a Problem or a DataFrame")


def infeasible(features: np.ndarray) -> np.ndarray:
    """Rows that cannot run: their pipeline buffers exceed the device's shared memory.

    Inductor builds them and they fail to compile; the collector prunes them unmeasured. The
    selector never spends a benchmark on them, so they are never predicted either.
    """
    return features[:, FEATURE_NAMES.index("smem_over_limit")] > 0


def estimated_time_ms(features: np.ndarray) -> np.ndarray:
    """The analytic wave/roofline estimate inside the features (the roofline baseline uses it)."""
    return 10.0 ** features[:, FEATURE_NAMES.index("log10_t_estimate_ms")].astype(np.float64)
