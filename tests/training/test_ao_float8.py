"""torchao's float8 Linear, a real client of kselect's fp8 path, on the CPU: the bench's
`swiglu-mlp-fp8-rowwise-tiny` (a SwiGLU MLP converted by `convert_to_float8_training` with
torchao's rowwise recipe) trains one step compiled under kselect verify with the shipped
ranker, through the bench worker's own check.

torch 2.13's CPU `_scaled_mm` runs both scaling kinds, and Inductor's CPU lowering
(`tuned_scaled_mm`, ATen its one choice) passes both of kselect's hooks. Rowwise scales the
forward GEMMs by rows and runs the backward ones (no fast accumulation) as tensorwise
`_scaled_mm` with unit scales: 3 rowwise GEMMs and 4 tensorwise ones (the MLP's input is data,
so no gradient flows through gate and up). The shipped model holds no scaled_mm: each goes to
stock Inductor, with the gate's one INFO line and no warning.
Tolerance: fp8 rounding moves a compiled step ~3 % from eager (fused bf16 intermediates cross
fp8 rounding boundaries; with `emulate_precision_casts` the two agree exactly), so the bench
judges it by its distance from the unconverted fp32 MLP against eager fp8's own (docs/e2e.md).
The one cold CPU compile costs ~15 s here, ~6 s of it Inductor's precompiled header, which a
fresh cache folder builds again.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from dataclasses import dataclass, field

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchao", reason="the [models] extra (torchao) is not installed")

from kselect.models import shipped_model_path  # noqa: E402
from kselect.selector.compat import autotune, signatures  # noqa: E402
from kselect.selector.decide.rankers import CostModelRanker  # noqa: E402
from kselect.selector.inductor import lifecycle as ksi  # noqa: E402
from kselect.selector.model.cost_model import CostModel  # noqa: E402
from kselect.selector.ops.naming import STAMP, choices_kind  # noqa: E402
from kselect.selector.warn import KselectFallbackWarning  # noqa: E402
from kselect.training.bench import e2e_worker, real_models, selector_log  # noqa: E402
from kselect.training.bench.common import GemmCounter  # noqa: E402
from kselect.training.bench.mlp_models import TINY  # noqa: E402

from inductor_sandbox import inductor_sandbox  # noqa: E402

SPEC = {"seed": 0, "batch": 2, "seq": 8, "steps": 1, "warmup": 0, "profile_steps": 0, "rtol": 2e-2}
ROWWISE = {**SPEC, "model": "swiglu-mlp-fp8-rowwise-tiny", "workload": "train"}
# torchao's float8 inference config sets these Inductor options process-wide (its
# set_inductor_config): put back after each compile here, so later tests compile as before
_TORCHAO_INDUCTOR_OPTIONS = (
    "coordinate_descent_tuning",
    "coordinate_descent_check_all_directions",
    "force_fuse_int_mm_with_mul",
    "fx_graph_cache",
    "triton.unique_kernel_names",
)


@dataclass
class Compiled:
    """What one case's compile under kselect verify showed: the worker's result (with the
    bench's `kselect` summary), the selector, `_read` of every choice list kselect handed on,
    kselect's log lines and its fallback warnings."""

    res: dict = field(default_factory=dict)
    sel: object = None
    seen: list = field(default_factory=list)
    lines: list = field(default_factory=list)
    fallbacks: list = field(default_factory=list)


def compile_case(tmp, spec: dict, device: str, ranker=None, compile_fn=torch.compile) -> Compiled:
    """Build spec's case, enable kselect verify (`ranker`: None serves the device's shipped
    model), and run the bench worker's own check and timing of it."""
    out = Compiled()

    def record(choices):  # runs after kselect's own preprocessing: what it handed Inductor
        out.seen.append(_read(choices))
        return choices

    logger = logging.getLogger("kselect.selector")
    lines, bench_log = _Lines(), selector_log.SelectorLog()  # every line; what the bench's run records
    old_level = logger.level
    options = {name: getattr(torch._inductor.config, name) for name in _TORCHAO_INDUCTOR_OPTIONS}
    with contextlib.ExitStack() as stack:
        for handler in (lines, bench_log):
            logger.addHandler(handler)
            stack.callback(logger.removeHandler, handler)
        stack.callback(logger.setLevel, old_level)
        logger.setLevel(logging.INFO)
        stack.callback(torch._dynamo.reset)
        caught = stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always")
        stack.enter_context(torch._inductor.config.patch(options))
        stack.enter_context(inductor_sandbox(tmp, GemmCounter()))
        torch._dynamo.reset()
        out.sel = ksi.enable("verify", ranker=ranker, cache_dir=None)  # every decision made afresh
        ksi._ensure_preprocess()  # kselect's preprocessing runs before the recorder
        stack.callback(autotune.add_preprocessing_fn(record))
        _, case, _ = real_models.build_case(spec, torch.device(device), torch.bfloat16)
        run = e2e_worker.run_train_case if spec["workload"] == "train" else e2e_worker.run_inference_case
        run(case, spec, out.res, lambda: None, compile_fn)
    out.fallbacks = [str(w.message) for w in caught if issubclass(w.category, KselectFallbackWarning)]
    out.lines = lines.messages
    out.res["kselect"] = bench_log.summary(out.sel)
    return out


def shipped_ranker():
    """The shipped H200 model as a ranker (it holds no scaled_mm), served on the CPU."""
    model = CostModel.load(shipped_model_path("h200-bf16.json"))
    return CostModelRanker(model, model.fingerprint)


@pytest.fixture(scope="module")
def ao_tmp(tmp_path_factory):
    """One Inductor folder for the module's compiles: the later ones reuse the first's
    precompiled C++ header (Inductor's FX-graph and autotune caches stay off: inductor_sandbox)."""
    return tmp_path_factory.mktemp("ao-float8")


@pytest.fixture(scope="module")
def compiled_step(ao_tmp):
    """The rowwise training step under kselect verify with the shipped ranker."""
    return compile_case(ao_tmp, ROWWISE, "cpu", shipped_ranker())


def _read(choices):
    """(op kind, scaling kind, operand dtypes, (M, N, K), stamped) of a preprocessing call's
    choices, read as kselect's gate reads them; stamped: a choice carries the kind kselect's
    templates stage gave it (so both hooks saw this GEMM)."""
    nodes = choices[0].input_nodes
    sizes = [[signatures.size_hint(s) for s in n.get_size()] for n in nodes]
    (m, k), (_, n) = sizes[0], sizes[1]
    dtypes = tuple(str(x.get_dtype()).removeprefix("torch.") for x in nodes[:2])
    stamped = any((getattr(c, "annotations", None) or {}).get(STAMP) == "scaled_mm" for c in choices)
    return choices_kind(choices), signatures.scaled_scaling(*sizes), dtypes, (m, n, k), stamped


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages: list[tuple[int, str]] = []

    def emit(self, record):
        self.messages.append((record.levelno, record.getMessage()))


def assert_left_to_stock(got: Compiled) -> None:
    """Every GEMM read as an fp8 scaled_mm by both hooks and left to stock by a ranker that holds
    no scaled_mm: the gate's one line, no warning, no decision, no fallback."""
    assert {(s[0], s[4]) for s in got.seen} == {("scaled_mm", True)}, got.seen
    assert "kselect: scaled_mm is not modelled; stock autotuning" in [msg for _, msg in got.lines]
    assert not [msg for level, msg in got.lines if level >= logging.WARNING] and not got.fallbacks, got.lines
    assert got.sel.stats["decisions"] == 0 and got.sel.stats["fallbacks"] == 0, got.sel.stats
    assert got.res["kselect"]["stock_ops"] == ["scaled_mm"] and got.res["kselect"]["warnings"] == []


def scaling_counts(got: Compiled) -> dict:
    return {k: sum(1 for s in got.seen if s[1] == k) for k in {s[1] for s in got.seen}}


@pytest.mark.slow
def test_torchao_rowwise_gemms_reach_kselect_as_scaled_mm_of_both_kinds(compiled_step):
    """Every GEMM of the step reaches both of kselect's hooks as an e4m3 scaled_mm of its kind
    and shape, and goes to stock with the gate's line alone."""
    h, i = TINY["swiglu-mlp"].hidden, TINY["swiglu-mlp"].intermediate
    m = ROWWISE["batch"] * ROWWISE["seq"]
    forward = [(m, i, h), (m, i, h), (m, h, i)]  # gate, up, down
    backward = [(m, i, h)]  # grad_input of down alone: gate's and up's input x is data, no gradient
    backward += [(i, h, m), (i, h, m), (h, i, m)]  # grad_weight of gate, up, down
    seen = compiled_step.seen
    assert {s[2] for s in seen} == {("float8_e4m3fn",) * 2}, seen
    assert sorted(s[3] for s in seen if s[1] == "rowwise") == sorted(forward), seen
    assert sorted(s[3] for s in seen if s[1] == "tensorwise") == sorted(backward), seen
    assert_left_to_stock(compiled_step)


@pytest.mark.slow
def test_torchao_rowwise_training_step_is_correct_against_eager_and_fp32(compiled_step):
    """The bench's verdict, and compiled fp8 no further from the fp32 MLP than eager fp8."""
    res = compiled_step.res
    c = res["correctness"]
    assert c["ok"] and c["loss_rel_err"] < 1e-3, c
    # as far from the unconverted fp32 MLP as eager fp8 is (fp8 rounding, not a wrong GEMM)
    assert c["rel_err_vs_fp32"] <= 1.2 * c["eager_rel_err_vs_fp32"], c
    assert 0.01 < c["eager_rel_err_vs_fp32"] < 0.2, c  # fp8's own error: the anchor is no fp8 model
    assert res["step_ms"] > 0


@pytest.mark.slow
def test_torchao_rowwise_inference_runs_on_the_cpu_once_its_hardware_check_is_lifted(ao_tmp, monkeypatch):
    """torchao 0.18's float8 inference `quantize_` refuses a CPU by its hardware check alone: the
    Float8Tensor path it guards calls `_scaled_mm`, which the CPU runs. With that one check
    lifted, the bench's prefill compiles under verify: 3 rowwise scaled_mm left to stock, the
    output correct by the bench's rule against the unconverted fp32 MLP."""
    from torchao.quantization import quant_api

    monkeypatch.setattr(quant_api, "_check_hardware_support", lambda granularities: None)
    spec = {**ROWWISE, "workload": "prefill"}
    got = compile_case(ao_tmp, spec, "cpu", shipped_ranker())
    assert scaling_counts(got) == {"rowwise": 3}, got.seen
    assert_left_to_stock(got)
    c = got.res["correctness"]
    assert c["ok"] and c["rel_err_vs_fp32"] <= 1.2 * c["eager_rel_err_vs_fp32"], c


def test_torchao_float8_models_are_registered_with_their_workloads():
    """Both recipes at both sizes; the fp32 anchor holds the converted model's weights in its
    parameters' order; inference on a CPU is torchao's own refusal, named."""
    names = [n for n in real_models.REAL_MODELS if n.startswith("swiglu-mlp-fp8-")]
    assert sorted(names) == sorted(f"swiglu-mlp-fp8-{r}{t}" for r in ("tensorwise", "rowwise") for t in ("", "-tiny"))
    assert real_models.REAL_MODELS["swiglu-mlp-fp8-tensorwise"].workloads == ("train", "prefill", "decode")
    assert real_models.REAL_MODELS["swiglu-mlp-fp8-rowwise-tiny"].workloads == ("train",)
    spec = {**SPEC, "model": "swiglu-mlp-fp8-tensorwise-tiny", "workload": "train"}
    module, case, note = real_models.build_case(spec, torch.device("cpu"), torch.bfloat16)
    assert "tensorwise" in note and {type(m).__name__ for m in module.children()} == {"Float8Linear"}
    reference = case.fp32_module()
    assert [type(m).__name__ for m in reference.children()] == ["Linear"] * 3
    for ours, ref in zip(module.parameters(), reference.parameters(), strict=True):
        assert ref.dtype == torch.float32 and torch.equal(ours.float(), ref)
    with pytest.raises(RuntimeError, match="float8 inference quantize_ cannot run here: .*compute capability"):
        real_models.build_case({**spec, "workload": "decode"}, torch.device("cpu"), torch.bfloat16)


# the scaling kind of each _scaled_mm the step runs: rowwise training scales its forward GEMMs
# by rows and its 4 backward ones by (unit) tensors; inference has the 3 forward GEMMs alone
_GPU_SCALINGS = {
    ("rowwise", "train"): {"rowwise": 3, "tensorwise": 4},
    ("tensorwise", "train"): {"tensorwise": 7},
    ("rowwise", "prefill"): {"rowwise": 3},
    ("tensorwise", "decode"): {"tensorwise": 3},
}


@pytest.mark.gpu
@pytest.mark.parametrize(("recipe", "workload"), list(_GPU_SCALINGS))
def test_gpu_torchao_float8_compiles_under_kselect_verify_its_gemms_read_as_scaled_mm(tmp_path, recipe, workload):
    """On an sm_89+ GPU with the served model: torchao's float8 MLP (tiny widths, M = 256 rows;
    decode M = 4) compiles under verify as users compile it (max-autotune-no-cudagraphs), every
    GEMM reaches kselect as a scaled_mm of its scaling kind, the kinds the model does not hold
    go to stock with the gate's line, nothing falls back, and the step passes the bench's check."""
    from gpu_model import served_model

    fingerprint, model = served_model()
    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("torchao's float8 needs an sm_89+ GPU")
    ranker = CostModelRanker(model, fingerprint)
    held = ranker.scalings if "scaled_mm" in ranker.ops else frozenset()
    spec = {**SPEC, "batch": 4, "seq": 64, "model": f"swiglu-mlp-fp8-{recipe}-tiny", "workload": workload}
    got = compile_case(
        tmp_path, spec, "cuda", compile_fn=lambda fn: torch.compile(fn, mode="max-autotune-no-cudagraphs")
    )
    assert got.res["correctness"]["ok"], got.res["correctness"]
    assert scaling_counts(got) == _GPU_SCALINGS[(recipe, workload)], got.seen
    if not held:  # the served model holds no scaled_mm: all of them to stock, said once
        assert_left_to_stock(got)
    else:  # a model holding some: both hooks read each as scaled_mm, the held ones decided
        assert {(s[0], s[4]) for s in got.seen} == {("scaled_mm", True)}, got.seen
        assert all(line.endswith("scaled_mm") for line in got.res["kselect"]["stock_ops"]), got.res["kselect"]
        assert not got.fallbacks and got.sel.stats["fallbacks"] == 0, (got.fallbacks, got.sel.stats)
        assert got.sel.stats["decisions"] >= 1 or not set(scaling_counts(got)) & held, got.sel.stats
