"""Judge the real-model smokes by rule "F. Real model definitions", its smoke paragraph
(reports/device/rules.md), word for word in the checks below. Reads what smoke.sh leaves in $OUT:
`titan-import.txt` and `titan.tgz` (STEP=titan), `moe.tgz` (STEP=moe), or the folders the
archives hold. Writes `judge.md` and `judge.json` beside them.

- titan: the import line prints `2.11.0+cu130 0.2.2 True` (else recorded, nothing judged);
  both runs (plain, kselect-verify) ok and correct; kselect-verify shows space EXHAUSTIVE,
  decisions >= 1, fallbacks 0. A timeout is inconclusive (rerun once with more minutes); an
  error is fixed on the CPU first.
- moe: plain, verify and DEFAULT ok and correct; verify's compile at most DEFAULT's (one process
  each: a verify compile above DEFAULT's is rerun once with `--repeats 3`, the pooled medians
  decide). Verify's compile with its ranker load is shown beside, for the timing rule's clause.

Usage: python judge_smoke.py DIR   (DIR: the call's returned files)
"""

from __future__ import annotations

import json
import statistics
import sys
import tarfile
from pathlib import Path

TITAN_IMPORT = "2.11.0+cu130 0.2.2 True"


def runs_of(root: Path, step: str) -> list[dict] | None:
    """The bench's runs of one smoke, from its folder or its archive; None when neither is there."""
    results = root / step / "results.json"
    if not results.exists() and (root / f"{step}.tgz").exists():
        with tarfile.open(root / f"{step}.tgz") as tar:
            tar.extractall(root, filter="data")
    if not results.exists():
        return None
    return json.loads(results.read_text())["runs"]


def by_variant(runs: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for run in runs:
        out.setdefault(run["variant"], []).append(run)
    return out


def run_fault(run: dict) -> str | None:
    """Why a run does not pass as 'ok and correct', or None."""
    if run["status"] == "timeout":
        return "timeout (inconclusive: rerun once with more minutes)"
    if run["status"] != "ok":
        return f"{run['status']}: {str(run.get('error', ''))[:160]} (fixed on the CPU first)"
    if not (run.get("correctness") or {}).get("ok"):
        return f"not correct: {run.get('correctness')}"
    return None


def judge_titan(root: Path) -> dict:
    line = (root / "titan-import.txt").read_text().strip() if (root / "titan-import.txt").exists() else ""
    if TITAN_IMPORT not in line.splitlines():
        return {"verdict": "not run", "why": f"the import line printed {line[-200:]!r}; titan stays out of the timings"}
    runs = runs_of(root, "titan")
    if runs is None:
        return {"verdict": "inconclusive", "why": "no results.json came back"}
    variants = by_variant(runs)
    faults = []
    for variant in ("plain", "kselect-verify"):
        got = variants.get(variant, [])
        if not got:
            faults.append(f"{variant}: no run")
        faults += [f"{variant}: {f}" for f in map(run_fault, got) if f]
    for run in variants.get("kselect-verify", []):
        stats = (run.get("kselect") or {}).get("stats") or {}
        if run.get("gemm_search_space") != "EXHAUSTIVE":
            faults.append(f"kselect-verify: space {run.get('gemm_search_space')}, not EXHAUSTIVE")
        if run["status"] == "ok" and (stats.get("decisions", 0) < 1 or stats.get("fallbacks", 1) != 0):
            faults.append(f"kselect-verify: decisions {stats.get('decisions')}, fallbacks {stats.get('fallbacks')}")
    return verdict(faults, {v: [summary(r) for r in rs] for v, rs in variants.items()})


def judge_moe(root: Path) -> dict:
    runs = runs_of(root, "moe")
    if runs is None:
        return {"verdict": "inconclusive", "why": "no results.json came back"}
    variants = by_variant(runs)
    faults = []
    for variant in ("plain", "kselect-verify", "default"):
        got = variants.get(variant, [])
        if not got:
            faults.append(f"{variant}: no run")
        faults += [f"{variant}: {f}" for f in map(run_fault, got) if f]
    compile_s = {
        v: statistics.median(r["compile_s"] for r in rs)
        for v, rs in variants.items()
        if rs and all(r["status"] == "ok" for r in rs)
    }
    numbers = {v: [summary(r) for r in rs] for v, rs in variants.items()}
    if "kselect-verify" in compile_s and "default" in compile_s:
        verify, default = compile_s["kselect-verify"], compile_s["default"]
        load = statistics.median(r.get("kselect_load_s") or 0.0 for r in variants["kselect-verify"])
        numbers["compile"] = {"verify_s": verify, "default_s": default, "verify_with_load_s": verify + load}
        if verify > default:
            pooled = len(variants["kselect-verify"]) >= 3 and len(variants["default"]) >= 3
            faults.append(
                f"verify's compile {verify:.1f} s above DEFAULT's {default:.1f} s"
                + (
                    " by the pooled medians: the MoE stays out of the timings until the report names the phase"
                    if pooled
                    else " in one process each: rerun once with --repeats 3"
                )
            )
    return verdict(faults, numbers)


def summary(run: dict) -> dict:
    k = run.get("kselect") or {}
    return {
        "status": run["status"],
        "space": run.get("gemm_search_space"),
        "compile_s": run.get("compile_s"),
        "kselect_load_s": run.get("kselect_load_s"),
        "rel_err": (run.get("correctness") or {}).get("rel_err"),
        "stats": k.get("stats"),
        "stock_ops": k.get("stock_ops"),
        "gemm_tuning_s": (run.get("gemm_tuning") or {}).get("total_s"),
    }


def verdict(faults: list[str], numbers: dict) -> dict:
    if any("inconclusive" in f or "rerun once" in f for f in faults):
        word = "inconclusive"
    else:
        word = "not met" if faults else "met"
    return {"verdict": word, "faults": faults, "numbers": numbers}


def main(root: Path) -> None:
    judged = {}
    if (root / "titan-import.txt").exists() or (root / "titan.tgz").exists() or (root / "titan").exists():
        judged["titan"] = judge_titan(root)
    if (root / "moe.tgz").exists() or (root / "moe").exists():
        judged["moe"] = judge_moe(root)
    (root / "judge.json").write_text(json.dumps(judged, indent=1) + "\n")
    lines = ["# The real-model smokes, judged by rule F's smoke paragraph", ""]
    for step, got in judged.items():
        lines.append(f"- **{step}: {got['verdict']}**" + (f" ({got['why']})" if "why" in got else ""))
        lines += [f"  - {f}" for f in got.get("faults", [])]
        for variant, rows in got.get("numbers", {}).items():
            lines.append(f"  - {variant}: {json.dumps(rows)}")
    (root / "judge.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
