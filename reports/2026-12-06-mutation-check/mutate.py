"""Deliberate one-line bugs against the test suite, as a reviewer would try them.

Each mutation replaces one exact piece of text (found exactly once) in one file of a temporary
copy of the repository -- never the working tree -- and runs only the tests that guard it
there. The copy is imported as `kselect` (its parent folder goes first on PYTHONPATH, so the
subprocesses the tests start import it too). A mutation is **caught** when those tests fail.
The same tests first run on an unmutated copy, where they must pass with nothing skipped.

    .venv/bin/python reports/2026-12-06-mutation-check/mutate.py            # the CPU mutations
    python reports/2026-12-06-mutation-check/mutate.py --device gpu         # on a CUDA machine
    ... --only cache-key-without-model --out results.md

Prints one Markdown table (and writes it to --out); exits 1 unless every mutation run was caught.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# never copied: version control, environments, build output, and the reports (raw records)
SKIP = shutil.ignore_patterns(".git", ".venv", "reports", "__pycache__", "*.egg-info", ".pytest_cache", "build", "dist")


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # the file, relative to the repository root
    old: str  # the exact text replaced (it must occur once)
    new: str
    tests: tuple[str, ...]  # pytest node ids that guard it
    device: str  # "cpu" or "gpu": where the guarding tests can run
    what: str


MUTATIONS = [
    Mutation(
        "cache-key-without-model",
        "selector/decide/decider.py",
        '"ranker": getattr(ranker, "ident", type(ranker).__name__),',
        '"ranker": type(ranker).__name__,',
        ("tests/selector/test_selector_settings.py::test_decision_cache_key_holds_the_rankers_identity_not_its_class",),
        "cpu",
        "the decision-cache key names the ranker's class, not its identity",
    ),
    Mutation(
        "device-check-skipped",
        "selector/decide/rankers.py",
        "            self.model.check_device(self.fingerprint)\n",
        "            pass\n",
        ("tests/selector/test_selector_cpu.py::test_a_model_for_another_gpu_is_refused_and_its_own_gpu_ranks",),
        "cpu",
        "CostModelRanker.check skips check_device",
    ),
    Mutation(
        "failed-pick-counts-as-best",
        "training/learn/headroom.py",
        "pick = np.where(np.isfinite(pick), pick, aten)",
        "pick = np.where(np.isfinite(pick), pick, best)",
        ("tests/training/test_headroom.py::test_a_failed_pick_counts_as_atens_time",),
        "cpu",
        "capture_stats charges a failed pick the best time instead of ATen's",
    ),
    Mutation(
        "collector-remeasures-done",
        "training/measure/collect_worker.py",
        " if (p.key, c.key) not in done]",
        "]",
        (
            "tests/training/test_collect_cpu.py::test_worker_crash_mid_collection_loses_and_duplicates_nothing",
            "tests/training/test_collect_cpu.py::test_killed_run_resumes_on_rerun",
        ),
        "cpu",
        "a (re)started worker measures again what is on disk (rows written twice)",
    ),
    Mutation(
        "named-model-not-checked",
        "selector/inductor/lifecycle.py",
        "        sel.load_named_model()\n",
        "        pass\n",
        (
            "tests/selector/test_selector_api.py::test_enable_refuses_a_named_model_it_cannot_read_and_keeps_the_active_selector",
            "tests/selector/test_selector_api.py::test_enable_reads_a_named_model_once",
        ),
        "cpu",
        "enable(model=...) does not read the model it names",
    ),
    Mutation(
        "verify-keeps-one-choice",
        "selector/decide/gap_policy.py",
        '    if mode == "predict":\n        if len(templates) and',
        "    if True:\n        if len(templates) and",
        (
            "tests/selector/test_gpu_selector.py::test_verify_really_benchmarked",
            "tests/selector/test_gpu_selector.py::test_verify_own_timing_was_exercised",
        ),
        "gpu",
        "verify keeps one choice per GEMM, as predict does",
    ),
    Mutation(
        "predict-takes-the-worst",
        "selector/decide/decider.py",
        "return np.array(ranker.rank(problem, candidates, **epilogue), dtype=np.float64), None",
        "return -np.array(ranker.rank(problem, candidates, **epilogue), dtype=np.float64), None",
        ("tests/selector/test_gpu_pick_timing.py::test_no_pick_is_slower_than_plains_cublas",),
        "gpu",
        "the ranker's scores negated: predict takes the template ranked worst",
    ),
]


def copy_repo(dest_parent: Path) -> Path:
    """The repository's sources and tests copied to `dest_parent/kselect` (importable as kselect)."""
    dest = dest_parent / "kselect"
    shutil.copytree(REPO, dest, ignore=SKIP, symlinks=True)
    return dest


