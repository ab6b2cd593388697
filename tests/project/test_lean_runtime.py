"""`pip install kselect` with no extras: a fresh virtualenv gets torch and numpy only, and the
selector still decides GEMMs in a real max-autotune compile on this CPU."""

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from kselect.training.cli.bench import VERBS as BENCHES
from kselect.training.cli.main import SUBCOMMANDS

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    assert res.returncode == 0, (cmd, res.stdout[-3000:], res.stderr[-3000:])
    return res.stdout


def _closure(names: list[str]) -> list[metadata.Distribution]:
    """The installed distributions `names` need at run time (no extras), `names` included."""
    found: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        dist = metadata.distribution(todo.pop())
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in found:
            continue
        found[key] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(found.values())


def _link_distributions(dists: list[metadata.Distribution], site: Path) -> None:
    """Put `dists` into the venv whose site-packages is `site` as pip would find them there, each
    top-level entry of its RECORD a link to this environment's copy (the torch wheel unpacked
    again would prove nothing more and took most of this test's time). One the venv already
    has stays the venv's own."""
    own = {p.name.split("-")[0].lower().replace("_", "-") for p in site.glob("*.dist-info")}
    for dist in dists:
        if dist.metadata["Name"].lower().replace("_", "-") in own:
            continue
        # scripts (../../bin) and byte code of top-level modules (__pycache__) are left out
        for top in {Path(f).parts[0] for f in dist.files} - {"..", "__pycache__"}:
            (site / top).symlink_to(Path(dist.locate_file(top)))


def test_runtime_install_has_no_training_dependencies_and_decides(tmp_path):
    venv = tmp_path / "venv"
    # without a pip of its own (ensurepip unpacking one took seconds): this environment's pip
    # builds the wheel and installs it into the venv (`pip --python`), as the venv's own would
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = str(venv / "bin" / "python")
    pip = [sys.executable, "-m", "pip", "--python", py]
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).strip())
    _link_distributions(_closure(["torch", "numpy"]), site)
    # a wheel, as a user installs it: no editable path back into the checkout; built from a
    # copy of what the package holds, so the checkout gets no build/ folder
    src = tmp_path / "src"
    for folder in ("selector", "training", "kernels", "models"):
        shutil.copytree(REPO / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(src)])
    wheel = next((tmp_path / "dist").glob("kselect-*.whl"))
    _run([*pip, "install", "-q", str(wheel)])
    installed = {line.split("==")[0].lower() for line in _run([*pip, "freeze"]).split()}
    assert {"kselect", "torch", "numpy"} <= installed, installed  # the venv's, read by this pip
    assert not installed & {
        "pandas",
        "pyarrow",
        "scikit-learn",
        "scipy",
        "xgboost",
        "xgboost-cpu",
        "matplotlib",
        "tqdm",
    }, installed
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KSELECT_", "PYTHONPATH"))}
    out = _run([py, str(Path(__file__).parent / "lean" / "compile_with_runtime_only.py")], cwd=tmp_path, env=env)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["problems"] == ["mm:64x80x96:fp32:nt"]
    assert result["decisions"] == 1 and result["fallbacks"] == 0, result
    assert result["heavy_modules"] == [], result
    assert result["cli_status"] == 2, result
    # the console script lists every verb without the training extra, and a training verb
    # names the extra only when it runs
    kselect = str(venv / "bin" / "kselect")
    for words, verbs in ((["--help"], SUBCOMMANDS), (["bench", "--help"], BENCHES)):
        listed = _run([kselect, *words], cwd=tmp_path, env=env)
        assert all(f"    {verb} " in listed or f"    {verb}\n" in listed for verb in verbs), listed
    ran = subprocess.run(
        [kselect, "dataset", "summary", "nowhere"], capture_output=True, text=True, env=env, timeout=120
    )
    assert ran.returncode == 2, ran
    assert "`kselect dataset` needs the train extra" in ran.stderr, ran.stderr
    assert "pip install 'kselect[train]'" in ran.stderr, ran.stderr
    # the doctor is a runtime verb: it reports on a runtime-only install
    doctor = _run([kselect, "doctor"], cwd=tmp_path, env=env)
    assert "torch:" in doctor and "decides:" in doctor, doctor
