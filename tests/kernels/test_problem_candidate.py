"""Problems and candidates: validation with clear errors, identity, JSON round trips."""

import pytest

from kselect.kernels import BackendError, Candidate, Problem, ProblemError, get_backend, parse_backends
from kselect.kernels.triton.backend import launch_plan
from kselect.kernels.triton.space import triton_space


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(M=0, N=4, K=4), "M must be positive"),
        (dict(M=4, N=-1, K=4), "N must be positive"),
        (dict(M=4, N=4, K=2.5), "K must be an integer"),
        (dict(M="x", N=4, K=4), "M must be an integer"),
        (dict(M=4, N=4, K=4, dtype="int3"), "unknown dtype 'int3'"),
        (dict(M=4, N=4, K=4, layout="zz"), "unknown layout 'zz'"),
        (dict(M=4, N=4, K=4, op="conv"), "unknown op 'conv'"),
        (dict(M=4, N=4, K=4, batch=3), "batch=3 needs op='bmm'"),
    ],
)
def test_bad_problem_is_a_clear_error(kwargs, needle):
    with pytest.raises(ProblemError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        Problem(**kwargs)


def test_problem_accepts_csv_strings_and_torch_dtype_names():
    import torch

    p = Problem("333", "7168", "5120", dtype=torch.bfloat16)
    assert (p.M, p.N, p.K, p.dtype) == (333, 7168, 5120, "bf16")
    assert p.key == "mm:333x7168x5120:bf16:nt"
    assert Problem.from_dict(p.to_dict()) == p
    assert Problem(2, 3, 4, op="bmm", batch=5).key == "bmm5x:2x3x4:bf16:nt"


@pytest.mark.parametrize(
    "problem",
    [
        Problem(2, 4608, 3584),
        Problem(16, 8, 32, dtype="fp16", layout="tn", op="addmm"),
        Problem(8, 16, 32, op="bmm", batch=4, layout="nn"),
        Problem(128, 8192, 4096, dtype="fp8e4m3", op="scaled_mm", scaling="rowwise", out_dtype="bf16"),
        Problem(
            128, 8192, 4096, dtype="fp8e4m3", op="scaled_mm", scaling="tensorwise", out_dtype="fp32", fast_accum=True
        ),
    ],
)
def test_a_problem_is_read_back_from_its_key(problem):
    assert Problem.from_key(problem.key) == problem


@pytest.mark.parametrize(
    "key, needle",
    [
        ("mm:2x3:bf16:nt", "not a GEMM problem key"),
        ("conv:1x2x3:bf16:nt", "not a GEMM problem key"),
        ("mm:1x2x3:bf16:nt:rowwise", "not a GEMM problem key"),
        ("scaled_mm:128x64x64:fp8e4m3:nt:rowwise:bf16:slow", "not a GEMM problem key"),
        ("mm:1x2x3:bfloat16:nt", "not a canonical problem key"),
        ("mm:1x2xq:bf16:nt", "K must be an integer"),
        ("mm:1x2x3:bf16:xx", "unknown layout"),
    ],
)
def test_a_key_that_names_no_problem_is_a_clear_error(key, needle):
    with pytest.raises(ProblemError, match=needle):
        Problem.from_key(key)


def test_candidate_round_trip_and_key():
    c = Candidate.make("triton", "mm", BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, num_stages=3, num_warps=4, GROUP_M=8)
    assert Candidate.from_json(c.to_json()) == c
    assert hash(Candidate.from_json(c.to_json())) == hash(c)
    assert c.key == "triton:mm:BK32-BM64-BN128-G8-S3-W4"
    assert Candidate.make("aten", "mm").key == "aten:mm"


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(BackendError, match="unknown backend 'cutlass9'.*aten"):
        get_backend("cutlass9")
    with pytest.raises(BackendError, match="no backend named"):
        parse_backends(" , ")
    assert [b.name for b in parse_backends("aten,triton")] == ["aten", "triton"]


def test_backends_say_why_they_are_unavailable_on_cpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this checks the CPU-only answer")
    avail = get_backend("triton").availability("cuda")
    assert not avail and ("CUDA" in avail.reason or "triton" in avail.reason)
    assert get_backend("aten").availability("cpu")


def test_triton_compile_key_carries_k_divisibility_class():
    """K is specialised (divisible by 16 or not) so non-EVEN_K masks vectorise; one binary
    still serves every K of the same class and EVEN_K."""
    from kselect.kernels.triton.backend import launch_plan

    cand = Candidate.make("triton", "mm", BLOCK_M=64, BLOCK_N=128, BLOCK_K=128, GROUP_M=8, num_stages=4, num_warps=4)

    def key(m, n, k):
        return launch_plan(cand, Problem(M=m, N=n, K=k, layout="nt"), 132).compile_key

    assert key(64, 4096, 4096) == key(333, 4096, 5120)  # same class, EVEN_K: shared
    assert key(64, 4096, 4544) != key(64, 4096, 4096)  # EVEN_K differs
    assert key(64, 4096, 4544) != key(64, 4096, 4545)  # K % 16 class differs
    assert launch_plan(cand, Problem(M=64, N=4096, K=4544, layout="tn"), 132).stride_spec[-1] == 16


def test_made_candidates_are_interned_and_keep_value_semantics():
    """Candidate.make returns one object per distinct candidate (its key string built once);
    equality, hashing, ordering and JSON round trips are those of the plain values."""
    from kselect.kernels.candidate import Candidate

    a = Candidate.make("triton", "mm", BLOCK_M=64, num_warps=4)
    b = Candidate.make("triton", "mm", num_warps=4, BLOCK_M=64)
    direct = Candidate("triton", "mm", (("BLOCK_M", 64), ("num_warps", 4)))
    assert a is b and a == direct and hash(a) == hash(direct) and a is not direct
    assert a.key == direct.key == "triton:mm:BM64-W4" and a.key is a.key
    assert Candidate.from_json(a.to_json()) is a
    assert sorted([Candidate.make("triton", "mm", BLOCK_M=128), a])[0] is a
    odd = Candidate.make("triton", "mm", tiles=[1, 2])  # an unhashable knob: still usable
    assert odd.key == "triton:mm:tiles[1, 2]" and odd.kwargs == {"tiles": [1, 2]}


def test_n_class_joins_the_compile_key():
    """Our kernels specialise N like Triton does (1, divisible by 16, neither): its class sits
    in the compile identity beside K's, whatever the layout's strides say."""
    cand = next(c for c in triton_space(Problem(64, 4096, 4096, "bf16", "nt"), "default") if c.template == "mm")
    classes = [launch_plan(cand, Problem(64, n, 4096, "bf16", "nt"), 132).stride_spec[-2] for n in (4096, 4099, 1)]
    assert classes == [16, 0, 1]
