"""What kselect will do on this machine, said before any compile: `kselect doctor`.

One report a user can paste into a bug: the card and its fingerprint, the model that would
serve it and why (or why none does), the torch and Triton versions and whether kselect
supports them, the settings the environment gives (KSELECT_*), the decision cache, and which
GEMM ops and dtypes kselect decides here. Reads only; compiles nothing, times nothing.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field


@dataclass
class Report:
    torch: str
    triton: str | None
    torch_supported: bool
    torch_problem: str | None
    device: dict  # the fingerprint (selector/fingerprint.py), with its architecture
    model: str | None  # the model file that would serve, or None
    model_reason: str  # why that model (or why none)
    mode: str  # KSELECT_MODE: what `import torch` turns on with no code change
    settings_error: str | None
    cache_dir: str | None
    decides: dict = field(default_factory=dict)  # {"ops": [...], "dtypes": [...]}: empty when nothing
    measured_picks: dict = field(default_factory=dict)  # predict's exact hits on this card: counts

    def as_dict(self) -> dict:
        return asdict(self)

    def lines(self) -> list[str]:
        """The report as text, one fact a line."""
        dev = self.device
        card = dev.get("gpu_name") or f"no GPU ({dev.get('device_type')}: {dev.get('cpu', '?')})"
        out = [
            f"card:        {card}"
            + (f", {dev.get('sm_count')} SMs, {dev.get('architecture')}" if dev.get("gpu_name") else ""),
            f"fingerprint: {dev.get('fingerprint_id')}",
            f"torch:       {self.torch} ({'supported' if self.torch_supported else self.torch_problem})",
            f"triton:      {self.triton or 'not installed'}",
            f"model:       {self.model or 'none'} -- {self.model_reason}",
            f"mode:        {self.mode} (KSELECT_MODE)"
            + (f"; settings error: {self.settings_error}" if self.settings_error else ""),
            f"cache:       {self.cache_dir or 'off (KSELECT_CACHE_DIR unset)'}",
        ]
        if self.decides:
            out.append(f"decides:     {', '.join(self.decides['ops'])} in {', '.join(self.decides['dtypes'])}")
        else:
            out.append("decides:     nothing here: every GEMM gets stock autotuning")
        if self.measured_picks:
            got = self.measured_picks
            out.append(
                f"predict:     {got['gemms']} GEMMs measured on this card take their measured pick "
                f"({got['templates']} a template; KSELECT_MEASURED_PICKS)"
            )
        return out


def _versions() -> tuple[str, str | None]:
    import torch

    try:
        import triton

        return torch.__version__, triton.__version__
    except ImportError:
        return torch.__version__, None


class FingerprintFileError(ValueError):
    """A --fingerprint file that names no card; the message names the file and what is wrong."""


def card_fingerprint(path) -> dict:
    """A card's fingerprint read from a file, as the selector sees that card: a dataset's
    fingerprint.json or a model's sidecar (.meta.json, its `fingerprint`). Raises
    FingerprintFileError for a file that is missing, not JSON, or names no GPU."""
    import json
    from pathlib import Path

    from kselect.selector.model.checks import architecture

    try:
        got = json.loads(Path(path).read_text())
    except OSError as exc:
        raise FingerprintFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise FingerprintFileError(f"{path}: not JSON ({exc})") from None
    fp = got.get("fingerprint", got) if isinstance(got, dict) else None
    if not isinstance(fp, dict) or not fp.get("gpu_name"):
        raise FingerprintFileError(
            f"{path}: names no GPU (expected a card's fingerprint: a dataset's fingerprint.json "
            "or a model's .meta.json)"
        )
    fp = dict(fp, device_type="cuda")  # ROCm cards are torch "cuda" devices too
    fp["architecture"] = architecture(fp)
    return fp


def _device(device: str | None) -> dict:
    import torch

    from kselect.selector.fingerprint import device_fingerprint
    from kselect.selector.model.checks import architecture

    name = device or ("cuda" if torch.cuda.is_available() else "cpu")
    fp = device_fingerprint(torch.device(name))
    fp["architecture"] = architecture(fp)
    return fp


def _model(fingerprint: dict, named: object) -> tuple[str | None, str, object]:
    """(model file, why, its ranker or None) for this device, as the selector would choose."""
    from kselect.selector.inductor.device_rankers import joined_dtype_rankers
    from kselect.selector.model.cost_model import CostModel, ModelError
    from kselect.selector.model.discovery import load_shipped, serve_named
    from kselect.selector.model.reach import ReachModel, reach_path

    if not fingerprint.get("gpu_name"):
        return None, "the cost models rank GPU kernels; on a CPU kselect leaves GEMMs to stock autotuning", None
    joined: dict = {}  # a model the user named decides its own dtypes alone
    try:
        if named:
            model = CostModel.load(str(named))
            warned = serve_named(model, fingerprint, named)
            why = "named by KSELECT_MODEL" + (f"; {warned}" if warned else ", trained on this card")
            path = str(named)
        else:
            model = load_shipped(fingerprint=fingerprint)
            trained = model.fingerprint.get("gpu_name")
            scope = "this card" if model.device_scope == "card" else f"{trained}, same architecture"
            why = f"shipped, trained on {scope}"
            path = model.metadata_.get("booster_file") or "shipped model"
            joined = joined_dtype_rankers(fingerprint, model)  # the card's models of other dtypes, as at serving
            files: dict = {}
            for dtype, other in joined.items():
                files.setdefault(other.model.metadata_.get("booster_file") or "shipped model", []).append(dtype)
            why += "".join(f"; {', '.join(d)}: {f}" for f, d in files.items())
        reach = ReachModel.beside(model)  # verify's budget, as at serving
        if reach is not None:
            why += f"; verify's budget: {reach_path(model.path_).name}"
    except ModelError as exc:
        return None, f"{exc} -- stock autotuning", None
    from kselect.selector.decide.grouped_ranker import grouped_beside
    from kselect.selector.decide.rankers import CostModelRanker

    # the grouped model beside it joins it as at serving: `decided` then names grouped_mm
    grouped = grouped_beside(fingerprint, named or None)
    return path, why, CostModelRanker(model, fingerprint, grouped=grouped, by_dtype=joined, reach=reach)


def decided(ranker) -> dict:
    """The GEMM ops and dtypes the selector decides with `ranker`: the ops every model ranks, plus
    those decided only where the ranker holds them (fp8 scaled_mm, named with its scaling kinds;
    grouped_mm, with a grouped model beside the cost model)."""
    from kselect.selector.ops import registry

    return {"ops": registry.decided(ranker), "dtypes": list(ranker.dtypes)}


def measured_picks(fingerprint: dict) -> dict:
    """How many GEMMs this card's shipped measured picks hold, and how many of them pick a
    template ({} for none: model/measured_picks.py)."""
    from kselect.selector.model.measured_picks import card_picks

    picks = card_picks(fingerprint) if fingerprint.get("gpu_name") else {}
    if not picks:
        return {}
    return {"gemms": len(picks), "templates": sum(not key.startswith("aten:") for key in picks.values())}


def diagnose(device: str | None = None, environ=None, fingerprint: dict | None = None) -> Report:
    """What kselect would do in a process started with `environ` (default os.environ), on
    `device`, or on the card `fingerprint` names (card_fingerprint: asked from any machine)."""
    from kselect.selector.compat.torch_release import torch_support_problem
    from kselect.selector.config import read

    environ = os.environ if environ is None else environ
    torch_version, triton_version = _versions()
    problem = torch_support_problem()
    try:
        options, settings_error = read(environ), None
    except ValueError as exc:  # a bad KSELECT_* value: OptionError names it
        options, settings_error = {}, str(exc)
    fp = fingerprint if fingerprint is not None else _device(device)
    path, why, ranker = _model(fp, options.get("model"))
    decides = decided(ranker) if ranker is not None and not problem else {}
    return Report(
        torch=torch_version,
        triton=triton_version,
        torch_supported=problem is None,
        torch_problem=problem,
        device=fp,
        model=path,
        model_reason=why,
        mode=options.get("mode", "off"),
        settings_error=settings_error,
        cache_dir=options.get("cache_dir"),
        decides=decides,
        measured_picks=measured_picks(fp) if decides and options.get("measured_picks", True) else {},
    )
