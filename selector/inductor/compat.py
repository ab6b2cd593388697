"""Everything that touches Inductor's private API, in one place (torch 2.11 and 2.13).

- `ktc_candidate`: an Inductor KernelTemplateChoice -> our `Candidate` (same key space as
  the collector, so measurements and Inductor's choices line up).
- `FilteringChoices`: an `InductorChoices` subclass that sees every template's choices
  before code generation (`_finalize_template_configs`), records them, and keeps only
  those a predicate accepts.
- `choices_handler`: install such a handler for the duration of a compile.
- `make_selecting_choices`: the selector's handler; it also lets FlyDSL join mm/addmm
  (`get_template_configs`), compiles what survives (`_finalize_template_configs`) and keeps
  FlyDSL outputs in a fixed layout (`_need_to_fix_layout`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import operator
import threading
from typing import Callable, Iterable

from kselect.kernels.backend import BackendError
from kselect.kernels.candidate import Candidate
from kselect.kernels.flydsl import space as flydsl_space
from kselect.selector.decide.candidate_memo import IdentityMemo

log = logging.getLogger(__name__)

_TILE_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_stages", "num_warps")

# The torch releases this layer is written and tested for (pyproject.toml pins the same range):
# 2.11 on the GPU machine, 2.13 in CI. Another release may move a private name this file reads.
SUPPORTED_TORCH = ((2, 11), (2, 13))


def torch_support_problem(version: str | None = None) -> str | None:
    """Why this torch is outside the supported range, or None when it is inside."""
    import torch

    text = version if version is not None else torch.__version__
    try:
        release = tuple(int(part) for part in text.split("+")[0].split(".")[:2])
    except ValueError:
        return f"torch {text}: cannot read its version"
    low, high = SUPPORTED_TORCH
    if not low <= release <= high:
        return (
            f"torch {text} is outside kselect's supported range "
            f"{low[0]}.{low[1]}-{high[0]}.{high[1]} (its Inductor hooks are private API)"
        )
    return None


@functools.lru_cache(maxsize=256)
def template_of(uid: str) -> tuple[str, str]:
    """Inductor template uid -> (backend, template) in our naming."""
    u = uid.lower()
    if flydsl_space.CHOICE_NAME in u:  # an ExternKernelChoice, uid "aten::flydsl_gemm_<op>"
        return flydsl_space.BACKEND, flydsl_space.TEMPLATE
    if u.startswith("aten") or "extern" in u:
        op = u.split("::", 1)[1] if "::" in u else "mm"
        return "aten", {"mm": "mm", "addmm": "addmm", "bmm": "bmm"}.get(op, op)
    if "decompose_k" in u:
        return "triton", "decompose_k"
    if "persistent_tma" in u:
        return "triton", "persistent_tma"
    if u in ("triton::mm", "triton::bmm", "mm", "bmm"):
        return "triton", "mm"
    return "other", u


def template_kind(template) -> tuple[str, str]:
    """`template_of` an Inductor template object (a KernelTemplate or ExternKernelChoice)."""
    return template_of(str(getattr(template, "uid", None) or getattr(template, "name", "")))


def ktc_params(ktc) -> dict:
    try:
        return dict(ktc.params.to_kwargs())
    except Exception:  # params of extern choices may not convert
        return {}


_tiles_of = operator.itemgetter(*_TILE_KEYS)
# (template, tile knobs) -> Candidate for Triton tile templates. Inductor hands over
# ~2,400 fresh KTCs per EXHAUSTIVE GEMM; building each Candidate anew (copying its kwargs,
# sorting them, interning) cost 7.5 ms per GEMM on the dev CPU, more than the ranking.
_TILE_MEMO: dict = {}


def ktc_candidate(ktc) -> Candidate:
    kw = getattr(ktc.params, "kwargs", None)  # DictKernelTemplateParams: read, never copied
    memo_key = None
    if type(kw) is dict:
        try:  # keyed by the template object (module-level in Inductor): no uid string to build
            memo_key = (ktc.template, _tiles_of(kw))
            hit = _TILE_MEMO.get(memo_key)
        except (KeyError, TypeError):  # not a tile template / an unhashable knob value
            memo_key = hit = None
        if hit is not None:
            return hit
    backend, template = template_kind(ktc.template)
    kw = ktc_params(ktc)
    if backend == "aten":
        return Candidate.make("aten", template)
    if backend == flydsl_space.BACKEND:
        return flydsl_space.candidate(**kw)
    if template == "decompose_k":
        return Candidate.make("triton", "decompose_k", k_split=int(kw["k_split"]))
    if backend == "triton" and all(k in kw for k in _TILE_KEYS):
        cand = Candidate.make("triton", template, **{k: int(kw[k]) for k in _TILE_KEYS})
        if memo_key is not None:
            _TILE_MEMO[memo_key] = cand
        return cand
    return Candidate.make(backend, template, **{k: v for k, v in kw.items() if isinstance(v, (int, str, bool))})


def prime_ktc_memo(candidates) -> int:
    """Fill the KTC -> candidate memo for Triton tile candidates ahead of the first GEMM (at
    model load), so a compile's first decision does not build ~2,400 candidates itself (~20 ms
    on the H200 host). Returns how many (template, tiles) entries it added."""
    try:
        from torch._inductor.kernel.bmm import bmm_template
        from torch._inductor.kernel.mm import mm_template, persistent_tma_mm_template
    except ImportError:  # another torch layout: the memo simply fills on first use
        return 0
    templates = {"mm": (mm_template, bmm_template), "persistent_tma": (persistent_tma_mm_template,)}
    added = 0
    for c in candidates:
        for template in templates.get(c.template, ()) if c.backend == "triton" else ():
            try:
                key = (template, _tiles_of(c.kwargs))
            except KeyError:
                continue
            if key not in _TILE_MEMO:
                _TILE_MEMO[key] = c
                added += 1
    return added


def ktc_candidates(ktcs) -> list:
    """`ktc_candidate` of each KTC; the memoised tile templates (nearly all of an EXHAUSTIVE
    space) inline, without a call per KTC."""
    get, out = _TILE_MEMO.get, []
    append = out.append
    for ktc in ktcs:
        kw = getattr(ktc.params, "kwargs", None)
        hit = None
        if type(kw) is dict:
            try:
                hit = get((ktc.template, _tiles_of(kw)))
            except (KeyError, TypeError):
                pass
        append(hit if hit is not None else ktc_candidate(ktc))
    return out


class PlanMissed(Exception):
    """An early decision named a choice Inductor's generators did not yield (e.g. a config its
    heuristic prunes on this GPU): the handler then takes the usual path, generating all."""


def template_candidates(problem, templates, search_space: str, generate: Callable | None = None) -> tuple | None:
    """The candidates Inductor's generators would yield for `templates`, in Inductor's template
    order: kselect's own enumeration of ATen and the Triton tile/decompose-k templates (rests on
    kernels/triton/space.py equalling Inductor's heuristics: tests/kernels/test_triton_space.py on the
    CPU, tests/kernels/test_gpu_space.py on the H200), and `generate(template)` -- Inductor's own
    generator, mapped -- for any other template (torch 2.11 passes ROCm's contiguous_mm on CUDA
    too, where it yields nothing). None when such a template comes and `generate` is None.

    A tuple; built from memoised parts only (the usual case), it is the same object for every
    GEMM with the same parts, i.e. of one size class, so the ranker's per-candidate work
    (features.featurize_candidates) is remembered per size class."""
    from kselect.kernels.triton.space import template_space

    space = search_space.lower()
    parts: list = []
    fresh = False  # a part Inductor generated for this GEMM: no memo
    for t in templates:
        backend, name = template_kind(t)
        if backend == "aten":
            parts.append(_aten_part(name))
        elif backend == "triton" and name in ("mm", "persistent_tma", "decompose_k"):
            parts.append(template_space(problem, name, space))
        elif generate is not None:
            part = tuple(generate(t))
            fresh = fresh or bool(part)
            parts.append(part)
        else:
            return None
    return _join(parts) if fresh else _JOINED.of_parts(tuple(parts))


@functools.lru_cache(maxsize=None)
def _aten_part(name: str) -> tuple:
    return (Candidate.make("aten", name),)


def _join(parts: tuple) -> tuple:
    return tuple(c for part in parts for c in part)


# parts (memoised tuples, interned ATen) -> one joined tuple, by the identity of each part
_JOINED = IdentityMemo(_join, size=256)


def templates_of(templates, candidates) -> list:
    """The templates (Inductor objects) that generate any of `candidates`."""
    wanted = {(c.backend, c.template) for c in candidates}
    return [t for t in templates if template_kind(t) in wanted]


def pick_ktcs(template_choices: dict, wanted) -> list:
    """The KTCs that map to the `wanted` candidates, pulled from Inductor's lazy generators
    only until all are found (each KTC pulled costs Inductor a config conversion); raises
    PlanMissed when a generator runs out first."""
    left = set(wanted)
    found = []
    for gen in template_choices.values():
        for ktc in gen:
            cand = ktc_candidate(ktc)
            if cand in left:
                found.append(ktc)
                left.discard(cand)
                if not left:
                    return found
    raise PlanMissed(f"Inductor generated none of {sorted(map(str, left))[:4]}")


def _base_choices_class():
    from torch._inductor.choices import InductorChoices

    return InductorChoices


def make_filtering_choices(keep: Callable[[Candidate], bool] | None = None, record: list | None = None):
    """An InductorChoices instance that records every candidate and keeps those `keep` accepts."""
    base = _base_choices_class()

    class FilteringChoices(base):
        def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
            kept = []
            for _uid, gen in template_choices.items():
                for ktc in gen:
                    cand = ktc_candidate(ktc)
                    if record is not None:
                        record.append((op_name, cand))
                    if keep is None or keep(cand):
                        kept.append(ktc)
            return kept

    return FilteringChoices()


@contextlib.contextmanager
def choices_handler(handler):
    """Install `handler` as Inductor's choices handler (thread-local) for a compile."""
    from torch._inductor.virtualized import V

    old = V.choices
    V.set_choices_handler(handler)
    try:
        yield handler
    finally:
        V.set_choices_handler(old)


