"""kselect's decisions as Inductor's own template lookup table, and such a table read back.

Inductor (`torch._inductor.lookup_table.LookupTableChoices`, installed as the choices handler,
with `torch._inductor.config.lookup_table.table` set) looks each GEMM up at its template stage
(`_finalize_template_configs`) under the key

    [device+]((dtype, [sizes], [strides]), ...)[+alpha=1&beta=1]+op_name

(one triple per input node, the op's scalars sorted) and, on a hit, builds only the listed
configs (`{"template_id": <template uid>, <kwargs>...}`); one listed config means nothing is
benchmarked. kselect decides at the same stage over the same input nodes, so a templates-stage
decision maps onto one table entry. What the table cannot carry, and so is left out (that GEMM
autotunes as stock Inductor would): choices built outside the template stage (CPP, CUTLASS,
kselect's FlyDSL extern kernels, which need kselect installed) and decisions naming one.

Export sources: kselect's decision cache (what compiles decided), or a shapes file ranked by
a cost model in predict mode. Import: a table whose entries carry a measured `timing` (ms)
becomes dataset rows; Inductor's tables hold configs only, and importing one says so.
"""

from __future__ import annotations

import collections
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from kselect.kernels.candidate import _SHORT, TILE_KNOBS, Candidate
from kselect.kernels.problem import Problem, ProblemError

# Inductor's scalars per op name: addmm/baddbmm key on alpha and beta. kselect's decision key
# does not record them; an exported entry assumes the defaults (what a Linear passes).
DEFAULT_SCALARS = {"addmm": {"alpha": 1, "beta": 1}, "baddbmm": {"alpha": 1, "beta": 1}}
FAMILY = {"mm": "mm", "addmm": "mm", "bmm": "bmm", "baddbmm": "bmm"}
_LONG = {short: long for long, short in _SHORT.items()}
TORCH_DTYPE = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32"}


class LookupTableError(ValueError):
    """A lookup table cannot be written or read; the message says why."""


class NoTimings(LookupTableError):
    """The table names configs but no measured times: nothing to import."""


@dataclass
class Export:
    """An Inductor lookup table and how it was made."""

    table: dict = field(default_factory=dict)  # Inductor key -> [config dict, ...]
    picks: dict = field(default_factory=dict)  # Inductor key -> kselect candidate keys
    skipped: collections.Counter = field(default_factory=collections.Counter)  # reason -> GEMMs
    conflicts: int = 0  # keys decided more than once, differently
    source: str = ""

    def summary(self) -> dict:
        return {
            "source": self.source,
            "entries": len(self.table),
            "configs": sum(len(v) for v in self.table.values()),
            "single_config_entries": sum(len(v) == 1 for v in self.table.values()),
            "skipped": dict(self.skipped),
            "conflicts": self.conflicts,
        }


def require_lookup_tables() -> None:
    """Raise LookupTableError unless this torch has Inductor's template lookup table."""
    from kselect.selector.compat import lookup_table as inductor_lookup_table

    missing = inductor_lookup_table.lookup_table_missing()
    if missing:
        raise LookupTableError(
            f"{missing}: Inductor lookup tables need a torch that has torch._inductor.lookup_table (2.11 and 2.13 do)"
        )


# ------------------------------------------------------------------------------ keys
class _Name(str):
    """A dtype name that prints bare inside a tuple, as a torch.dtype does."""

    def __repr__(self) -> str:
        return str(self)


def inductor_key(op_name: str, inputs, scalars: dict | None = None, device_key: str | None = None) -> str:
    """Inductor's lookup key for a GEMM: `inputs` = [(sizes, strides, "torch.<dtype>"), ...]
    in Inductor's input-node order (the format of LookupTableChoices.make_lookup_key)."""
    info = tuple((_Name(dtype), [int(s) for s in size], [int(s) for s in stride]) for size, stride, dtype in inputs)
    key = str(info)
    if scalars:
        key += "+" + "&".join(f"{k}={v}" for k, v in sorted(scalars.items()))
    return "+".join(([device_key] if device_key else []) + [key, op_name])


_NODE = re.compile(r"\((torch\.\w+), \[([^\]]*)\], \[([^\]]*)\]\)")


def parse_key(key: str) -> tuple[str | None, list, dict, str]:
    """(device key or None, [(sizes, strides, dtype)], scalars, op name) of an Inductor key."""
    start, end = key.find("(("), key.rfind("))")
    if start < 0 or end < 0:
        raise LookupTableError(f"lookup key {key[:120]!r} has no input tuple")
    device = key[: start - 1] if start > 0 else None
    nodes = [
        ([int(x) for x in s.split(",") if x.strip()], [int(x) for x in t.split(",") if x.strip()], d)
        for d, s, t in _NODE.findall(key[start : end + 2])
    ]
    rest = key[end + 2 :].lstrip("+").split("+")
    op = rest[-1]
    scalars = dict(p.split("=", 1) for p in rest[0].split("&")) if len(rest) == 2 else {}
    if not nodes or not op:
        raise LookupTableError(f"lookup key {key[:120]!r} is not [device+]inputs[+scalars]+op")
    return device, nodes, scalars, op


