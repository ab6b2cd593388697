"""Collection over a Ray cluster (training/measure/ray_fanout.py) on real local Ray clusters of
the CPU: a worker node killed mid-run loses no row and duplicates none, the dataset is compacted
once, by the driver; the command line's --ray runs the same, and says which extra it needs."""

import json
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kselect.kernels import Problem
from kselect.kernels.candidate_list import candidate_list
from kselect.training.cli.main import main
from kselect.training.data.dataset import DatasetDir
from kselect.training.measure.collect_plan import shard_problems

from fault_harness import KEY, PartRows, alive, collect_cmd, kill, wait_for, write_shapes

SLOW = (256, 320)  # fp32 shapes of a tenth of a second or so each


def _problems(n: int, seed: int) -> list[Problem]:
    rng = random.Random(seed)
    shapes = {(rng.randint(*SLOW), rng.randint(*SLOW), rng.randint(*SLOW)) for _ in range(n)}
    return [Problem(m, n_, k, "fp32") for m, n_, k in sorted(shapes)]


def _expected(problems: list[Problem]) -> set[tuple[str, str]]:
    return {(p.key, c.key) for p in problems for c in candidate_list(p, ["aten"], "default", 0)}


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def _shard_worker(out: Path, tag: str) -> int | None:
    """The live collection worker process of shard worker `tag` (found by its plan file)."""
    plan = str(out / "inflight" / f"{tag}.plan.json").encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"kselect.training.measure.collect" in cmd and plan in cmd and alive(int(proc.name)):
            return int(proc.name)
    return None


def _node_running(nodes: list, pid: int):
    """The cluster node whose raylet `pid` descends from (Ray starts workers under the raylet)."""
    from ray._private import ray_constants

    raylets = {node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid: node for node in nodes}
    while pid > 1:
        if pid in raylets:
            return raylets[pid]
        pid = _parent(pid)
    raise AssertionError("the shard's worker runs under no node of the test cluster")


def _rows_of(parts: PartRows, keys: set[str]):
    """The rows on disk of the problems `keys` (one shard's)."""
    df = parts.rows()
    return df[df["problem_key"].isin(keys)]