def _register_with_selector_cache(adder: str, attribute: str, fn) -> Callable[[], None]:
    """Call select_algorithm.<adder>(fn); return a function that takes fn back off the
    algorithm-selector cache's <attribute> list (Inductor offers only clear-all)."""
    from torch._inductor import select_algorithm as sa

    getattr(sa, adder)(fn)

    def remove():
        fns = getattr(sa.get_algorithm_selector_cache(), attribute, None)
        if isinstance(fns, list) and fn in fns:
            fns.remove(fn)

    return remove


def add_feedback_saver(fn) -> Callable[[], None]:
    """Register an autotune feedback saver; returns a function that removes it."""
    return _register_with_selector_cache("add_feedback_saver", "feedback_saver_fns", fn)


def choice_candidate(choice) -> Candidate | None:
    """A benchmarked ChoiceCaller -> Candidate, via the KTC Inductor attaches to it."""
    ann = getattr(choice, "annotations", None) or {}
    ktc = ann.get("ktc")
    if ktc is not None:
        return ktc_candidate(ktc)
    name = getattr(choice, "name", "") or ""
    if name.startswith(flydsl_space.CHOICE_NAME):
        return flydsl_candidate(choice)
    if "extern" in name or name.startswith("aten"):
        return Candidate.make("aten", "mm")
    return None


