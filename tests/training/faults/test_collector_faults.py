"""One probe per failure mode of the collector, on real `kselect collect` processes (CPU, ATen)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from kselect.kernels import Problem
from kselect.kernels.backend import get_backend
from kselect.training.data.dataset import DatasetDir
from kselect.training.data.rows import SHAPE_FAILED, row_for
from kselect.training.measure.fault_injection import FAULT_ENV

from fault_harness import (
    PartRows,
    alive,
    collect_cmd,
    descendants,
    kill,
    start,
    stop_tree,
    stop_worker,
    wait_for,
    worker_of,
    write_shapes,
)

BIG = (10**12, 64, 64)  # operands that cannot be allocated: dies before its first candidate
SETUP_CRASH = (5, 7, 9)  # the worker dies (exit 137) every time it sets this shape up
UNIT_CRASH = (6, 7, 9)  # ... every time it runs this shape's candidate
SLOW = (256, 320)  # shapes that keep a collection running for tens of seconds


def _key(shape) -> str:
    return Problem(*shape, "fp32").key


def test_worker_killed_from_outside_blames_no_candidate(tmp_path):
    shapes, out, log = tmp_path / "s.csv", tmp_path / "ds", tmp_path / "log"
    keys = write_shapes(shapes, 40, seed=1)
    parts = PartRows(out)
    proc = start(collect_cmd(shapes, out, target_ms=5), log)
    killed = 0
    try:
        for _ in range(2):
            published = parts.count()
            wait_for(lambda: parts.count() > published + 2 or proc.poll() is not None, 90, "progress")
            worker = worker_of(proc.pid)
            if worker and proc.poll() is None:
                kill(worker)
                killed += 1
        assert proc.wait(timeout=300) == 0, log.read_text()[-3000:]
    finally:
        stop_tree(proc)
    assert killed == 2, "the collection ended before the kills: add shapes"
    assert not parts.rows().duplicated(["problem_key", "candidate_key"]).any()
    df = DatasetDir(out).load()
    assert sorted(df["problem_key"]) == sorted(keys)
    assert (df["status"] == "ok").all(), df.loc[df["status"] != "ok", "error"].tolist()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_worker_dies_with_its_supervisor(tmp_path, sig):
    shapes, out, log = tmp_path / "s.csv", tmp_path / "ds", tmp_path / "log"
    write_shapes(shapes, 30, seed=2, sizes=SLOW)
    proc = start(collect_cmd(shapes, out, target_ms=50), log)
    worker = wait_for(lambda: worker_of(proc.pid), 90, "the worker")
    kill(proc.pid, sig)
    proc.wait(timeout=60)
    try:
        wait_for(lambda: not alive(worker), 10, f"worker {worker} to die with its supervisor")
    finally:
        stop_worker(worker, out)
    if sig == signal.SIGTERM:
        assert proc.returncode == 128 + signal.SIGTERM


@pytest.mark.slow
def test_shape_failures_are_recorded_skipped_and_reported(tmp_path):
    """Operands that cannot be allocated, and a worker that dies setting a shape up: each shape
    is recorded as failed and skipped, quickly, the command exits 1 naming them; a candidate
    that always kills its worker is retried once, then recorded with both exit reasons. A torn
    in-flight record left by an earlier run is ignored, not fatal."""
    shapes, out = tmp_path / "s.csv", tmp_path / "ds"
    keys = write_shapes(shapes, 2, seed=3, extra=[BIG, SETUP_CRASH, UNIT_CRASH])
    torn = out / "inflight" / "s0of1gcpu.json"
    torn.parent.mkdir(parents=True)
    torn.write_text('{"problem": {"M": 1')
    env = {**os.environ, FAULT_ENV: f"at:^(setup {_key(SETUP_CRASH)}|unit {_key(UNIT_CRASH)} )"}
    t0 = time.time()
    res = subprocess.run(collect_cmd(shapes, out), env=env, capture_output=True, text=True, timeout=120)
    assert time.time() - t0 < 90
    assert res.returncode == 1, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    assert f"ignoring unreadable in-flight record {torn}" in res.stderr
    result = json.loads(res.stdout.strip().splitlines()[-1])
    assert result["shapes_failed"] == sorted([_key(BIG), _key(SETUP_CRASH)])
    assert result["crashes"] == 4 and result["shapes_complete"] == 3 and result["ok"] is False
    assert "2 shape(s) failed before their first candidate" in res.stderr and _key(BIG) in res.stderr

    df = DatasetDir(out).load().set_index("problem_key")
    assert sorted(df.index) == sorted(keys)
    assert df.loc[_key(BIG), "error"].startswith(SHAPE_FAILED + "RuntimeError")
    assert df.loc[_key(SETUP_CRASH), "error"] == (
        SHAPE_FAILED + "worker died while setting up this shape (exit code 137), "
        "and again in a fresh worker (exit code 137)"
    )
    assert df.loc[_key(UNIT_CRASH), "error"] == (
        "worker died while running this candidate (exit code 137), and again in a fresh worker (exit code 137)"
    )
    ok = [k for k in keys if k not in (_key(BIG), _key(SETUP_CRASH), _key(UNIT_CRASH))]
    assert (df.loc[ok, "status"] == "ok").all()

    # A rerun skips the failed shapes (no worker death, nothing written) and still says so.
    rows_before = len(PartRows(out).rows())
    again = subprocess.run(collect_cmd(shapes, out), capture_output=True, text=True, timeout=120)
    assert again.returncode == 1 and json.loads(again.stdout.strip().splitlines()[-1])["crashes"] == 0
    assert len(PartRows(out).rows()) == rows_before


def test_a_second_collector_on_a_locked_dataset_is_refused(tmp_path):
    shapes, out, log = tmp_path / "s.csv", tmp_path / "ds", tmp_path / "log"
    write_shapes(shapes, 30, seed=4, sizes=SLOW)
    first = start(collect_cmd(shapes, out, target_ms=50), log)
    try:
        worker = wait_for(lambda: worker_of(first.pid), 90, "the first collector's worker")
        second = subprocess.run(collect_cmd(shapes, out), capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr[-2000:]
        assert f"is being collected by process {first.pid}" in second.stderr
        assert worker_of(first.pid) == worker  # the first one carries on
    finally:
        stop_tree(first)
    assert not PartRows(out).rows().duplicated(["problem_key", "candidate_key"]).any()


_HOLD = """
import sys, time
from kselect.training.data.dataset_lock import collector_lock
with collector_lock(sys.argv[1], (0, 2)):
    print("held", flush=True)
    time.sleep(60)
