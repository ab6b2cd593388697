"""Seeded random kills of a real CPU collection -- the worker (from outside and at injected
points: operand set-up, mid-candidate, mid part-file write, just after a part is published),
the supervisor alone (SIGKILL, SIGTERM) and both at once -- each followed by a resume.

Afterwards: every `ok` row ever on disk is still there and `ok` (0 lost), no identity was ever
written twice (0 measured twice), every shape of the shapes file has exactly one row, no
candidate was blamed for a death that came from outside, and no worker outlived its
supervisor (checked after each supervisor-level kill).
"""

import json
import random
import signal
import subprocess
import time

import pytest

from kselect.training.data.dataset import DatasetDir
from kselect.training.measure.fault_injection import FAULT_ENV

from fault_harness import (
    PartRows,
    alive,
    collect_cmd,
    kill,
    start,
    stop_tree,
    stop_worker,
    wait_for,
    worker_of,
    write_shapes,
)

SEED = 20261205
# Enough shapes that the 16 kills land before the collection ends: each kill waits for one more
# published part, then at most 0.3 s (~4 shapes at 10 ms a candidate), so the rounds use ~30
# shapes and at worst ~70; the final resume measures the rest.
N_SHAPES = 100
# Each round: one injected worker death (a stage, in shuffled order), OUTSIDE_KILLS worker
# kills, one supervisor-level kill; 4 x (1 + 2 + 1) = 16 kill points, each kind in every round.
INJECTED_STAGES = ("setup", "unit", "write", "written")
OUTSIDE_KILLS = (2, 2)
ENDINGS = ("supervisor", "both", "term")


@pytest.mark.slow
def test_random_kills_then_resume_lose_and_duplicate_nothing(tmp_path):
    rng = random.Random(SEED)
    shapes, out, log = tmp_path / "shapes.csv", tmp_path / "ds", tmp_path / "collect.log"
    keys = write_shapes(shapes, N_SHAPES, SEED)
    cmd = collect_cmd(shapes, out, target_ms=10)
    parts = PartRows(out)
    kills: list[str] = []
    ok_seen: set = set()
    workers: set[int] = set()

    def after_progress(proc, published: int) -> int | None:
        """Wait until the (restarted) worker publishes beyond `published` parts -- the unit a
        kill interrupted got through, so no unit is killed twice -- then a random moment."""
        wait_for(lambda: parts.count() > published or proc.poll() is not None, 90, "the worker's progress")
        wait_for(lambda: worker_of(proc.pid) or proc.poll() is not None, 60, "a worker")
        if proc.poll() is None:
            time.sleep(rng.uniform(0.0, 0.3))
        worker = worker_of(proc.pid)
        if worker:
            workers.add(worker)
        return worker if proc.poll() is None else None

    stages = rng.sample(INJECTED_STAGES, len(INJECTED_STAGES))
    endings = rng.sample(ENDINGS, len(ENDINGS)) + [rng.choice(ENDINGS)]
    for r, (stage, ending) in enumerate(zip(stages, endings)):
        marker = tmp_path / f"fired-{r}"
        proc = start(cmd, log, {FAULT_ENV: f"{stage}:{rng.randint(1, 3)}:{marker}"})
        try:
            wait_for(lambda: marker.exists() or proc.poll() is not None, 90, "the injected fault")
            assert marker.exists(), log.read_text()[-3000:]
            kills.append(f"round {r}: worker at {stage}")
            published = parts.count()
            ok_seen |= parts.ok_identities()
            for _ in range(rng.randint(*OUTSIDE_KILLS)):
                worker = after_progress(proc, published)
                assert worker, "the collection ended before the planned kills: add shapes"
                kill(worker)
                kills.append(f"round {r}: worker from outside")
                published = parts.count()
                ok_seen |= parts.ok_identities()
            worker = after_progress(proc, published)
            assert worker, "the collection ended before the planned kills: add shapes"
            if ending == "term":
                kill(proc.pid, signal.SIGTERM)
                assert proc.wait(timeout=60) == 128 + signal.SIGTERM
            else:
                kill(proc.pid)
                if ending == "both":
                    kill(worker)
                proc.wait(timeout=60)
            wait_for(lambda: not alive(worker), 10, f"worker {worker} to die with its supervisor ({ending})")
            kills.append(f"round {r}: {ending}")
            ok_seen |= parts.ok_identities()
        finally:
            stop_tree(proc)
            for w in workers:
                stop_worker(w, out)

    final = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr[-3000:]
    assert json.loads(final.stdout.strip().splitlines()[-1])["ok"] is True

    assert len(kills) >= 16, kills
    raw = parts.rows()
    assert not raw.duplicated(["problem_key", "candidate_key"]).any(), "an identity was written twice"
    df = DatasetDir(out).load()
    assert sorted(df["problem_key"]) == sorted(keys)  # every shape exactly once
    ok_now = set(zip(df.loc[df["status"] == "ok", "problem_key"], df.loc[df["status"] == "ok", "candidate_key"]))
    assert ok_seen <= ok_now, f"{len(ok_seen - ok_now)} ok rows lost"
    bad = df[df["status"] != "ok"]
    assert bad.empty, f"deaths from outside blamed on candidates: {bad[['problem_key', 'error']].values.tolist()}"
    assert not list((out / "parts").glob(".*.tmp")), "a half-written part file was left behind"