def flydsl_candidate(choice) -> Candidate | None:
    """A FlyDSL ExternKernelCaller -> the same Candidate kernels/flydsl/space.py lists (its bound
    knobs; `ab_layout` is the problem's, not a knob); None when the knobs are not all there."""
    try:
        return flydsl_space.candidate(**(getattr(choice, "kwargs", None) or {}))
    except BackendError:
        return None


def candidates_of(records: Iterable) -> list[Candidate]:
    return [c for _, c in records]


# ---------------------------------------------------------------------------------------
# The selector plug-in (selector/inductor/hook.py) reaches Inductor only through what follows.
def caller_candidate(choice) -> Candidate | None:
    """Any backend's ChoiceCaller -> Candidate: KTC-backed ones via their KTC; FlyDSL extern
    calls as flydsl (their bound knobs); other extern library calls (`_mkl_linear`, `bmm`) as
    aten; others (CPP, CUTLASS, ...) as (backend, name without Inductor's per-compile
    counter), stable across compiles."""
    import re

    ann = getattr(choice, "annotations", None) or {}
    if ann.get("ktc") is not None:
        return ktc_candidate(ann["ktc"])
    name = str(getattr(choice, "name", "") or "")
    if name.startswith(flydsl_space.CHOICE_NAME):  # an extern call, but not ATen's
        return flydsl_candidate(choice)
    try:
        info = choice.info_dict() or {}
    except Exception:
        info = {}
    backend = str(info.get("backend", "")).lower()
    if backend == "extern" or type(choice).__name__ == "ExternKernelCaller":
        return Candidate.make("aten", name.lstrip("_") or "mm")
    if not name:
        return None
    stem = re.sub(r"_\d+$", "", name)
    return Candidate.make(backend or "other", stem)


def caller_candidates(choices) -> list:
    return [caller_candidate(c) for c in choices]


def size_hint(expr, hint_override: int | None = None) -> int:
    """A size as the int Inductor itself tunes with: a static size as is; a symbolic one by the
    lowering graph's hint (at `hint_override` where given, as Inductor's multi-kernel dispatch
    reads its sizes). torch 2.13's SizeVarAllocator answers `optimization_hint(_with_override)`;
    2.11's `size_hint(expr, fallback=, hint_override=)`."""
    try:
        return int(expr)
    except TypeError:
        pass
    from torch._inductor.virtualized import V

    sizevars = V.graph.sizevars
    if hasattr(sizevars, "optimization_hint_with_override"):  # torch 2.13
        return int(sizevars.optimization_hint_with_override(expr, hint_override))
    return int(sizevars.size_hint(expr, hint_override=hint_override))  # torch 2.11


def is_symbolic(expr) -> bool:
    """Whether a size is symbolic (a dynamic dimension) rather than a plain int."""
    try:
        int(expr)
    except TypeError:
        return True
    return False