@pytest.mark.slow
def test_a_worker_node_killed_mid_run_loses_and_duplicates_no_row(tmp_path):
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    from ray.cluster_utils import Cluster

    from kselect.training.measure.ray_fanout import collect_on_ray

    on_sigterm = signal.getsignal(signal.SIGTERM)  # ray.init replaces it, for good
    cluster = Cluster(
        initialize_head=True,
        connect=True,
        head_node_args={
            "num_cpus": 0,  # the driver's node runs no task: both shards run on the worker nodes
            # a killed node is declared dead within a second, not after Ray's default health checks
            "_system_config": {
                "health_check_initial_delay_ms": 0,
                "health_check_period_ms": 200,
                "health_check_failure_threshold": 3,
            },
        },
    )
    try:
        nodes = [cluster.add_node(num_cpus=1) for _ in range(2)]
        cluster.wait_for_nodes()
        problems, out = _problems(12, seed=11), tmp_path / "ds"
        shards = {f"s{i}of2gcpu": {p.key for p in shard_problems(problems, (i, 2))} for i in range(2)}
        parts, at_end, done = PartRows(out), {}, {}

        def before_compact():
            at_end["rows"] = parts.rows()
            at_end["compacted"] = DatasetDir(out).compact_path.exists()

        def drive():
            try:
                done["result"] = collect_on_ray(
                    problems,
                    out,
                    backends=["aten"],
                    space="default",
                    device="cpu",
                    target_ms=10,
                    before_compact=before_compact,
                )
            except BaseException as exc:  # noqa: BLE001 -- reported by the test thread
                done["error"] = exc

        driver = threading.Thread(target=drive, daemon=True)
        driver.start()
        # a shard with two shapes on disk and more to go: kill the node that runs it
        tag = wait_for(
            lambda: next((t for t, keys in shards.items() if len(_rows_of(parts, keys)) >= 2), None),
            120,
            "a shard's first part files",
        )
        worker = wait_for(lambda: _shard_worker(out, tag), 30, f"shard {tag}'s collection worker")
        # frozen where it is (perhaps mid-write), so the node dies before the shard can end
        kill(worker, signal.SIGSTOP)
        victim = _node_running(nodes, worker)
        cluster.remove_node(victim, allow_graceful=False)
        wait_for(lambda: not alive(worker), 30, "the killed node's collection worker to die with it")
        on_disk_at_kill = len(_rows_of(parts, shards[tag]))
        assert on_disk_at_kill < len(shards[tag]), "the shard ended before its node was killed: add shapes"

        driver.join(timeout=240)
        assert not driver.is_alive(), "the Ray collection did not end"
        assert "error" not in done, done.get("error")
        result = done["result"]
    finally:
        ray.shutdown()
        cluster.shutdown()
        signal.signal(signal.SIGTERM, on_sigterm)

    # raw part files as the last task left them, before the driver's compaction
    raw = at_end["rows"]
    assert at_end["compacted"] is False  # no task compacted
    identities = list(zip(raw["problem_key"], raw["candidate_key"]))
    expected = _expected(problems)
    assert set(identities) == expected, f"lost: {sorted(expected - set(identities))[:5]}"
    assert len(identities) == len(expected), raw[raw.duplicated(KEY, keep=False)]
    assert (raw["status"] == "ok").all()
    assert raw["problem_key"].isin(shards[tag]).sum() > on_disk_at_kill  # the shard was re-run elsewhere
    # one compaction, by the driver: every row in measurements.parquet, no part file left
    assert result["ok"] and result["shards"] == 2 and not result["shards_failed"]
    assert result["compacted_rows"] == len(expected) == len(DatasetDir(out).load())
    assert not list((out / "parts").glob("*.parquet"))


@pytest.mark.slow
def test_collect_with_ray_local_runs_the_shards_and_compacts(tmp_path):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    shapes, out = tmp_path / "s.csv", tmp_path / "ds"
    keys = write_shapes(shapes, 8, seed=5)
    cmd = [*collect_cmd(shapes, out, target_ms=0.02), "--ray", "local", "--ray-shards", "2"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads(res.stdout.strip().splitlines()[-1])
    assert result["shards"] == 2 and result["problems"] == 8 and result["shapes_complete"] == 8
    assert "shard 0/2 ended" in res.stderr and "shard 1/2 ended" in res.stderr
    df = DatasetDir(out).load()
    assert sorted(set(df["problem_key"])) == sorted(keys) and len(df) == result["compacted_rows"]
    assert not list((out / "parts").glob("*.parquet"))


@pytest.mark.parametrize("verb", [["collect", "--device", "cpu", "--shapes-file", "s.csv"], ["retrain"]])
def test_ray_flag_without_ray_names_the_extra(tmp_path, monkeypatch, capsys, verb):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as where it is not installed
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.csv").write_text("M,N,K\n8,8,8\n")
    assert main([*verb, "--out", str(tmp_path / "out"), "--ray"]) == 2
    err = capsys.readouterr().err
    assert "kselect: error: --ray needs Ray" in err and "kselect[ray]" in err
    assert not (tmp_path / "out" / "retrain.json").exists()  # refused before any stage ran


def test_a_task_that_does_not_see_the_drivers_directory_refuses_to_measure(tmp_path):
    from kselect.training.measure.collect_plan import CollectError
    from kselect.training.measure.ray_fanout import collect_shard

    problems = [p.to_dict() for p in _problems(2, seed=1)]
    options = dict(backends=["aten"], space="default", workloads={}, target_ms=1, device="cpu", deadline=0.0)
    with pytest.raises(CollectError, match="--out must be a shared directory"):
        collect_shard(problems, str(tmp_path), "0/1", "token-of-a-driver-elsewhere", options)
    assert not (tmp_path / "parts").exists()
