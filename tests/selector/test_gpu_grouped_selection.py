"""On an sm_90 GPU (H100 / H200): an MoE layer's two `_grouped_mm`s compiled under max-autotune
with kselect holding a grouped model -- trained here by `kselect grouped-eval --out` on the
FIXTURE dataset of test_grouped_selection.py (made-up times, this card's SM count and shared
memory), never shipped. Each grouped GEMM must be decided by kselect (no fallback), its pick one
of the choices stock Inductor builds for it, and the compiled layer must match eager; in verify,
Inductor's own benchmark times the kept few and kselect caches the winner."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("xgboost")

from test_grouped_selection import train_fixture_model  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available() or torch.version.hip or torch.cuda.get_device_capability() < (9, 0),
        reason="Inductor's Triton grouped-mm template needs CUDA sm_90+",
    ),
]

EXPERTS, TOKENS, TOP_K, HIDDEN, WIDTH = 8, 32, 2, 256, 128  # 64 routed rows, 8 per expert


def moe_layer(x, w_gate_up, w_down, offs):
    """An expert layer as MoE code runs it: gate and up fused, SwiGLU, down; rows sorted by expert."""
    h = torch._grouped_mm(x, w_gate_up.transpose(-2, -1), offs=offs)
    gate, up = h.chunk(2, dim=-1)
    return torch._grouped_mm(torch.nn.functional.silu(gate) * up, w_down.transpose(-2, -1), offs=offs)


def layer_inputs():
    g = torch.Generator(device="cuda").manual_seed(0)
    rows = TOKENS * TOP_K
    x = torch.randn(rows, HIDDEN, device="cuda", generator=g, dtype=torch.bfloat16)
    w_gate_up = torch.randn(EXPERTS, 2 * WIDTH, HIDDEN, device="cuda", generator=g, dtype=torch.bfloat16) / 16
    w_down = torch.randn(EXPERTS, HIDDEN, WIDTH, device="cuda", generator=g, dtype=torch.bfloat16) / 16
    # skewed routing (the compile never sees it): expert ends, 16-row aligned
    offs = torch.tensor([16, 16, 32, 40, 48, 48, 56, rows], device="cuda", dtype=torch.int32)
    return x, w_gate_up, w_down, offs


@pytest.fixture(scope="module")
def grouped_ranker(tmp_path_factory):
    from kselect.selector.decide.grouped_ranker import load_grouped_ranker
    from kselect.training.data.synthetic import FINGERPRINT

    props = torch.cuda.get_device_properties(0)
    card = dict(
        FINGERPRINT,
        gpu_name=props.name,
        sm_count=props.multi_processor_count,
        shared_memory_per_block_optin=props.shared_memory_per_block_optin,
    )
    ranker = load_grouped_ranker(train_fixture_model(tmp_path_factory.mktemp("gpu-grouped"), card))
    assert ranker is not None
    return ranker


def compile_recording(tmp_path, kselect: dict | None):
    """Compile the layer under max-autotune (kselect enabled with `kselect`, or stock); returns
    (output, the grouped candidates of every grouped choice list Inductor built, the Selector)."""
    from kselect.selector.compat import autotune, choice_candidates
    from kselect.selector.inductor import lifecycle as ksi
    from kselect.selector.ops.naming import choices_kind

    from inductor_sandbox import inductor_sandbox

    built = []

    def record(choices):  # before or after kselect's own preprocessing: each list as it is here
        if choices_kind(choices) == "grouped_mm":
            built.append({c.key for c in choice_candidates.grouped_caller_candidates(choices) if c is not None})
        return choices

    remove = autotune.add_preprocessing_fn(record)
    sel = None
    try:
        with inductor_sandbox(tmp_path, lambda *a: None):
            if kselect is not None:
                sel = ksi.enable(**kselect)
            torch._dynamo.reset()
            out = torch.compile(moe_layer)(*layer_inputs())  # the sandbox sets max_autotune
    finally:
        remove()
        ksi.disable()
        torch._dynamo.reset()
    return out, built, sel


@pytest.mark.parametrize("mode", ["predict", "verify"])
def test_kselect_picks_a_stock_choice_of_each_grouped_gemm_and_matches_eager(mode, grouped_ranker, tmp_path):
    from kselect.models import shipped_model_path
    from kselect.selector.decide.rankers import CostModelRanker
    from kselect.selector.model.cost_model import CostModel

    want = moe_layer(*layer_inputs())
    _, stock_sets, _ = compile_recording(tmp_path / "stock", None)
    assert len(stock_sets) == 2 and all(len(s) > 10 for s in stock_sets)  # ATen and Triton configs each
    model = CostModel.load(shipped_model_path("h200-bf16.json"))
    ranker = CostModelRanker(model, model.fingerprint, grouped=grouped_ranker)
    got, _, sel = compile_recording(
        tmp_path / mode, {"mode": mode, "ranker": ranker, "cache_dir": str(tmp_path / "cache")}
    )
    decided = [d for d in sel.decisions if d["problem"].startswith("grouped_mm:")]
    assert len(decided) == 2 and sel.stats["fallbacks"] == 0
    for decision in decided:
        assert decision["kept"] and any(set(decision["kept"]) <= stock for stock in stock_sets)
        if mode == "predict":
            assert len(decision["kept"]) == 1
    if mode == "verify":  # Inductor's benchmark of each kept few reached kselect, whose winner is cached
        assert sel.stats["verified"] == 2
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