def multi_kernel_hints() -> list[int] | None:
    """Inductor's `multi_kernel_hints` (the sizes its multi-kernel dispatch tunes a dynamic
    dimension at), or None where this torch has no such setting."""
    from torch._inductor import config

    for owner in (config, getattr(config, "triton", None)):
        hints = getattr(owner, "multi_kernel_hints", None) if owner is not None else None
        if hints is not None:
            return [int(h) for h in hints]
    return None


def hint_override_of(item) -> int | None:
    """The size Inductor generated a choice (KTC or ChoiceCaller) for under multi-kernel
    dispatch (its `hint_override`), or None for a choice of the compile's own hint."""
    kw = getattr(getattr(item, "params", None), "kwargs", None)
    if isinstance(kw, dict) and kw.get("hint_override") is not None:
        return int(kw["hint_override"])
    annotations = getattr(item, "annotations", None)
    ktc = annotations.get("ktc") if isinstance(annotations, dict) else None
    if ktc is not None and ktc is not item:
        return hint_override_of(ktc)
    h = getattr(item, "hint_override", None)
    return int(h) if isinstance(h, int) and not isinstance(h, bool) else None


def _layout_char(stride, rows: int, cols: int) -> str:
    if cols == 1 or stride[-1] == 1:
        return "n"
    if rows == 1 or stride[-2] == 1:
        return "t"
    raise ValueError(f"operand with strides {stride} is neither row- nor column-major")


def gemm_signature(nodes, out_size, op_name: str | None = None):
    """Inductor input nodes + output size -> (Problem, cache-key fields, device).

    A is an input whose rows are M (not a broadcast bias); K is its last dim; B a later input
    shaped (K, N) (layout from its strides) or (N, K) (a Linear weight, i.e. transposed). Any
    other input of N columns is a bias: addmm. The key fields carry every input's sizes,
    strides and dtype, so decisions never cross layouts.
    """
    from kselect.kernels.problem import Problem

    out = [size_hint(s) for s in out_size]
    batch = out[0] if len(out) == 3 else 1
    M, N = out[-2], out[-1]
    shaped = []
    for n in nodes:
        try:
            size = [size_hint(s) for s in n.get_size()]
            stride = [size_hint(s) for s in n.get_stride()]
        except Exception:
            size, stride = [], []
        shaped.append((n, size, stride))
    found = None
    for a_i, (_n, a_size, a_stride) in enumerate(shaped):
        if len(a_size) < 2 or a_size[-2] != M or 0 in a_stride[-2:]:
            continue
        K = a_size[-1]
        for b_i in range(a_i + 1, len(shaped)):
            _n, size, stride = shaped[b_i]
            if len(size) < 2:
                continue
            if size[-2:] == [K, N]:
                found = (a_i, b_i, K, _layout_char(stride, K, N))
                break
            if size[-2:] == [N, K]:
                found = (a_i, b_i, K, "t" if _layout_char(stride, N, K) == "n" else "n")
                break
        if found:
            break
    if found is None:
        raise ValueError(f"no A (M={M}, K) and B (K, N={N}) among inputs {[s for _, s, _ in shaped]}")
    a_i, b_i, K, b_layout = found
    a_size, a_stride = shaped[a_i][1], shaped[a_i][2]
    has_bias = any(i not in (a_i, b_i) and size and size[-1] == N for i, (_, size, _) in enumerate(shaped))
    dtype = shaped[a_i][0].get_dtype()
    device = shaped[a_i][0].get_device()
    op = "bmm" if len(out) == 3 else ("addmm" if op_name == "addmm" or has_bias else "mm")
    problem = Problem(M=M, N=N, K=K, dtype=dtype, layout=_layout_char(a_stride, M, K) + b_layout, op=op, batch=batch)
    fields = {
        "op": op_name or op,
        "out": out,
        "dtype": str(dtype),
        "inputs": [(size, stride, str(n.get_dtype())) for n, size, stride in shaped],
    }
    dynamic = _dynamic_dims(out_size, shaped[a_i][0])
    if dynamic:  # sizes above are the compile's hints: never the key of a static GEMM of that size
        fields["dynamic"] = dynamic
    return problem, fields, device


def _dynamic_dims(out_size, a_node) -> list[str]:
    """The GEMM dimensions ("batch", "M", "N", "K") whose sizes are symbolic."""
    names = (["batch"] if len(out_size) == 3 else []) + ["M", "N"]
    dims = [name for name, s in zip(names, out_size) if is_symbolic(s)]
    try:
        if is_symbolic(a_node.get_size()[-1]):
            dims.append("K")
    except Exception:  # noqa: BLE001 -- sizes were read above; only the K mark is at stake
        pass
    return dims


def lowering_graph():
    """The GraphLowering Inductor is running in this thread, or None (outside a compile)."""
    from torch._inductor.virtualized import NullHandler, V

    graph = V.graph
    return None if isinstance(graph, NullHandler) else graph


