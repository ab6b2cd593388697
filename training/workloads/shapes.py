"""Named, seeded GEMM workload sets, and CSV import/export of shape lists.

Linear layers of public model configs (hidden size, heads, KV heads, MLP size, vocab),
forward (x @ W^T: layout 'nt') and backward (dX = dY @ W: 'nn'; dW = dY^T @ X: 'tn'),
attention bmm shapes, and log-uniform random shapes. Token counts M run from 1 to 16384
and include non-powers of two. Everything is deterministic for a given seed.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from kselect.kernels.problem import Problem, ProblemError
from kselect.training.workloads.model_configs import MODELS, UNSEEN_MODELS, ModelConfig  # noqa: F401 -- the sets' models

UNSEEN_TOKEN_COUNTS = (2, 8, 32, 128, 512, 2048, 8192)

# Token counts: powers of two and deliberately awkward values (decode batches, ragged prefill).
TOKEN_COUNTS = (1, 7, 16, 33, 64, 100, 128, 256, 333, 512, 1000, 1024, 2048, 3000, 4096, 8192, 16384)
# What a collection takes when no workload is named: never the held-out families.
TRAINING_WORKLOADS = ("forward", "backward", "attention", "random", "large")
WORKLOADS = TRAINING_WORKLOADS + ("unseen", "fp8", "fp8-unseen")  # fp8: fp8_shapes.py
# M of the "large" workload: decode batches and prefill/training token counts above 16.
LARGE_MID_M = (17, 24, 40, 64, 96, 128, 200, 256)
LARGE_BIG_M = (333, 512, 1000, 2048, 4096, 8192)
BF16_ALIGNMENT = 8  # elements: Inductor pads a compute-bound bf16 GEMM's dims to this


def forward_shapes(model: str, token_counts=TOKEN_COUNTS, dtype="bf16") -> list[Problem]:
    cfg = MODELS[model]
    out = []
    for m in token_counts:
        if model == "mixtral-8x7b":
            m = max(1, math.ceil(m * 2 / 8))  # top-2 of 8 experts: tokens per expert, on average
        for layer, (n, k) in cfg.linears().items():
            if model == "mixtral-8x7b" and layer not in ("gate_up", "down"):
                continue
            out.append(Problem(m, n, k, dtype, "nt", "mm", model=f"{model}"))
    return out


def backward_shapes(model: str, token_counts=TOKEN_COUNTS, dtype="bf16") -> list[Problem]:
    """dX = dY @ W (M x K from M x N times N x K) and dW = dY^T @ X (N x K over M tokens)."""
    out = []
    for p in forward_shapes(model, token_counts, dtype):
        out.append(Problem(p.M, p.K, p.N, dtype, "nn", "mm", model=p.model))
        out.append(Problem(p.N, p.K, p.M, dtype, "tn", "mm", model=p.model))
    return out


def attention_shapes(dtype="bf16") -> list[Problem]:
    """Q @ K^T and P @ V per (batch*heads), for a few models and sequence lengths."""
    out = []
    for model in ("llama3-8b", "gpt2", "gpt-neox-20b"):
        cfg = MODELS[model]
        for seq in (128, 512, 1024, 2048, 4096):
            bh = max(1, cfg.heads * (8192 // seq) // 8)
            out.append(Problem(seq, seq, cfg.head_dim, dtype, "nt", "bmm", batch=bh, model=model))
            out.append(Problem(seq, cfg.head_dim, seq, dtype, "nn", "bmm", batch=bh, model=model))
    return out


def random_shapes(n: int = 200, seed: int = 0, dtype="bf16", lo: int = 1, hi: int = 16384) -> list[Problem]:
    """Log-uniform M, N, K; N rounded to a multiple of 16 and K to 256, as real layer widths
    are (and so that the dataset shares compiled kernels across shapes); M stays ragged."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        m, nn, k = np.exp(rng.uniform(math.log(lo), math.log(hi), size=3)).round().astype(int)
        nn = max(16, int(nn) // 16 * 16)
        k = max(256, int(k) // 256 * 256)
        out.append(Problem(int(max(m, 1)), nn, k, dtype, "nt", "mm", model="random"))
    return out


def padded_as_compiled(m: int, n: int, k: int, alignment: int = BF16_ALIGNMENT, gpu: str = "H200") -> int:
    """N as Inductor's mm padding compiles it: the next multiple of the dtype's 16-byte
    alignment when the GEMM is compute-bound (pad_mm: arithmetic intensity
    MNK / (MK + NK + MN) above half the device's bf16 flop-per-byte balance, from its
    datasheet peaks), else as written (Inductor then also benchmarks the padded GEMM against
    the original; this is the compute-bound side of that rule)."""
    from kselect.selector.fingerprint import device_peaks

    peaks = device_peaks(gpu)
    machine_balance = 0.5 * 1e3 * peaks["peak_tflops"]["bf16"] / peaks["mem_bandwidth_gbs"]
    if n == 1 or n % alignment == 0 or m * n * k / (m * k + n * k + m * n) <= machine_balance:
        return n
    return (n // alignment + 1) * alignment


def large_shapes(seed: int = 0, mid: int = 32, big: int = 40, dtype="bf16") -> list[Problem]:
    """Seeded GEMMs with M > 16 for whole-space measurement: `mid` with 16 < M <= 256 and `big`
    with M > 256, drawn from every family's projections (not lm_head, whose vocabulary makes
    one shape cost as much as ten) in the forward (nt), dX (nn) and dW (tn: M > 256 class,
    M the layer's width, K the token count) layouts, plus
    GPT-2's lm_head with its 50257-wide vocabulary as Inductor compiles it. Shapes come
    grouped by layout, the two classes alternating inside each group, so a collection stopped
    early has spanned both classes and compiled as few kernels as it could."""
    rng = np.random.default_rng(seed)
    pool = []
    for name, cfg in MODELS.items():
        for layer, (n, k) in cfg.linears().items():
            if layer == "lm_head":
                continue
            pool.append((name, n, k))
    gpt2 = MODELS["gpt2"]

    def draw(ms, count):
        out = []
        for i in range(count):
            m = int(ms[i % len(ms)])
            if i % 10 == 9:  # one in ten: GPT-2's lm_head, N as compiled (forward)
                out.append(
                    Problem(
                        m, padded_as_compiled(m, gpt2.vocab, gpt2.hidden), gpt2.hidden, dtype, "nt", "mm", model="gpt2"
                    )
                )
                continue
            name, n, k = pool[int(rng.integers(len(pool)))]
            # dW's M is the layer's width, not a token count: only in the M > 256 class, and
            # only where that width stays within the class's range.
            layouts = ("nt", "nn", "tn") if m > 256 and n <= max(LARGE_BIG_M) else ("nt", "nn")
            layout = layouts[int(rng.integers(len(layouts)))]
            if layout == "nt":
                out.append(Problem(m, n, k, dtype, "nt", "mm", model=name))
            elif layout == "nn":
                out.append(Problem(m, k, n, dtype, "nn", "mm", model=name))
            else:  # dW = dY^T @ X: N x K over m tokens
                out.append(Problem(n, k, m, dtype, "tn", "mm", model=name))
        return out

    mids = draw(rng.permutation(LARGE_MID_M), mid)
    bigs = draw(rng.permutation(LARGE_BIG_M), big)
    out = []
    for i in range(max(len(mids), len(bigs))):
        out += bigs[i : i + 1] + mids[i : i + 1]
    # Grouped by layout (a stable sort keeps the classes alternating inside each group): each
    # layout compiles its own ~2,400 kernels, which every later shape of the group reuses.
    return sorted(dedup(out), key=lambda p: ("nt", "nn", "tn").index(p.layout))


def unseen_shapes(dtype="bf16") -> list[Problem]:
    """The held-out benchmark: every projection GEMM (qkv, attention out, gate/up, down,
    lm_head) of families absent from the training data, forward, at UNSEEN_TOKEN_COUNTS."""
    out = []
    for name, cfg in UNSEEN_MODELS.items():
        for m in UNSEEN_TOKEN_COUNTS:
            for n, k in cfg.linears().values():
                out.append(Problem(m, n, k, dtype, "nt", "mm", model=name))
    return out


def workload(
    name: str, *, models=None, seed: int = 0, n_random: int = 200, dtype="bf16", token_counts=TOKEN_COUNTS
) -> list[Problem]:
    """One named workload set; `models` restricts the model families (not the fp8 sets')."""
    if name.startswith("fp8"):
        from kselect.training.workloads.fp8_shapes import fp8_workload

        return fp8_workload(name)
    models = list(models or MODELS)
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise ProblemError(f"unknown model(s) {unknown}: known {sorted(MODELS)}")
    if name == "forward":
        return [p for m in models for p in forward_shapes(m, token_counts, dtype)]
    if name == "backward":
        return [p for m in models for p in backward_shapes(m, token_counts, dtype)]
    if name == "attention":
        return attention_shapes(dtype)
    if name == "random":
        return random_shapes(n_random, seed, dtype)
    if name == "large":
        return large_shapes(seed, dtype=dtype)
    if name == "unseen":
        return unseen_shapes(dtype)
    raise ProblemError(f"unknown workload {name!r}: expected one of {WORKLOADS}")


def dedup(problems: list[Problem]) -> list[Problem]:
    seen, out = set(), []
    for p in problems:
        if p.key not in seen:
            seen.add(p.key)
            out.append(p)
    return out


# -- CSV -----------------------------------------------------------------------------
CSV_COLUMNS = ("M", "N", "K", "op", "dtype", "layout", "batch", "model")
SCALED_CSV_COLUMNS = ("out_dtype", "scaling", "fast_accum")  # written where a scaled_mm is listed


def read_shapes_csv(path: str | Path) -> list[Problem]:
    """Columns M,N,K required; op, dtype, layout, batch, model (and scaled_mm's out_dtype,
    scaling, fast_accum) optional."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"shapes file {path} does not exist")
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        cols = [c.strip() for c in (reader.fieldnames or [])]
        missing = {"M", "N", "K"} - set(cols)
        if missing:
            raise ProblemError(f"{path}: missing column(s) {sorted(missing)}; header is {cols}")
        out = []
        for lineno, row in enumerate(reader, start=2):
            row = {k.strip(): (v.strip() if isinstance(v, str) else v) for k, v in row.items() if k}
            row = {k: v for k, v in row.items() if v not in ("", None)}
            try:
                out.append(Problem.from_dict(row))
            except ProblemError as exc:
                raise ProblemError(f"{path}:{lineno}: {exc}") from None
    return out


def read_workload_column(path: str | Path) -> list[str]:
    """The optional `workload` tag of each row of a shapes CSV ('' where absent)."""
    with open(path, newline="") as fh:
        return [(row.get("workload") or "").strip() for row in csv.DictReader(fh)]


def write_shapes_csv(problems: list[Problem], path) -> None:
    fh = open(path, "w", newline="") if not hasattr(path, "write") else path
    try:
        w = csv.writer(fh)
        scaled = any(p.op == "scaled_mm" for p in problems)
        w.writerow(CSV_COLUMNS + (SCALED_CSV_COLUMNS if scaled else ()))
        for p in problems:
            extra = [p.out_dtype, p.scaling, p.fast_accum] if scaled else []
            w.writerow([p.M, p.N, p.K, p.op, p.dtype, p.layout, p.batch, p.model, *extra])
    finally:
        if fh is not path:
            fh.close()


def select_shapes(
    workloads=None,
    models=None,
    shapes_file=None,
    seed: int = 0,
    n_random: int = 200,
    dtype: str = "bf16",
    max_gflop: float = 0.0,
) -> tuple[list[Problem], dict[str, str]]:
    """Problems and a problem-key -> workload-name map: the rows of `shapes_file`, else the
    named `workloads` (default: the training ones) of the given model families; without
    duplicates and, with `max_gflop`, without shapes above that many GFLOP."""
    tags = {}
    if shapes_file:
        problems = read_shapes_csv(shapes_file)
        tags = {p.key: t or "file" for p, t in zip(problems, read_workload_column(shapes_file))}
    else:
        problems = []
        for name in workloads or TRAINING_WORKLOADS:
            ps = workload(name, models=models, seed=seed, n_random=n_random, dtype=dtype)
            for p in ps:
                tags.setdefault(p.key, name)
            problems += ps
    problems = dedup(problems)
    if max_gflop:
        problems = [p for p in problems if p.flops <= max_gflop * 1e9]
    return problems, tags