def _layout_char(size: list, stride: list) -> str:
    return "n" if size[-1] == 1 or stride[-1] == 1 else "t"


def problem_of_key(key: str) -> Problem:
    """The Problem an Inductor key describes (mat1, mat2 = the last two inputs, as Inductor's
    MMKernelInputs takes them)."""
    _, nodes, _, op = parse_key(key)
    if op not in FAMILY or len(nodes) < 2:
        raise LookupTableError(f"lookup key {key[:120]!r}: op {op!r} is not one of {sorted(FAMILY)}")
    (a_size, a_stride, dtype), (b_size, b_stride, _) = nodes[-2], nodes[-1]
    batch = a_size[0] if len(a_size) == 3 else 1
    try:
        return Problem(
            M=a_size[-2],
            N=b_size[-1],
            K=a_size[-1],
            dtype=dtype,
            layout=_layout_char(a_size, a_stride) + _layout_char(b_size, b_stride),
            op={"baddbmm": "bmm"}.get(op, op),
            batch=batch,
        )
    except ProblemError as exc:
        raise LookupTableError(f"lookup key {key[:120]!r}: {exc}") from None


def problem_inputs(problem: Problem) -> list:
    """Inductor's input nodes of a plain mm or bmm of `problem`, as (sizes, strides, dtype)."""
    M, N, K, B = problem.M, problem.N, problem.K, problem.batch
    dtype = TORCH_DTYPE[problem.dtype]
    a = ([M, K], [K, 1] if problem.layout[0] == "n" else [1, M])
    b = ([K, N], [N, 1] if problem.layout[1] == "n" else [1, K])
    if problem.op == "bmm":
        a = ([B, *a[0]], [M * K, *a[1]])
        b = ([B, *b[0]], [K * N, *b[1]])
    return [(*a, dtype), (*b, dtype)]


# ------------------------------------------------------------------------ configs
def candidate_of_key(key: str) -> Candidate:
    """A kselect candidate key ("triton:mm:BM64-BN64-...") back to its Candidate."""
    backend, template, *rest = key.split(":", 2)
    params = {}
    for part in rest[0].split("-") if rest and rest[0] else []:
        m = re.fullmatch(r"([A-Za-z]+)(\d+)", part)
        if not m or m.group(1) not in _LONG:
            raise LookupTableError(f"candidate key {key!r}: knob {part!r} is not one kselect writes")
        params[_LONG[m.group(1)]] = int(m.group(2))
    return Candidate.make(backend, template, **params)


def table_config(cand: Candidate, op_name: str, K: int, uids: dict) -> dict:
    """Inductor's config dict for one candidate; LookupTableError when the table cannot name it."""
    uid = uids.get((cand.backend, cand.template, FAMILY.get(op_name, "")))
    if uid is None:
        raise LookupTableError(f"{cand.backend}:{cand.template} is not built at Inductor's template stage")
    config = {"template_id": uid}
    kw = cand.kwargs
    if cand.backend == "triton" and cand.template == "decompose_k":
        config["k_split"] = int(kw["k_split"])
    elif cand.backend == "triton":
        if not all(k in kw for k in TILE_KNOBS):
            raise LookupTableError(f"{cand.key} lacks tile knobs {[k for k in TILE_KNOBS if k not in kw]}")
        config.update({k: int(kw[k]) for k in TILE_KNOBS})
        # derived from BLOCK_K: the first config Inductor generates carries its own value
        config["EVEN_K"] = K % int(kw["BLOCK_K"]) == 0
    return config


def candidate_of_config(config: dict, uids: dict) -> Candidate:
    """The Candidate an Inductor config dict names (the inverse of table_config)."""
    by_uid = {uid: (backend, template) for (backend, template, _), uid in uids.items()}
    uid = config.get("template_id")
    if uid not in by_uid:
        raise LookupTableError(f"template_id {uid!r} is not one of {sorted(by_uid)}")
    backend, template = by_uid[uid]
    if template == "decompose_k":
        return Candidate.make(backend, template, k_split=int(config["k_split"]))
    if backend == "triton":
        return Candidate.make(backend, template, **{k: int(config[k]) for k in TILE_KNOBS})
    return Candidate.make(backend, template)


# -------------------------------------------------------------------------- export
@dataclass
class _Decision:
    device: str
    verified: bool
    mtime: float
    path: str
    kept: list