def graph_gemm_problems(graph) -> list:
    """The GEMMs of the FX graph `graph` lowers (Inductor's GraphLowering: an fx Interpreter over
    `graph.module`), as Problems in graph order: aten mm, addmm, bmm and baddbmm nodes whose
    operand sizes are known (a symbolic size is skipped: the warm-up it serves is an
    optimisation). Read when the graph's first GEMM is lowered, so the ranker warms what the
    graph's decisions need (policy.CostModelRanker.warm_up)."""
    import torch

    from kselect.kernels.problem import Problem, ProblemError

    aten = torch.ops.aten
    ops = {
        aten.mm.default: ("mm", 0),
        aten.addmm.default: ("addmm", 1),
        aten.bmm.default: ("bmm", 0),
        aten.baddbmm.default: ("bmm", 1),
    }
    out = []
    for node in graph.module.graph.nodes:
        op, first = ops.get(node.target, (None, 0)) if node.op == "call_function" else (None, 0)
        if op is None:
            continue
        try:
            a, b = (arg.meta["val"] for arg in node.args[first : first + 2])
            (*batch, m, k), n = _static(a.shape), _static(b.shape)[-1]
            layout = _layout_char(_static(a.stride()), m, k) + _layout_char(_static(b.stride()), k, n)
            out.append(Problem(M=m, N=n, K=k, dtype=a.dtype, layout=layout, op=op, batch=batch[0] if batch else 1))
        except (AttributeError, KeyError, TypeError, ValueError, ProblemError):
            continue  # not a plain tensor, a symbolic size, an odd stride or dtype: not warmed
    return out


def _static(sizes) -> list:
    """Plain ints, or TypeError: int() of a symbolic size would add a guard to the compile."""
    if not all(type(s) is int for s in sizes):
        raise TypeError(f"symbolic sizes {list(sizes)}")
    return list(sizes)


def ktc_signature(kernel_inputs, op_name: str):
    """gemm_signature of a `_finalize_template_configs` call."""
    return gemm_signature(kernel_inputs.nodes(), kernel_inputs.output_layout().size, op_name)


def choices_signature(choices):
    """gemm_signature of a preprocessing call (no op name there: inferred from shapes). Choices
    may see different inputs (CPP GEMMs get a re-blocked weight): the first that parses wins."""
    err = None
    for choice in choices:
        try:
            return gemm_signature(choice.input_nodes, choice.layout.size, None)
        except (ValueError, StopIteration, AttributeError) as exc:
            err = exc
    raise ValueError(f"cannot read a GEMM signature from {len(choices)} choices: {err}")


_GPU_FINGERPRINTS: dict = {}


def device_fingerprint(device) -> dict:
    """What identifies the device a GEMM runs on: name + SM count for GPUs (what the cost
    model's check_device compares) and a short id over name, SMs and software versions.
    A GPU's is computed once per process (it cannot change; a CPU's thread count can)."""
    key = (getattr(device, "type", str(device)), getattr(device, "index", None))
    if key in _GPU_FINGERPRINTS:
        return dict(_GPU_FINGERPRINTS[key])
    fp = _device_fingerprint(device)
    if fp.get("gpu_name") and key[1] is not None:  # "cuda" alone follows the current device
        _GPU_FINGERPRINTS[key] = dict(fp)
    return fp