"""


def test_shards_of_one_split_share_a_directory_others_are_refused(tmp_path):
    from kselect.training.data.dataset_lock import DatasetLockedError, collector_lock

    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with collector_lock(tmp_path, (1, 2)):  # the other shard of the split: fine
            pass
        for shard in [(0, 2), (0, 1), (2, 3)]:  # the same shard, or an overlapping split
            with pytest.raises(DatasetLockedError, match=f"process {holder.pid} "):
                with collector_lock(tmp_path, shard):
                    pass
    finally:
        holder.kill()
        holder.wait()
    with collector_lock(tmp_path, (0, 1)):  # released when its holder died
        pass


def test_a_shard_may_wait_for_its_lock_while_the_attempt_it_replaces_ends(tmp_path):
    from kselect.training.data.dataset_lock import DatasetLockedError, collector_lock

    hold = _HOLD.replace("time.sleep(60)", "time.sleep(1.5)")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(DatasetLockedError):  # no waiting: refused at once
            with collector_lock(tmp_path, (0, 2)):
                pass
        t0 = time.time()
        with collector_lock(tmp_path, (0, 2), wait_s=30):  # taken once the holder is gone
            assert holder.poll() is not None and time.time() - t0 < 20
    finally:
        holder.kill()
        holder.wait()


def test_duplicate_rows_resolve_to_the_ok_row_then_the_newest(tmp_path):
    ds = DatasetDir(tmp_path)
    p = Problem(8, 8, 8, "fp32")
    cand = get_backend("aten").candidates(p, "default")[0]
    q = Problem(9, 9, 9, "fp32")
    r = Problem(10, 10, 10, "fp32")
    # part files load in name order: "a-..." before "b-..."
    ds.append(
        [
            row_for(p, cand, status="launch_error", error="killed", collected_at=200.0),
            row_for(q, cand, status="launch_error", error="older", collected_at=100.0),
            row_for(r, cand, time_ms=2.0, collected_at=100.0),
        ],
        "a",
    )
    ds.append(
        [
            row_for(p, cand, time_ms=1.0, collected_at=100.0),
            row_for(q, cand, status="launch_error", error="newer", collected_at=200.0),
            row_for(r, cand, time_ms=3.0, collected_at=300.0),
        ],
        "b",
    )
    for df in (ds.load(), (ds.compact(), ds.load())[1]):
        got = df.set_index("problem_key")
        assert len(df) == 3
        assert got.loc[p.key, "status"] == "ok" and got.loc[p.key, "time_ms"] == 1.0  # ok beats failure
        assert got.loc[q.key, "error"] == "newer"  # else the newest
        assert got.loc[r.key, "time_ms"] == 3.0


_TWO_WORKERS = """
import sys
from kselect.kernels import Problem
from kselect.training.measure.collect import supervise
from kselect.training.measure.collect_plan import CollectPlan
from kselect.training.measure.supervisor import supervise_all
from kselect.training.measure.worker_process import workers_die_with_this_process
probs = [Problem(m, 300, 300, "fp32").to_dict() for m in range(256, 296)]
plans = [CollectPlan(out=sys.argv[1], problems=probs[i::2], backends=["aten"], space="default",
                     worker=f"w{i}", device="cpu", target_ms=50) for i in range(2)]
