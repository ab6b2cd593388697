"""A Triton candidate's predicted compile cost: what verify pays to keep it.

Verify compiles its kept templates in parallel before timing them, so a GEMM's measurement
waits for the slowest of them (reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait s3: lm_head's BK256 two-warp tile, ~1 s,
every time, and it never won). The model predicts a template's compile CPU time (Triton's
front end and LLVM in the thread, plus ptxas) from its config alone, so the policy can price
a kept template before anything compiles (policy.choose_kept's `compile_budget`).

Trained by `kselect compile-cost fit` on compile times measured on a CPU for one CUDA target
(`kselect compile-cost collect`, kernels/triton/cross_compile.py): XGBoost regression on log ms,
saved as XGBoost JSON with a `.meta.json` sidecar of kind "compile-cost" (selector/model/artifact.py),
evaluated with numpy (forest.TreeEnsemble) so the selector never imports xgboost for it. Its unit
is the collecting CPU's milliseconds; the policy compares candidates with each other, so the unit cancels.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.selector.model import artifact
from kselect.selector.model.artifact import ModelError

KIND = "compile-cost"
TEMPLATES = ("mm", "persistent_tma")  # the Triton templates with a compile of their own
COMPILE_FEATURES = (
    "persistent_tma",
    "BLOCK_M",
    "BLOCK_N",
    "BLOCK_K",
    "num_stages",
    "num_warps",
    "EVEN_K",
    "HINT_M",
    "HINT_N",
    "log2_acc_per_thread",
    "log2_loads_per_thread",
    "log2_smem_bytes",
)


def compile_fields(problem: Problem, candidate: Candidate) -> dict | None:
    """The fields compile cost depends on, as the collector records them (None: a candidate
    that compiles no Triton template: ATen, decompose-k, other backends)."""
    if candidate.backend != "triton" or candidate.template not in TEMPLATES:
        return None
    kw = candidate.kwargs
    bm, bn, bk = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"]
    mm = candidate.template == "mm"
    return {
        "template": candidate.template,
        "BLOCK_M": bm,
        "BLOCK_N": bn,
        "BLOCK_K": bk,
        "num_stages": kw["num_stages"],
        "num_warps": kw["num_warps"],
        "EVEN_K": mm and problem.K % bk == 0,
        "HINT_M": mm and problem.layout[0] == "t" and problem.M >= bm,
        "HINT_N": mm and problem.layout[1] == "n" and problem.N >= bn,
    }


def _flag(v) -> float:
    return 1.0 if str(v).lower() in ("true", "1", "1.0") else 0.0


def compile_features(rows: Iterable[Mapping]) -> np.ndarray:
    """One row of COMPILE_FEATURES per record (collector CSV rows or compile_fields dicts):
    the tile, plus the per-thread work that unrolled code and register pressure grow with."""
    out = []
    for r in rows:
        bm, bn, bk = float(r["BLOCK_M"]), float(r["BLOCK_N"]), float(r["BLOCK_K"])
        stages, warps = float(r["num_stages"]), float(r["num_warps"])
        threads = 32.0 * warps
        out.append(
            (
                float(r["template"] == "persistent_tma"),
                bm,
                bn,
                bk,
                stages,
                warps,
                _flag(r["EVEN_K"]),
                _flag(r["HINT_M"]),
                _flag(r["HINT_N"]),
                math.log2(bm * bn / threads),
                math.log2(bk * (bm + bn) / threads),
                math.log2(stages * bk * (bm + bn) * 2),
            )
        )
    return np.array(out, dtype=np.float64).reshape(-1, len(COMPILE_FEATURES))


class CompileCostModel(artifact.HyperParameters):
    """Predicts compile milliseconds from COMPILE_FEATURES (fit / predict_ms / save / load)."""

    def __init__(
        self,
        n_estimators: int = 150,
        max_depth: int = 5,
        learning_rate: float = 0.1,
        subsample: float = 0.8,
        seed: int = 0,
    ):
        self.keep_params(locals())

    def fit(self, X: np.ndarray, ms: np.ndarray) -> "CompileCostModel":
        import xgboost as xgb

        ms = np.asarray(ms, dtype=np.float64)
        if len(ms) == 0 or not np.all(np.isfinite(ms)) or np.any(ms <= 0):
            raise ValueError("compile times must be finite and positive to fit on")
        params = {
            "objective": "reg:squarederror",
            "max_depth": self.max_depth,
            "eta": self.learning_rate,
            "subsample": self.subsample,
            "seed": self.seed,
            "nthread": 0,
        }
        self.booster_ = xgb.train(params, xgb.DMatrix(X, label=np.log(ms)), num_boost_round=self.n_estimators)
        self._forest = None
        return self

    def predict_ms(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64).reshape(-1, len(COMPILE_FEATURES))
        if getattr(self, "_forest", None) is not None:
            return np.exp(self._forest.margin(X))
        if getattr(self, "booster_", None) is None:
            raise ModelError("CompileCostModel is not fitted")
        return np.exp(self.booster_.inplace_predict(X))

    @property
    def typical_ms(self) -> float:
        """The median compile of the data it was fitted on (the policy's floor), in its unit."""
        q = (getattr(self, "metadata_", None) or {}).get("cpu_ms_quantiles") or {}
        value = q.get("50", q.get(50))
        if value is None:
            raise ModelError("compile-cost model metadata lacks the median compile (cpu_ms_quantiles)")
        return float(value)

    def predict_for(self, problem: Problem, candidates: Sequence[Candidate]) -> np.ndarray:
        """Predicted ms per candidate: 0 for ATen (nothing to compile), NaN where unknown."""
        out = np.full(len(candidates), np.nan)
        rows, where = [], []
        for i, c in enumerate(candidates):
            if c.backend == "aten":
                out[i] = 0.0
            elif (fields := compile_fields(problem, c)) is not None:
                rows.append(fields)
                where.append(i)
        if rows:
            out[where] = self.predict_ms(compile_features(rows))
        return out

    def save(self, path: str | Path, metadata: Mapping) -> Path:
        meta = {**artifact.header(KIND, COMPILE_FEATURES), "params": self.get_params(), **dict(metadata)}
        return artifact.save(self.booster_, Path(path), meta)

    @classmethod
    def load(cls, path: str | Path) -> "CompileCostModel":
        """Read a saved model (numpy trees); ModelError names what is wrong with the files."""
        from kselect.selector.model.forest import TreeEnsemble, UnsupportedModel

        path, meta = artifact.load_sidecar(path, KIND, COMPILE_FEATURES)
        try:
            forest = TreeEnsemble(artifact.read_model_json(path))
        except UnsupportedModel as exc:
            raise ModelError(f"{path}: {exc}") from None
        if forest.n_features != len(COMPILE_FEATURES):
            raise ModelError(f"{path} takes {forest.n_features} features, not {len(COMPILE_FEATURES)}")
        model = cls.with_params(meta.get("params"))
        model._forest, model.metadata_, model.path_ = forest, meta, path
        return model


def shipped_compile_cost(arch: str) -> CompileCostModel | None:
    """The shipped compile-cost model for CUDA target `arch` (sm_90, ...; its sidecar's `arch`),
    or None (artifact.discover)."""
    found = artifact.discover(KIND, where=lambda meta: meta.get("arch") == arch)
    return CompileCostModel.load(found[0]) if found else None