def _device_fingerprint(device) -> dict:
    import platform

    import torch

    from kselect.selector.fingerprint import fingerprint_id

    fp: dict = {"device_type": getattr(device, "type", str(device)), "torch_version": torch.__version__}
    if fp["device_type"] == "cuda" and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(device)
        fp.update(
            {
                "gpu_name": props.name,
                "sm_count": props.multi_processor_count,
                "shared_memory_per_block_optin": int(getattr(props, "shared_memory_per_block_optin", 0)),
                "compute_capability": f"{props.major}.{props.minor}",
                "cuda_version": torch.version.cuda,
                "hip_version": getattr(torch.version, "hip", None),
            }
        )
        try:
            import triton

            fp["triton_version"] = triton.__version__
        except ImportError:
            pass
    else:
        fp.update({"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads()})
    fp["fingerprint_id"] = fingerprint_id(fp)
    return fp


def is_flydsl_ktc(ktc) -> bool:
    return flydsl_space.CHOICE_NAME in str(getattr(ktc.template, "uid", ""))


def _joins_here(templates, op_name: str) -> bool:
    """Where extra mm/addmm templates join: the get_template_configs call that builds ATen's own
    mm/addmm (tuned_addmm makes several calls per GEMM, this one once per GEMM; read on 2.13,
    the 2.11 lowering is unchecked), and only under max-autotune (without it nothing is tuned)."""
    from torch._inductor import config

    if op_name not in ("mm", "addmm") or not (config.max_autotune or config.max_autotune_gemm):
        return False
    return any(str(getattr(t, "uid", "")) == f"aten::{op_name}" for t in templates)


def flydsl_builds(ktcs) -> list:
    """(index, kernel build) of each FlyDSL KTC in `ktcs`."""
    from kselect.kernels.flydsl.inductor import build_of

    return [
        (i, build_of(k.template.name, k.params.to_kwargs(), k.inputs)) for i, k in enumerate(ktcs) if is_flydsl_ktc(k)
    ]


def make_selecting_choices(
    select_ktcs: Callable, uuid: str, join=None, plan_ktcs: Callable | None = None, stock_space: Callable | None = None
):
    """An InductorChoices whose `_finalize_template_configs` hands the stock KTC list to
    `select_ktcs(ktcs, kernel_inputs, op_name, restock=) -> list` (before any code generation;
    `restock(space)` gives the KTCs stock Inductor finalizes for this GEMM in another GEMM search
    space, for a fallback to the user's own).

    `plan_ktcs(kernel_inputs, templates, op_name, generate) -> candidates | None` (optional)
    decides before Inductor generates the space (`generate(template)` gives Inductor's own
    candidates of a template kselect does not enumerate): Inductor then builds only the
    templates of the candidates returned and converts configs only until it has those
    (`pick_ktcs`), not the whole ~2,400-config EXHAUSTIVE space; None, or a candidate Inductor
    never yields (PlanMissed), takes the usual path.

    `join` (optional) adds templates to mm/addmm: `join.templates(kernel_inputs, op_name)` gives
    ExternKernelChoices whose configs come from their registered template heuristic, and
    `join.finalize(kept, stock)` vets the kept KTCs (compiles FlyDSL's) after selection.

    `stock_space(kind, kernel_inputs)` (optional) puts the op gate in front (op_kind.gated): an
    op it names a space for gets stock Inductor's choices built in that space, nothing else."""
    base = _base_choices_class()

    class KselectChoices(base):
        _plan = threading.local()  # the candidates this thread's current call wants, if planned

        def get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides=None):
            extra = (
                list(join.templates(kernel_inputs, op_name))
                if join is not None and _joins_here(templates, op_name)
                else []
            )
            if extra:
                templates = list(templates) + extra
            elif plan_ktcs is not None:
                overrides = kwarg_overrides or {}

                def generate(template):  # Inductor's own candidates of one template, mapped
                    uid = getattr(template, "uid", None)
                    return ktc_candidates(self.get_ktc(kernel_inputs, template, op_name, overrides.get(uid, {})))

                wanted = plan_ktcs(kernel_inputs, templates, op_name, generate)
                if wanted is not None:
                    self._plan.wanted = wanted
                    try:
                        return super().get_template_configs(
                            kernel_inputs, templates_of(templates, wanted), op_name, kwarg_overrides
                        )
                    except PlanMissed as exc:
                        log.info(
                            "kselect: early decision not generated by Inductor (%s) -- deciding "
                            "over the generated space",
                            exc,
                        )
                    finally:
                        self._plan.__dict__.pop("wanted", None)
            return super().get_template_configs(kernel_inputs, templates, op_name, kwarg_overrides)

        def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
            # taken, not read: building the kept choices can lower a nested GEMM (decompose-k's
            # subgraph) through this handler, which must not see the outer GEMM's plan
            wanted = self._plan.__dict__.pop("wanted", None)
            if wanted is not None:
                return pick_ktcs(template_choices, wanted)
            stock = list(
                super()._finalize_template_configs(template_choices, kernel_inputs, templates, op_name, kwarg_overrides)
            )

            def restock(space: str) -> list:  # what stock Inductor builds in `space`
                return self._in_space(space, kernel_inputs, templates, op_name, kwarg_overrides)

            kept = select_ktcs(list(stock), kernel_inputs, op_name, restock=restock)
            return join.finalize(kept, stock) if join is not None else kept

        def _in_space(self, space, kernel_inputs, templates, op_name, kwarg_overrides=None) -> list:
            """This GEMM's KTCs as stock Inductor finalizes them with `space` as its GEMM search
            space (its own generators and finalizing, run again under that setting)."""
            from torch._inductor import config

            overrides = kwarg_overrides or {}
            with config.patch(max_autotune_gemm_search_space=space.upper()):
                regenerated = {
                    t.uid: iter(list(self.get_ktc(kernel_inputs, t, op_name, overrides.get(t.uid, {}))))
                    for t in templates
                }
                return list(
                    base._finalize_template_configs(
                        self, regenerated, kernel_inputs, templates, op_name, kwarg_overrides
                    )
                )

        def _need_to_fix_layout(self, adjusted_choices, op_name):
            # FlyDSL writes a contiguous output; a flexible layout could be re-strided later
            if any(is_flydsl_ktc(k) for k in adjusted_choices):
                return True
            return super()._need_to_fix_layout(adjusted_choices, op_name)

        def uuid(self) -> str:  # folded into Inductor's FX-graph cache key on 2.13
            return uuid

    # -- the op gate (selector/inductor/op_kind.py): ops kselect does not decide go to stock
    if stock_space is not None:
        from kselect.selector.inductor.op_kind import gated

        return gated(KselectChoices, stock_space)()
    return KselectChoices()


_HANDLERS: dict = {}  # name -> the choices handler installed under it, in this process


class ChoicesByName:
    """config.inductor_choices_class value: calls return the handler installed under `name`.

    Inductor pickles and deep-copies its config (FX-graph cache key, config patches, compile
    workers): a lambda there fails to pickle ("Failed to pickle cache key") and turns that cache
    off. This pickles as the name (kselect's configuration, handler.uuid()); in a process where
    nothing is installed under it, it gives stock InductorChoices."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self):
        handler = _HANDLERS.get(self.name)
        if handler is None:
            from torch._inductor.choices import InductorChoices

            return InductorChoices()
        return handler

    def __eq__(self, other):
        return isinstance(other, ChoicesByName) and other.name == self.name

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"ChoicesByName({self.name!r})"


def install_choices(handler) -> Callable[[], None]:
    """Make `handler` Inductor's choices handler (thread-local, and through
    config.inductor_choices_class for other threads); returns a function that undoes it."""
    from torch._inductor import config
    from torch._inductor.virtualized import V

    old_handler = V.choices
    has_cls = hasattr(config, "inductor_choices_class")
    old_cls = getattr(config, "inductor_choices_class", None)
    V.set_choices_handler(handler)
    uuid = getattr(handler, "uuid", None)
    name = str(uuid()) if callable(uuid) else f"{type(handler).__name__}:{id(handler)}"
    if has_cls:
        _HANDLERS[name] = handler
        config.inductor_choices_class = ChoicesByName(name)

    def restore():
        V.set_choices_handler(old_handler)
        if has_cls:
            if _HANDLERS.get(name) is handler:
                del _HANDLERS[name]
            config.inductor_choices_class = old_cls

    return restore


def set_gemm_search_space(space: str):
    """Set Inductor's max_autotune_gemm_search_space; returns (previous value, undo function)."""
    from torch._inductor import config

    previous = str(config.max_autotune_gemm_search_space)
    config.max_autotune_gemm_search_space = space.upper()

    def undo():
        config.max_autotune_gemm_search_space = previous

    return previous, undo


