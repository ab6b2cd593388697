"""On a CUDA GPU (sm90: H100 / H200): the ops kselect does not model, lowered for real.

What the CPU cannot show (tests/selector/test_op_kinds.py holds the CPU half): Triton templates
for `_grouped_mm` (2D x 3D with offsets), fp8 `_scaled_mm` tensorwise and rowwise, `_int_mm`,
`a @ b + c @ d` (mm_plus_mm), an fp16 mm and a conv2d. One function holds them all beside a bf16
mm kselect decides; it is compiled twice under max-autotune from the user's DEFAULT space, stock
and with kselect (predict, a ranker with bf16 data only -- the shipped model's dtypes -- so the
test does not depend on which GPU the model was trained for). Each output must match eager; each
unmodelled op must get exactly the stock compile's choices, generated in DEFAULT, with one
"not modelled" line and no warning; the bf16 mm must be generated in kselect's EXHAUSTIVE space
and decided.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from gpu_model import sm90_marks  # noqa: E402
from test_op_kinds import Bf16Ranker, compile_twice, not_modelled_lines  # noqa: E402

pytestmark = sm90_marks()

F8, BF, H = torch.float8_e4m3fn, torch.bfloat16, torch.float16
# kind as kselect logs it -> (Inductor's extern kernel, the op name of its templates stage or
# None where the lowering builds its choices itself, the first input's dtype)
UNMODELLED = {
    "grouped_mm": ("_grouped_mm", None, BF),
    "scaled_mm": ("_scaled_mm", "scaled_mm", F8),
    "int_mm": ("_int_mm", "int_mm", torch.int8),
    "mm_plus_mm": ("_mm_plus_mm", "mm_plus_mm", H),
    "fp16 mm": ("mm", "mm", H),
    "conv": ("convolution", None, H),
}


def gpu_ops(ga, gb, offs, f8a, f8b, s1, s2, sa, sb, i8a, i8b, a, b, c, d, e, f, x, w, ba, bb):
    return (
        torch._grouped_mm(ga, gb, offs),
        torch._scaled_mm(f8a, f8b, s1, s2, out_dtype=BF),  # tensorwise
        torch._scaled_mm(f8a, f8b, sa, sb, out_dtype=BF),  # rowwise
        torch._int_mm(i8a, i8b),
        a @ b + c @ d,
        e @ f,  # fp16: no data in the ranker
        torch.nn.functional.conv2d(x, w, padding=1),
        ba @ bb,  # bf16: decided
    )


def _operands():
    g = torch.Generator(device="cuda").manual_seed(0)

    def r(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g, device="cuda").to(dtype)

    return (
        r(256, 128, dtype=BF),
        r(4, 192, 128, dtype=BF).transpose(-2, -1),  # (groups, K, N), K-major
        torch.tensor([64, 128, 192, 256], dtype=torch.int32, device="cuda"),
        r(256, 128, dtype=F8),
        r(192, 128, dtype=F8).t(),  # column-major B
        torch.tensor(0.5, device="cuda"),
        torch.tensor(2.0, device="cuda"),
        torch.full((256, 1), 0.5, device="cuda"),
        torch.full((1, 192), 2.0, device="cuda"),
        torch.randint(-8, 8, (256, 128), generator=g, device="cuda", dtype=torch.int8),
        torch.randint(-8, 8, (128, 192), generator=g, device="cuda", dtype=torch.int8),
        *(r(256, 128, dtype=H), r(128, 192, dtype=H), r(256, 128, dtype=H), r(128, 192, dtype=H)),
        *(r(256, 128, dtype=H), r(128, 192, dtype=H)),
        r(4, 16, 32, 32, dtype=H),
        r(32, 16, 3, 3, dtype=H),
        *(r(256, 128, dtype=BF), r(128, 192, dtype=BF)),
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(stock, kselect) of gpu_ops, each output checked against eager."""
    return compile_twice(
        gpu_ops,
        _operands(),
        tmp_path_factory.mktemp("inductor"),
        Bf16Ranker(),
        max_autotune_gemm_search_space="DEFAULT",
        max_autotune_gemm_backends="ATEN,TRITON",
    )


@pytest.mark.parametrize("kind", list(UNMODELLED))
def test_an_op_kselect_does_not_model_gets_exactly_the_stock_choices_on_the_gpu(runs, kind):
    """Catches on real GPU lowerings: a grouped GEMM read as a plain mm or mm_plus_mm as an
    addmm (ranked, so its list differs from stock's); an fp8 or int8 GEMM failing inside the
    selector (a warning); Triton templates generated in kselect's EXHAUSTIVE space (a get_ktc
    call outside DEFAULT, a longer list); the line missing, repeated or a warning."""
    stock, ks = runs
    extern, op_name, dtype = UNMODELLED[kind]
    lists = ks.choices(extern, dtype)
    assert lists and lists == stock.choices(extern, dtype), (lists, stock.choices(extern, dtype))
    kind_read = kind.split()[-1]
    assert ks.kinds(extern, dtype) == {kind_read} == stock.kinds(extern, dtype)
    assert not_modelled_lines(ks).count(f"kselect: {kind} is not modelled; stock autotuning") == 1, ks.info
    if op_name is not None:
        assert ks.spaces(op_name, dtype) == {"DEFAULT"} == stock.spaces(op_name, dtype)
    assert ks.warnings == [] and ks.stats["fallbacks"] == 0, (ks.warnings, ks.stats)


def test_the_bf16_mm_is_decided_over_the_widened_space(runs):
    """The contrast on the same compile. Catches: the gate leaving a modelled bf16 mm to stock."""
    stock, ks = runs
    assert ks.spaces("mm", BF) == {"EXHAUSTIVE"} and stock.spaces("mm", BF) == {"DEFAULT"}
    assert ks.stats["decisions"] >= 1 and ks.kinds("mm", BF) == {"mm"}, ks.stats