def _read_decisions(cache_dir: Path, skipped: collections.Counter) -> dict:
    """(Inductor op name, inputs) -> [_Decision] of every templates-stage cache file."""
    found: dict = collections.defaultdict(list)
    for path in sorted(cache_dir.rglob("*.json")):
        if path.name.startswith("."):
            continue  # a writer's temp file
        try:
            data = json.loads(path.read_text())
            fields = data["key_fields"]
            kept, stage, problem = data["kept"], fields["stage"], fields["problem"]
            if not (isinstance(kept, list) and kept and all(isinstance(k, str) for k in kept)):
                raise ValueError("no kept candidate keys")
            inputs = tuple((tuple(s), tuple(t), str(d)) for s, t, d in problem["inputs"])
            op_name = str(problem["op"])
            mtime = path.stat().st_mtime
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            skipped[f"unreadable cache file ({type(exc).__name__})"] += 1
            continue
        if stage != "templates":
            continue  # the choices stage sees CPP/CUTLASS/... too: not the table's stage
        found[(op_name, inputs)].append(
            _Decision(str(fields.get("device")), bool(fields.get("verified")), mtime, str(path), kept)
        )
    return found


def export_from_cache(cache_dir, device: str | None = None, device_key: str | None = None) -> Export:
    """kselect's templates-stage decisions under `cache_dir` as an Inductor table. `device`: the
    fingerprint id to export (required when the cache holds several). Where one GEMM was
    decided more than once, a verified decision wins, else the newest file."""
    require_lookup_tables()
    from kselect.selector.compat import lookup_table as inductor_lookup_table

    cache_dir = Path(cache_dir).expanduser()
    if not cache_dir.is_dir():
        raise FileNotFoundError(f"decision cache {cache_dir} is not a directory")
    out = Export(source=f"decision cache {cache_dir}")
    found = _read_decisions(cache_dir, out.skipped)
    devices = sorted({d.device for ds in found.values() for d in ds})
    if device is None and len(devices) > 1:
        raise LookupTableError(f"{cache_dir} holds decisions for devices {devices}: pass --device ID")
    if device is not None and device not in devices:
        raise LookupTableError(f"{cache_dir} holds no decision for device {device!r} (it has {devices})")
    uids = inductor_lookup_table.lookup_template_uids()
    for (op_name, inputs), decisions in found.items():
        decisions = [d for d in decisions if device is None or d.device == device]
        if not decisions:
            continue
        best = max(decisions, key=lambda d: (d.verified, d.mtime, d.path))
        out.conflicts += any(d.kept != best.kept for d in decisions)
        add_entry(out, op_name, list(inputs), best.kept, uids, device_key)
    return out


def add_entry(out: Export, op_name: str, inputs: list, kept: list, uids: dict, device_key: str | None) -> None:
    """One GEMM's kept candidates as a table entry of `out` (or a reason in its `skipped`)."""
    if op_name not in FAMILY:
        out.skipped[f"op {op_name!r} is not an mm/addmm/bmm/baddbmm"] += 1
        return
    K = int(inputs[-2][0][-1])  # mat1 (Inductor's MMKernelInputs: the second-to-last input)
    try:
        configs = [table_config(candidate_of_key(k), op_name, K, uids) for k in kept]
    except LookupTableError as exc:
        out.skipped[f"kept a choice the table cannot name ({exc})"] += 1
        return
    key = inductor_key(op_name, inputs, DEFAULT_SCALARS.get(op_name), device_key)
    out.table[key] = configs
    out.picks[key] = list(kept)


def export_from_model(
    problems, model, search_space: str = "default", device_key: str | None = None, aten_margin: float | None = None
) -> Export:
    """Rank each problem's candidates (ATen + Inductor's Triton templates, kselect's enumeration)
    with a cost model and keep its predict-mode pick, as the selector would (`aten_margin`:
    enable()'s, default the selector's). Only plain mm and bmm: an addmm's key names its bias
    node, which a shapes file does not describe."""
    require_lookup_tables()
    from kselect.kernels.triton.space import triton_space
    from kselect.selector.compat import lookup_table as inductor_lookup_table
    from kselect.selector.decide.rankers import RankerUnavailable
    from kselect.selector.inductor.hook import Selector

    out = Export(
        source=f"cost model {getattr(model, 'metadata_', {}).get('dataset_hash', '')[:16]}"
        f" ({search_space} space, predict)"
    )
    # the selector itself decides, so the table holds exactly what predict mode would keep
    selector = Selector("predict", model=model, **({} if aten_margin is None else {"aten_margin": float(aten_margin)}))
    fingerprint = getattr(model, "fingerprint", None) or {}
    uids = inductor_lookup_table.lookup_template_uids()
    for problem in problems:
        if problem.op not in ("mm", "bmm"):
            out.skipped[f"{problem.op}: its Inductor key names the bias node; export it from a decision cache"] += 1
            continue
        cands = [Candidate.make("aten", problem.op)] + list(triton_space(problem, search_space, ("mm", "decompose_k")))
        try:
            kept, _ = selector.select("templates", problem, {}, fingerprint, cands)
        except RankerUnavailable as exc:
            out.skipped[f"the model does not rank it ({exc.cause})"] += 1
            continue
        if not kept:
            out.skipped["the selector kept nothing it could name"] += 1
            continue
        add_entry(out, problem.op, problem_inputs(problem), [cands[i].key for i in kept], uids, device_key)
    return out


