"""Run inside a venv that has only kselect's runtime dependencies (torch, numpy): a stock
max-autotune compile of a frozen Linear records what Inductor measured, then kselect in
predict mode decides the same GEMM from those measurements. Prints one JSON line."""

import json
import sys
import warnings

import torch

import kselect.selector as ks
from kselect.selector.compat import autotune, choice_candidates, signatures
from kselect.selector.decide.rankers import MeasuredRanker


def compile_once():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Linear(96, 80).eval()
    x = torch.randn(64, 96)
    with torch.no_grad():
        got = torch.compile(model)(x)
        torch.testing.assert_close(got, model(x))


runs = []
remove = autotune.add_feedback_saver(lambda timings, name, nodes, choices, *rest: runs.append((timings, choices)))
# every cache that would let the second compile skip lowering or the first skip benchmarking is
# off (not force_disable_caches: that rebuilds every C++ kernel in a fresh folder per compile)
caches_off = {"fx_graph_cache": False, "autotune_local_cache": False}
with (
    torch._functorch.config.patch(enable_autograd_cache=False),
    torch._inductor.config.patch(max_autotune=True, freezing=True, **caches_off),
):
    compile_once()
    table = {}
    for timings, choices in runs:
        problem, _, _ = signatures.choices_signature(choices)
        for choice, ms in timings.items():
            table.setdefault(problem.key, {})[choice_candidates.caller_candidate(choice).key] = ms
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sel = ks.enable("predict", ranker=MeasuredRanker(table))
        compile_once()
remove()
# the CLI's training commands name the extra they need instead of a traceback
from kselect.training.cli.main import main as cli  # noqa: E402

cli_status = cli(["dataset", "summary", "nowhere"])
heavy = sorted(
    m for m in ("pandas", "pyarrow", "sklearn", "scipy", "xgboost", "matplotlib", "tqdm") if m in sys.modules
)
print(
    json.dumps(
        {
            "decisions": sel.stats["decisions"],
            "fallbacks": sel.stats["fallbacks"],
            "problems": sorted(table),
            "warnings": [str(w.message) for w in caught if "kselect" in str(w.message)],
            "heavy_modules": heavy,
            "cli_status": cli_status,
        }
    )
)