def gemm_search_space() -> str:
    """The GEMM config list Inductor builds now ("DEFAULT" or "EXHAUSTIVE")."""
    from torch._inductor import config

    return str(config.max_autotune_gemm_search_space)


def current_choices():
    from torch._inductor.virtualized import V

    return V.choices


def add_preprocessing_fn(fn) -> Callable[[], None]:
    """Register fn(list[ChoiceCaller]) -> list[ChoiceCaller] (sees every backend's choices after
    codegen; one left = nothing benchmarked); returns a function that removes it."""
    return _register_with_selector_cache("add_preprocessing_fn", "preprocessing_fns", fn)


def time_extern_under_cuda_graphs(choices) -> bool:
    """Ask Inductor to time its extern (ATen) choices by replaying a CUDA graph.

    Inductor's default timing of an extern call includes host dispatch gaps, so on the H200 it
    reads cuBLAS 1.22-1.57x slower than it runs in the compiled program (reports/faithfulness-
    h200) and stock picks slower Triton kernels; a graph replay removes that bias (Triton
    choices keep Inductor's own timing, which is within ~6%). Returns True when this torch
    honours the per-choice flag (2.13 has it), i.e. the winner Inductor reports is faithful.
    """
    from torch._inductor.select_algorithm import ExternKernelCaller

    honoured = True
    for choice in choices:
        # FlyDSL's first launch JIT-compiles in process: never inside a graph capture
        if isinstance(choice, ExternKernelCaller) and not choice.name.startswith(flydsl_space.CHOICE_NAME):
            if hasattr(choice, "_benchmark_with_cudagraphs"):
                choice._benchmark_with_cudagraphs = True
            else:
                honoured = False
    return honoured


# views that keep the GEMM's element order: an epilogue behind them still reads each output
# element where the template stores it (slices, splits, permutes do not: RoPE, chunked SwiGLU)
_ORDER_KEEPING_VIEWS = frozenset({"view", "_unsafe_view", "reshape", "squeeze", "unsqueeze", "alias"})


def _fusible_use(node) -> bool:
    import torch

    if getattr(node, "op", None) != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    if node.target.overloadpacket.__name__ in _ORDER_KEEPING_VIEWS:
        return any(_fusible_use(u) for u in node.users)
    return torch.Tag.pointwise in node.target.tags


def output_feeds_pointwise() -> bool:
    """Whether the GEMM Inductor is lowering right now feeds a pointwise op element by element
    (directly or through order-keeping views): an epilogue a Triton template can fuse.
    False when there is no FX node to ask."""
    from torch._inductor.virtualized import V

    try:
        node = V.graph.current_node
    except (AttributeError, AssertionError):  # no graph being lowered
        return False
    if node is None or getattr(node, "op", None) != "call_function":
        return False
    return any(_fusible_use(u) for u in node.users)


