"""Inductor's choices as kselect's candidates (the same key space as the collector's, so
measurements and Inductor's choices line up).

- `ktc_candidate` / `ktc_candidates`: a KernelTemplateChoice (the template stage, before code
  generation) -> `Candidate`, Triton tiles through a memo primed at model load;
- `caller_candidate`: any backend's ChoiceCaller (the benchmarked choices) -> `Candidate`;
- `grouped_caller_candidates`: a `_grouped_mm` lowering's choices -> its grouped candidates;
- FlyDSL's choices (their knobs, their kernel builds) and the size a choice was generated for
  under multi-kernel dispatch (`hint_override_of`).
"""

from __future__ import annotations

import functools
import operator
import re

from kselect.kernels.backend import BackendError
from kselect.kernels.candidate import Candidate
from kselect.kernels.flydsl import space as flydsl_space
from kselect.kernels.op_names import ATEN_SCALED_MM, GROUPED_MM, MM, SCALED_MM

_TILE_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_stages", "num_warps")
# the op kind kselect's templates stage stamps on each choice it builds (selector/ops/naming.py)
OP_STAMP = "kselect_op"


def is_extern(choice) -> bool:
    """An extern (library) call: nothing to compile."""
    from torch._inductor.select_algorithm import ExternKernelCaller

    return isinstance(choice, ExternKernelCaller)


def stamp(choices: list, kind: str) -> list:
    """Mark each choice with the op kind it was built for (the choices stage reads it back)."""
    for choice in choices:
        annotations = getattr(choice, "annotations", None)
        if isinstance(annotations, dict):
            annotations[OP_STAMP] = kind
    return choices


@functools.lru_cache(maxsize=256)
def template_of(uid: str) -> tuple[str, str]:
    """Inductor template uid -> (backend, template) in our naming."""
    u = uid.lower()
    if flydsl_space.CHOICE_NAME in u:  # an ExternKernelChoice, uid "aten::flydsl_gemm_<op>"
        return flydsl_space.BACKEND, flydsl_space.TEMPLATE
    if u.startswith("aten") or "extern" in u:
        return "aten", u.split("::", 1)[1] if "::" in u else MM
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


def caller_candidate(choice) -> Candidate | None:
    """Any backend's ChoiceCaller -> Candidate: KTC-backed ones via their KTC; FlyDSL extern
    calls as flydsl (their bound knobs); other extern library calls (`_mkl_linear`, `bmm`) as
    aten; others (CPP, CUTLASS, ...) as (backend, name without Inductor's per-compile
    counter), stable across compiles."""
    ann = getattr(choice, "annotations", None) or {}
    if ann.get(OP_STAMP) == SCALED_MM:  # its templates share triton::mm's uid with bf16 mm
        return scaled_caller_candidate(choice)
    if re.fullmatch(rf"triton_{GROUPED_MM}_\d+", str(getattr(choice, "name", "") or "")):  # built outside the KTC path
        return grouped_caller_candidate(choice)
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


def grouped_caller_candidate(choice) -> Candidate | None:
    """A `_grouped_mm` lowering's choice -> its grouped candidate (kernels/grouped/space.py):
    ATen's `_grouped_mm` extern, or a Triton `grouped_mm` config by its knobs, read as the
    collector reads them (kernels/grouped/run.py); None for anything else."""
    from kselect.kernels.grouped.run import choice_candidate

    return choice_candidate(choice)


def grouped_caller_candidates(choices) -> list:
    return [grouped_caller_candidate(c) for c in choices]


# fp8 `_scaled_mm`'s templates (uids read on torch 2.11 / 2.13) -> the collector's candidate
# templates (kernels/triton/space.py SCALED_TEMPLATES): Inductor builds the scaled kernel from
# the shared `triton::mm`, so the op, not the uid, tells it from a bf16 mm's tile
_SCALED_TEMPLATES = {
    "triton::mm": SCALED_MM,
    "triton::scaled_mm_device_tma_epilogue_scaling": "scaled_persistent_tma",
}


def scaled_ktc_candidate(ktc) -> Candidate:
    """A KTC of a `_scaled_mm` lowering -> its Candidate: ATen's `_scaled_mm` as aten:scaled_mm,
    the scaled templates by their tiles; any other template (Blackwell's, main-loop scaling) as
    (other, uid), which no table or model of this kind has seen. Never through the tile memo,
    which holds bf16 mm's candidates for the same template object."""
    uid = str(getattr(ktc.template, "uid", None) or getattr(ktc.template, "name", ""))
    if uid.lower().startswith("aten"):
        return Candidate.make("aten", SCALED_MM)
    kw = ktc_params(ktc)
    template = _SCALED_TEMPLATES.get(uid)
    if template is not None and all(k in kw for k in _TILE_KEYS):
        return Candidate.make("triton", template, **{k: int(kw[k]) for k in _TILE_KEYS})
    return Candidate.make("other", uid.lower())


def scaled_ktc_candidates(ktcs) -> list:
    return [scaled_ktc_candidate(k) for k in ktcs]


def op_ktc_candidate(ktc, op_name: str) -> Candidate:
    """A KTC -> Candidate, read for the op whose templates stage built it (`op_name`): a
    `_scaled_mm`'s templates share triton::mm's uid with a bf16 mm's."""
    return scaled_ktc_candidate(ktc) if op_name == SCALED_MM else ktc_candidate(ktc)


def op_choice_candidate(choice, op_name: str) -> Candidate | None:
    """A benchmarked ChoiceCaller -> Candidate, read for the op it was built for (as
    `op_ktc_candidate`)."""
    return scaled_caller_candidate(choice) if op_name == SCALED_MM else choice_candidate(choice)


def scaled_caller_candidate(choice) -> Candidate | None:
    """A `_scaled_mm` ChoiceCaller -> Candidate: KTC-backed ones by scaled_ktc_candidate, ATen's
    extern call as aten:scaled_mm; anything else unmapped (None: the decision goes to stock)."""
    ann = getattr(choice, "annotations", None) or {}
    if ann.get("ktc") is not None:
        return scaled_ktc_candidate(ann["ktc"])
    name = str(getattr(choice, "name", ""))
    if type(choice).__name__ == "ExternKernelCaller" and name.startswith(ATEN_SCALED_MM):
        return Candidate.make("aten", SCALED_MM)
    return None


def scaled_caller_candidates(choices) -> list:
    return [scaled_caller_candidate(c) for c in choices]


def scaled_fast_accum(items) -> bool:
    """A `_scaled_mm`'s use_fast_accum, as its choices (KTCs or ChoiceCallers) carry it: ATen's
    `use_fast_accum` kwarg, the scaled templates' USE_FAST_ACCUM; False where none says."""
    for item in items:
        ann = getattr(item, "annotations", None)
        ktc = ann.get("ktc") if isinstance(ann, dict) else None
        source = ktc if ktc is not None else item
        kw = dict(getattr(item, "kwargs", None) or {})
        if hasattr(source, "params"):
            kw.update(ktc_params(source))
        for name in ("use_fast_accum", "USE_FAST_ACCUM"):
            if name in kw:
                return bool(kw[name])
    return False


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


def is_flydsl_ktc(ktc) -> bool:
    return flydsl_space.CHOICE_NAME in str(getattr(ktc.template, "uid", ""))


def flydsl_builds(ktcs) -> list:
    """(index, kernel build) of each FlyDSL KTC in `ktcs`."""
    from kselect.kernels.flydsl.inductor import build_of

    return [
        (i, build_of(k.template.name, k.params.to_kwargs(), k.inputs)) for i, k in enumerate(ktcs) if is_flydsl_ktc(k)
    ]
