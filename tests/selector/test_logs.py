"""kselect's logs under TORCH_LOGS: `+kselect` and the `autotuning` artifact, in fresh processes
(torch reads TORCH_LOGS once, at import)."""

import subprocess
import sys

SCRIPT = (
    "from kselect.selector.logs import log_decision, register_with_torch_logs\n"
    "register_with_torch_logs()\n"
    "log_decision('kselect templates %s: kept %d', 'mm:8x16x32:fp32:nt', 2)\n"
)


def _stderr(torch_logs: str) -> str:
    env = {"PATH": "/usr/bin:/bin", **({"TORCH_LOGS": torch_logs} if torch_logs else {})}
    res = subprocess.run(
        [sys.executable, "-c", "import torch\n" + SCRIPT], capture_output=True, text=True, env=env, timeout=120
    )
    assert res.returncode == 0, res.stderr
    return res.stderr


def test_plus_kselect_shows_decisions():
    assert "kselect templates mm:8x16x32:fp32:nt: kept 2" in _stderr("+kselect")


def test_autotuning_artifact_shows_decisions():
    assert "kselect templates mm:8x16x32:fp32:nt: kept 2" in _stderr("autotuning")


def test_silent_by_default():
    assert "kept 2" not in _stderr(None)