def broken_templates(problem) -> frozenset:
    """Templates this torch builds but cannot run for `problem`: on torch 2.11, every bf16
    decompose-k choice fails inside Inductor (reports/2026-12-02-faithfulness-h200). Never kept."""
    import torch

    if problem.dtype == "bf16" and torch.__version__.startswith("2.11"):
        return frozenset({"decompose_k"})
    return frozenset()


def warm_compile_pool(timeout_s: float = 120.0) -> float | None:
    """Start Inductor's compile-worker pool and wait until it takes work; seconds taken, or None
    where this torch has no such pool (one compile thread, no Triton, an unknown API).

    torch.compile starts the pool in the background as it begins, and until the workers are
    up Inductor compiles kernels in the compiling process itself; how much of a compile falls
    before that moment differs from process to process. A benchmark that waits for the pool
    first compares the compiles without that race (the wait is reported apart)."""
    import time

    try:
        from torch._inductor.async_compile import AsyncCompile, maybe_warm_pool
    except ImportError:
        return None
    t0 = time.perf_counter()
    maybe_warm_pool()
    if not AsyncCompile.use_process_pool() and getattr(AsyncCompile, "_ready_future", None) is None:
        return None  # no process pool here: kernels compile in this process anyway
    future = getattr(AsyncCompile, "_ready_future", None)
    if future is not None:
        future.result(timeout=timeout_s)
    return time.perf_counter() - t0


def compile_worker_pool():
    """(Inductor's compile-worker pool, its number of workers) once the pool takes work, else
    None (one compile thread, the pool still starting, a torch without this API). Asking
    starts the pool where Inductor would use one, as Inductor's own check does."""
    from torch._inductor import async_compile, config

    if not async_compile.AsyncCompile.use_process_pool():
        return None
    size = getattr(async_compile, "get_compile_threads", None)
    return async_compile.AsyncCompile.process_pool(), int(size()) if size else int(config.compile_threads or 1)


def submit_triton_compile(kernel_name: str, source_code: str):
    """Compile a Triton kernel module's source in Inductor's compile workers, as stock
    max-autotune precompiles its templates; a future done once the kernel is in Triton's cache
    (None: Inductor already held it compiled)."""
    from torch._inductor.async_compile import AsyncCompile

    return getattr(AsyncCompile().triton(kernel_name=kernel_name, source_code=source_code), "future", None)


def on_compile_start(callback) -> Callable[[], None]:
    """Call `callback` as each Dynamo compile starts; returns the undo (a no-op where this torch
    has no compile callbacks)."""
    try:
        from torch._dynamo.callback import callback_handler
    except ImportError:
        return lambda: None
    callback_handler.register_start_callback(callback)

    def undo():
        if callback in callback_handler.start_callbacks:
            callback_handler.remove_start_callback(callback)

    return undo


# ---------------------------------------------------------------------------------------
# Inductor's template lookup table (`config.lookup_table.table`, read by
# `torch._inductor.lookup_table.LookupTableChoices`): what training/data/lookup_table.py needs
# to write kselect's decisions in Inductor's own format.
def lookup_table_missing() -> str | None:
    """None when this torch has Inductor's template lookup table, else the reason it has not."""
    import torch

    try:
        from torch._inductor import config
        from torch._inductor.lookup_table import LookupTableChoices  # noqa: F401
    except ImportError as exc:
        return f"torch {torch.__version__} has no Inductor template lookup table ({exc})"
    if not hasattr(getattr(config, "lookup_table", None), "table"):
        return f"torch {torch.__version__} has no torch._inductor.config.lookup_table.table"
    return None


def lookup_template_uids() -> dict:
    """(backend, template, family) -> the uid Inductor's lookup table names that template by, for
    the templates Inductor's mm-family ("mm": mm/addmm) and bmm-family ("bmm": bmm/baddbmm)
    lowerings pass through the template stage (the only stage the table governs)."""
    from torch._inductor.kernel import bmm as inductor_bmm
    from torch._inductor.kernel import mm as inductor_mm

    families = {
        "mm": [
            getattr(inductor_mm, name, None)
            for name in (
                "aten_mm",
                "aten_addmm",
                "aten_bias_addmm",
                "mm_template",
                "persistent_tma_mm_template",
                "decompose_k_subgraph_template",
            )
        ],
        "bmm": [getattr(inductor_bmm, name, None) for name in ("aten_bmm", "aten_baddbmm", "bmm_template")],
    }
    out = {}
    for family, templates in families.items():
        for template in templates:
            uid = getattr(template, "uid", None)
            if uid:
                out[(*template_kind(template), family)] = uid
    return out
