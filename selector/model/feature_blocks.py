"""The optional feature blocks: columns appended after features.py's FEATURE_NAMES only by a
model trained with them (its sidecar names each, with its version); every other model's vectors
stay FEATURE_NAMES alone under FEATURE_SCHEMA_VERSION. Bump a block's version when its columns
change. Two blocks: the GEMM's pointwise epilogue, as Inductor's lowering reads it, and fp8
scaled_mm's problem columns (scaled_features.py; a model holding scaled_mm must carry them)."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from kselect.kernels.candidate import Candidate
from kselect.kernels.epilogue import NO_EPILOGUE, OP_KINDS, Epilogue, fuses_epilogue
from kselect.kernels.op_names import SCALED_MM
from kselect.selector.model.features import FEATURE_NAMES, FeatureError, device_constants
from kselect.selector.model.scaled_features import SCALED_MM_FEATURE_NAMES, scaled_mm_problem_features

EPILOGUE_BLOCK_VERSION = 1
EPILOGUE_FEATURE_NAMES: tuple[str, ...] = (
    "epi_fusable",  # the GEMM has an epilogue a template can fuse
    "epi_n_ops",
    *(f"epi_ops_{kind}" for kind in OP_KINDS),
    "epi_extra_inputs",
    "log2_epi_extra_bytes",  # log2(1 + bytes): the tensors it reads besides the GEMM's output
    "log2_epi_out_bytes",  # log2(1 + bytes) it writes
    "epi_output_escapes",  # the GEMM's own output is used elsewhere too: written however it fuses
    "log10_t_epi_fused_ms",  # its traffic inside a template: extras read, results written
    "log10_t_epi_separate_ms",  # as its own kernel: the same plus the GEMM's output written and re-read
    "cand_fuses_epilogue",  # this candidate can absorb it (epilogue.fuses_epilogue)
)
SCALED_MM_BLOCK_VERSION = 1
FEATURE_BLOCKS = {
    "epilogue": (EPILOGUE_BLOCK_VERSION, EPILOGUE_FEATURE_NAMES),
    SCALED_MM: (SCALED_MM_BLOCK_VERSION, SCALED_MM_FEATURE_NAMES),  # named for its op
}


def feature_names(blocks: Sequence[str] = ()) -> tuple[str, ...]:
    """FEATURE_NAMES followed by the named optional blocks' columns, in the order given."""
    unknown = [b for b in blocks if b not in FEATURE_BLOCKS]
    if unknown:
        raise FeatureError(f"unknown feature block(s) {unknown}; known: {sorted(FEATURE_BLOCKS)}")
    return FEATURE_NAMES + tuple(name for b in blocks for name in FEATURE_BLOCKS[b][1])


def block_declaration(blocks: Sequence[str]) -> list[dict]:
    """What a sidecar says of the optional blocks a model was trained with: name and version each."""
    feature_names(blocks)  # an unknown block is an error naming it
    return [{"name": b, "version": FEATURE_BLOCKS[b][0]} for b in blocks]


def with_blocks(
    X: np.ndarray,
    blocks: Sequence[str],
    candidates: Sequence[Candidate],
    device: Mapping,
    epilogue: Epilogue | None = None,
    problem=None,
) -> np.ndarray:
    """`X` (one GEMM's FEATURE_NAMES rows) followed by the named blocks' columns, in their order,
    float32; `X` itself when no block is named, so a model without blocks sees exactly what it
    always saw. `problem`: the GEMM's Problem, which the scaled_mm block reads (every op's rows
    carry it, as the model was trained)."""
    if not blocks:
        return X
    feature_names(blocks)
    parts = [X]
    for block in blocks:
        if block == "epilogue":
            parts.append(epilogue_block(epilogue, candidates, device))
        else:  # "scaled_mm": the problem's columns on every row
            if problem is None:
                raise FeatureError("the scaled_mm feature block needs the GEMM's Problem")
            parts.append(np.tile(scaled_mm_problem_features(problem), (len(X), 1)))
    return np.hstack(parts).astype(np.float32)


def epilogue_block(epilogue: Epilogue | None, candidates: Sequence[Candidate], device: Mapping) -> np.ndarray:
    """The epilogue block of one GEMM's candidates, (len(candidates), len(EPILOGUE_FEATURE_NAMES)):
    the same epilogue columns on every row, then whether each candidate can fuse it. None or an
    empty epilogue: zeros, and infinitely fast traffic (-inf would break the trees: log10 of 1 ns).
    A byte count unknown (a symbolic size) is NaN, the trees' missing value."""
    e = epilogue or NO_EPILOGUE
    bw = device_constants(device)["mem_bandwidth_gbs"] * 1e9
    extra, out, gemm_out = (np.nan if b is None else float(b) for b in (e.extra_bytes, e.out_bytes, e.gemm_out_bytes))
    fused = extra + out + (gemm_out if e.gemm_output_escapes else 0.0)  # an escaping output is written too
    separate = extra + out + 2.0 * gemm_out  # the GEMM's output written, then read back
    row = [
        float(e.fusable),
        float(len(e.ops)),
        *(float(e.kind_count(kind)) for kind in OP_KINDS),
        float(e.extra_inputs),
        np.log2(1.0 + extra),
        np.log2(1.0 + out),
        float(e.gemm_output_escapes),
        np.log10(max(fused / bw * 1e3, 1e-6)) if e.ops else -6.0,
        np.log10(max(separate / bw * 1e3, 1e-6)) if e.ops else -6.0,
    ]
    fuses = np.fromiter((e.fusable and fuses_epilogue(c) for c in candidates), dtype=np.float64, count=len(candidates))
    return np.column_stack([np.tile(np.array(row, dtype=np.float64), (len(candidates), 1)), fuses])