def mutate(copy: Path, m: Mutation) -> None:
    path = copy / m.path
    text = path.read_text()
    if text.count(m.old) != 1:
        raise SystemExit(f"{m.name}: {m.path} holds {text.count(m.old)} copies of {m.old!r}; expected one")
    path.write_text(text.replace(m.old, m.new))


def run_tests(copy: Path, tests: tuple[str, ...], timeout: float) -> dict:
    """Run `tests` in `copy` with `copy` imported as kselect; counts from pytest's JUnit XML."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy.parent), os.environ.get("PYTHONPATH", "")])}
    where = subprocess.run(
        [sys.executable, "-c", "import kselect.selector as s; print(s.__file__)"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
    )
    if not where.stdout.strip().startswith(str(copy)):
        raise SystemExit(f"the copy is not what imports as kselect: {where.stdout.strip() or where.stderr}")
    xml = copy.parent / f"junit-{time.monotonic_ns()}.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}", *tests]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
        rc, tail = proc.returncode, (proc.stdout + proc.stderr)[-2000:]
    except subprocess.TimeoutExpired:
        rc, tail = "timeout", ""
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    if xml.exists():
        suite = ET.parse(xml).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        counts = {k: int(suite.get(k, 0)) for k in counts}
    return {"rc": rc, **counts, "seconds": round(time.perf_counter() - t0, 1), "tail": tail}


def summary(r: dict) -> str:
    return f"{r['tests']} run, {r['failures'] + r['errors']} failed, {r['skipped']} skipped"


def check(m: Mutation, baseline: bool, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"mutation-{m.name}-") as tmp:
        copy = copy_repo(Path(tmp))
        base = run_tests(copy, m.tests, timeout) if baseline else None
        mutate(copy, m)
        got = run_tests(copy, m.tests, timeout)
    clean = base is None or (base["rc"] == 0 and base["tests"] > 0 and base["skipped"] == 0)
    caught = got["rc"] == 1 and got["failures"] + got["errors"] > 0
    verdict = "caught" if caught and clean else ("baseline not clean" if not clean else "MISSED")
    return {"mutation": m, "base": base, "got": got, "verdict": verdict}


def table(results: list[dict]) -> str:
    lines = [
        "| mutation | file | one-line change | guarding tests | unmutated | mutated | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        m = r["mutation"]
        tests = "<br>".join(t.split("::")[-1] for t in m.tests)
        base = summary(r["base"]) if r["base"] else "not run"
        lines.append(
            f"| {m.name} | `{m.path}` | {m.what} | {tests} | {base} | {summary(r['got'])} | **{r['verdict']}** |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="which mutations to run (default cpu)")
    ap.add_argument("--only", nargs="*", default=None, help="mutation names (default: every one for --device)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of each mutation's tests")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per pytest run")
    ap.add_argument("--out", type=Path, help="also write the table here")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTATIONS if (m.name in args.only if args.only else m.device == args.device)]
    unknown = set(args.only or ()) - {m.name for m in MUTATIONS}
    if unknown or not chosen:
        ap.error(f"no such mutation(s) {sorted(unknown)}; known: {[m.name for m in MUTATIONS]}")
    results = []
    for m in chosen:
        r = check(m, not args.no_baseline, args.timeout)
        print(f"{m.name}: {r['verdict']} ({summary(r['got'])}, {r['got']['seconds']} s)", file=sys.stderr, flush=True)
        if r["verdict"] != "caught":
            print(r["got"]["tail"], file=sys.stderr)
        results.append(r)
    text = table(results)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0 if all(r["verdict"] == "caught" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
