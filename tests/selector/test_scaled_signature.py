"""kselect reads fp8 `_scaled_mm` from Inductor's own lowering (torch 2.13 here, max-autotune on
this CPU, where `tuned_scaled_mm` still builds MMKernelInputs and calls get_template_configs
with op name "scaled_mm"): shape, operand and output dtypes, scaling kind and use_fast_accum."""

import pytest

torch = pytest.importorskip("torch")

from torch._inductor import config as ic  # noqa: E402
from torch._inductor.choices import InductorChoices  # noqa: E402
from torch._inductor.virtualized import V  # noqa: E402

from kselect.kernels.problem import Problem  # noqa: E402
from kselect.selector.compat.signatures import scaled_mm_signature, scaled_scaling  # noqa: E402
from kselect.selector.ops import naming  # noqa: E402

F8 = torch.float8_e4m3fn


class SignatureSpy(InductorChoices):
    """Stock choices; reads each scaled_mm's signature where kselect's handler would."""

    def __init__(self):
        super().__init__()
        self.read = []

    def get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides=None):
        if naming.lowering_kind(op_name) == "scaled_mm":
            overrides = [o for o in (kwarg_overrides or {}).values() if "use_fast_accum" in o]
            self.read.append(scaled_mm_signature(kernel_inputs, overrides[0]["use_fast_accum"] if overrides else False))
        return super().get_template_configs(kernel_inputs, templates, op_name, kwarg_overrides)


def two_scaled_mms(a, b, sa, sb, c, d, s1, s2):
    rowwise = torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
    tensorwise = torch._scaled_mm(c, d, s1, s2, out_dtype=torch.float32, use_fast_accum=True)
    return rowwise, tensorwise


def test_scaled_mm_signature_from_inductors_lowering():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(48, 64, generator=g).to(F8), torch.randn(80, 64, generator=g).to(F8).t()
    c, d = torch.randn(16, 96, generator=g).to(F8), torch.randn(32, 96, generator=g).to(F8).t()
    sa, sb = torch.rand(48, 1, generator=g) + 0.5, torch.rand(1, 80, generator=g) + 0.5
    spy = SignatureSpy()
    torch._dynamo.reset()
    with ic.patch(max_autotune=True, force_disable_caches=True), V.set_choices_handler(spy):
        torch.compile(two_scaled_mms)(a, b, sa, sb, c, d, torch.tensor(0.5), torch.tensor(2.0))
    problems = {p for p, _fields, _device in spy.read}
    assert problems == {
        Problem(48, 80, 64, "fp8e4m3", "nt", "scaled_mm", scaling="rowwise", out_dtype="bf16"),
        Problem(16, 32, 96, "fp8e4m3", "nt", "scaled_mm", scaling="tensorwise", out_dtype="fp32", fast_accum=True),
    }
    assert all(str(device) == "cpu" for _p, _f, device in spy.read)


def test_scales_that_are_neither_kind_are_refused_by_name():
    assert scaled_scaling([64, 128], [128, 32], [], [1]) == "tensorwise"
    assert scaled_scaling([64, 128], [128, 32], [64, 1], [1, 32]) == "rowwise"
    with pytest.raises(ValueError, match="neither tensorwise nor rowwise"):
        scaled_scaling([256, 256], [256, 256], [256, 2], [2, 2])  # blockwise 1x128 / 128x128
