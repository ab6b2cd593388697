"""On the GPU: fp8 `_scaled_mm`'s candidates -- ATen (cuBLASLt tensorwise, CUTLASS rowwise) and
our runtime-sized forms of Inductor's two scaled Triton templates -- agree with ATen's output,
which itself agrees with the fp32 product of the dequantised operands; and the collector writes
an fp8 shape's rows with none recorded wrong."""

import math

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

from kselect.kernels import Problem  # noqa: E402
from kselect.kernels.backend import get_backend  # noqa: E402
from kselect.kernels.operands import TOLERANCE, make_operands, reference, relative_error  # noqa: E402
from kselect.kernels.triton.space import SCALED_TEMPLATES, triton_space  # noqa: E402

needs_sm90 = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0), reason="needs an sm_90+ GPU"
)


def _fp8(m, n, k, scaling, **kw):
    return Problem(m, n, k, "fp8e4m3", "nt", "scaled_mm", scaling=scaling, **kw)


def _spread(problem, per_template=5):
    """The first DEFAULT candidates of each scaled template, and the last EXHAUSTIVE ones."""
    out = []
    for space in ("default", "exhaustive"):
        cands = triton_space(problem, space)
        for t in SCALED_TEMPLATES:
            mine = [c for c in cands if c.template == t]
            out += mine[:per_template] if space == "default" else mine[-per_template:]
    return list(dict.fromkeys(out))


def _launched_error(backend, cand, problem, ops, ref):
    """The candidate's relative error against `ref`, or None where it cannot launch on this card
    (Triton's OutOfResources: Inductor's own EXHAUSTIVE list holds tiles larger than an H100's
    shared memory; Inductor's benchmark skips them, the collector records them as failed)."""
    from triton.runtime.errors import OutOfResources

    ops.out.fill_(float("nan"))
    try:
        backend.runner(backend.compile(cand, problem), ops)()
    except OutOfResources:
        return None
    torch.cuda.synchronize()
    return relative_error(ops.out, ref)


@needs_sm90
@pytest.mark.parametrize("scaling", ["rowwise", "tensorwise"])
@pytest.mark.parametrize(
    "m, n, k, extra",
    [(1, 4096, 4096, {}), (48, 1024, 4096, {}), (2048, 14336, 4096, {}), (333, 4112, 1040, {"out_dtype": "fp32"})],
)
def test_every_candidate_matches_aten(m, n, k, extra, scaling):
    problem = _fp8(m, n, k, scaling, **extra)
    ops = make_operands(problem, "cuda")
    ref = reference(problem, ops)  # ATen's output, checked against the dequantised fp32 product
    aten, triton = get_backend("aten"), get_backend("triton")
    checked = {}
    for backend, cands in ((aten, aten.candidates(problem)), (triton, _spread(problem))):
        for cand in cands:
            err = _launched_error(backend, cand, problem, ops, ref)
            assert backend is triton or err is not None, cand.key  # ATen always launches
            assert err is None or err <= TOLERANCE["fp8e4m3"], (cand.key, err)
            where = cand.template if backend is triton else "aten"
            checked[where] = checked.get(where, 0) + (err is not None)
    assert set(checked) == {"aten", *SCALED_TEMPLATES} and all(checked.values()), checked  # each one ran


@needs_sm90
def test_fast_accum_candidates_match_aten_with_fast_accum():
    problem = _fp8(64, 8192, 28672, "rowwise", fast_accum=True)
    ops = make_operands(problem, "cuda")
    ref = reference(problem, ops)
    triton = get_backend("triton")
    errors = [_launched_error(triton, cand, problem, ops, ref) for cand in _spread(problem, per_template=2)]
    assert any(e is not None for e in errors)
    assert all(e is None or e <= TOLERANCE["fp8e4m3"] for e in errors), errors


@needs_sm90
def test_collector_writes_fp8_rows_none_wrong(tmp_path):
    from kselect.training.data.dataset import DatasetDir
    from kselect.training.measure.collect import collect

    problems = [_fp8(16, 4096, 4096, "rowwise"), _fp8(1024, 1024, 4096, "tensorwise")]
    result = collect(problems, tmp_path, backends=("aten", "triton"), space="sample:24", gpus=[0])
    assert result["ok"], result
    df = DatasetDir(tmp_path).load()
    assert set(df["problem_key"]) == {p.key for p in problems}
    assert not (df["status"] == "wrong_result").any(), df[df["status"] == "wrong_result"][["candidate_key", "error"]]
    ok = df[df["status"] == "ok"]
    assert set(ok["backend"]) == {"aten", "triton"} and all(math.isfinite(t) for t in ok["time_ms"])