def write_table(export: Export, path) -> Path:
    """The table alone, as JSON (`config.lookup_table.table = json.load(f)`), written atomically."""
    from kselect.selector.atomic_write import write_text

    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(export.table, indent=1, sort_keys=True))
    return path


# -------------------------------------------------------------------------- import
def _timing(config: dict) -> float | None:
    """A config's measured time (ms): its own `timing`, or `metadata.timing` (the field name
    Inductor's table recorder gives a benchmarked choice's time)."""
    t = config.get("timing")
    if t is None and isinstance(config.get("metadata"), dict):
        t = config["metadata"].get("timing")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None


def read_table(path) -> dict:
    path = Path(path).expanduser()
    try:
        table = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise LookupTableError(f"{path}: not a readable JSON lookup table ({exc})") from None
    if not isinstance(table, dict) or not all(isinstance(v, list) for v in table.values()):
        raise LookupTableError(f"{path}: a lookup table is a JSON object of key -> list of configs")
    return table


def import_rows(path, fingerprint_id: str) -> tuple[list[dict], collections.Counter]:
    """Dataset rows (status ok, method `lookup_table`) for every config that carries a timing;
    NoTimings when none does (Inductor's own tables hold configs only)."""
    from kselect.selector.compat import lookup_table as inductor_lookup_table
    from kselect.training.data.rows import row_for

    table = read_table(path)
    timed = sum(_timing(c) is not None for v in table.values() for c in v if isinstance(c, dict))
    if not timed:
        raise NoTimings(
            f"{path}: none of its {sum(len(v) for v in table.values())} configs carries a "
            "measured time ('timing' ms); Inductor's lookup tables hold configs only, so "
            "there is nothing to learn from: nothing imported"
        )
    require_lookup_tables()
    uids = inductor_lookup_table.lookup_template_uids()
    rows, skipped = [], collections.Counter()
    for key, configs in table.items():
        try:
            problem = problem_of_key(key)
        except LookupTableError:
            skipped["key not understood"] += len(configs)
            continue
        for config in configs:
            ms = _timing(config) if isinstance(config, dict) else None
            if ms is None or not math.isfinite(ms) or ms <= 0:
                skipped["no finite positive timing"] += 1
                continue
            try:
                cand = candidate_of_config(config, uids)
            except (LookupTableError, KeyError, TypeError, ValueError):
                skipped["config not understood"] += 1
                continue
            rows.append(
                row_for(
                    problem,
                    cand,
                    time_ms=ms,
                    time_min_ms=ms,
                    time_max_ms=ms,
                    method="lookup_table",
                    fingerprint_id=fingerprint_id,
                    worker="import-lookup-table",
                )
            )
    return rows, skipped


def import_table(path, out_dir, fingerprint_id: str) -> dict:
    """Append the table's timed configs to the dataset at `out_dir` (rows it already holds are
    left alone); returns a summary."""
    from kselect.training.data.dataset import DatasetDir

    if not fingerprint_id:
        raise LookupTableError("--fingerprint-id is required: the rows must name the device that measured them")
    rows, skipped = import_rows(path, fingerprint_id)
    ds = DatasetDir(out_dir)
    if ds.fingerprint_path.exists() and ds.read_fingerprint().get("fingerprint_id") != fingerprint_id:
        raise LookupTableError(
            f"{out_dir} was measured on {ds.read_fingerprint().get('fingerprint_id')}, "
            f"not {fingerprint_id}: use another output directory"
        )
    have = set()
    if ds.exists():
        old = ds.load()
        have = set(zip(old["problem_key"], old["candidate_key"]))
    new, seen = [], set(have)
    for row in rows:
        ident = (row["problem_key"], row["candidate_key"])
        if ident in seen:
            skipped["already in the dataset"] += 1
            continue
        seen.add(ident)
        new.append(row)
    part = ds.append(new, tag="lookup-table")
    return {"imported": len(new), "skipped": dict(skipped), "part": str(part) if part else None}