with workers_die_with_this_process():
    supervise_all(plans, [None, None], supervise)
"""


def test_a_stop_signal_ends_every_worker_thread_without_restart_or_blame(tmp_path):
    """Several workers (one supervisor thread each, as with several GPUs): SIGTERM kills every
    worker group; no thread restarts its worker or records the death against a candidate."""
    out = tmp_path / "ds"
    proc = start([sys.executable, "-c", _TWO_WORKERS, str(out)], tmp_path / "log")
    try:
        workers = wait_for(lambda: (lambda ws: ws if len(ws) == 2 else None)(_workers_of(proc.pid)), 90, "two workers")
        time.sleep(0.5)
        kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM, (tmp_path / "log").read_text()[-2000:]
        for w in workers:
            wait_for(lambda: not alive(w), 10, f"worker {w} to die")
    finally:
        stop_tree(proc)
    assert "retrying" not in (tmp_path / "log").read_text()
    rows = PartRows(out).rows()
    assert (rows["status"] == "ok").all()


def _workers_of(pid: int) -> list[int]:
    return [c for c in descendants(pid) if alive(c) and b"kselect.training.measure.collect" in _cmdline(c)]


def _cmdline(pid: int) -> bytes:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return b""


_LEAVES_A_CHILD = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
time.sleep(120)
"""


def test_what_a_dead_worker_started_dies_with_its_group():
    from kselect.training.measure.worker_process import kill_worker, start_worker

    proc = start_worker([sys.executable, "-c", _LEAVES_A_CHILD], dict(os.environ))
    try:
        child = wait_for(lambda: descendants(proc.pid), 30, "the worker's child")[0]
        kill(proc.pid)  # the worker dies from outside; its child lives on
        proc.wait(timeout=30)
        assert alive(child)
        kill_worker(proc)  # what the supervisor does after every worker exit
        wait_for(lambda: not alive(child), 10, "the worker's child to die with its group")
    finally:
        stop_tree(proc)


def test_a_worker_that_dies_at_start_up_gives_up_and_reports_the_shapes_lost(tmp_path):
    """Deaths with nothing in flight are charged to no candidate; after three in a row the
    collection stops, exits 1 and names the shapes it did not measure (a rerun resumes them)."""
    shapes, out = tmp_path / "s.csv", tmp_path / "ds"
    keys = write_shapes(shapes, 3, seed=5)
    env = {**os.environ, FAULT_ENV: "at:^start "}
    res = subprocess.run(collect_cmd(shapes, out), env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stderr[-3000:]
    result = json.loads(res.stdout.strip().splitlines()[-1])
    assert result["crashes"] == 3 and result["shapes_lost"] == sorted(keys) and result["shapes_complete"] == 0
    assert "3 shape(s) not measured: the worker kept dying" in res.stderr
    assert not (out / "parts").exists() or not list((out / "parts").glob("*.parquet"))


def test_shapes_left_by_the_time_limit_are_not_an_error(tmp_path):
    shapes, out = tmp_path / "s.csv", tmp_path / "ds"
    write_shapes(shapes, 3, seed=6)
    res = subprocess.run(
        [*collect_cmd(shapes, out), "--max-minutes", "0.0001"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads(res.stdout.strip().splitlines()[-1])
    assert result["ok"] is True and result["shapes_lost"] == []
    assert result["shapes_unfinished_time_limit"] == 3 - result["shapes_complete"] > 0
