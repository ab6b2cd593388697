"""Compile FlyDSL GEMM builds in worker subprocesses, in parallel, with an on-disk cache.

Compiles run in worker processes (`_worker.py`, one request at a time each) because LLVM may
SIGABRT on a bad config; a crash, timeout or DSL error becomes a failed CompileResult for that
build with its reason, never an exception in the caller, and a fresh worker takes the next
build. Workers import torch and flydsl once, which is most of a compile's cost on a CPU. Completed compiles (ok, pruned, failed) are cached under
`KSELECT_FLYDSL_CACHE/<arch>/<key>/` with the final ISA; the key covers the build params,
the arch, the flydsl version and the source of our kernel, so editing the kernel or
upgrading FlyDSL recompiles. Crashes and timeouts are not cached (they may be transient).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import queue
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

from ..compile_worker import ChildOutcome, Worker, drain_with_workers
from . import options
from .isa import IsaParseError, IsaStats, parse_isa, problems
from .params import KernelParams
from .space import check_arch, reasons
from .toolchain import flydsl_version, rocm_path

STATUSES = ("ok", "pruned", "invalid", "failed", "crashed", "timeout")
_CACHED_STATUSES = ("ok", "pruned", "failed")
_KERNEL_SOURCES = ("gemm_kernel.py", "params.py", "_worker.py")
ISA_NAME = "22_final_isa.s"
WORKER_MODULE = "kselect.kernels.flydsl._worker"


@dataclass
class CompileResult:
    params: KernelParams
    arch: str
    status: str  # one of STATUSES
    reason: str = ""  # why it is not usable ('' when ok)
    compile_s: float | None = None  # FlyDSL compile inside the child (no interpreter start-up)
    wall_s: float = 0.0  # request to answer in the worker; 0 for cache hits
    cached: bool = False
    isa: IsaStats | None = None
    artifact_dir: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["isa"] = self.isa.to_dict() if self.isa else None
        return d


def cache_dir() -> Path:
    return Path(options.get("cache")).expanduser()


@functools.lru_cache(maxsize=None)
def _source_digest() -> str:
    h = hashlib.sha256()
    for name in _KERNEL_SOURCES:
        h.update((Path(__file__).parent / name).read_bytes())
    return h.hexdigest()[:16]


def cache_key(p: KernelParams, arch: str) -> str:
    blob = json.dumps(
        {"params": p.to_dict(), "arch": arch, "flydsl": flydsl_version(), "source": _source_digest()}, sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _load_cached(entry: Path, p: KernelParams, arch: str) -> CompileResult | None:
    try:
        d = json.loads((entry / "result.json").read_text())
    except (OSError, ValueError):
        return None
    isa = IsaStats(**d["isa"]) if d.get("isa") else None
    return CompileResult(p, arch, d["status"], d.get("reason", ""), d.get("compile_s"), 0.0, True, isa, str(entry))


def _child_env(arch: str, root: Path) -> dict:
    env = dict(os.environ)
    env.update(
        {
            "COMPILE_ONLY": "1",
            "ARCH": arch,
            "FLYDSL_GPU_ARCH": arch,
            "FLYDSL_DEBUG_DUMP_ASM": "1",
            "FLYDSL_DUMP_DIR": str(root / "dump"),
            "FLYDSL_RUNTIME_CACHE_DIR": str(root / "flydsl-bin" / arch),
            "ROCM_PATH": rocm_path(root),
        }
    )
    return env


def _interpret(p: KernelParams, arch: str, work: Path, child: ChildOutcome) -> CompileResult:
    res = CompileResult(p, arch, "failed", wall_s=child.wall_s)
    if (failed := child.failure()) is not None:
        res.status, res.reason = failed
        return res
    try:
        out = json.loads((work / "result.json").read_text())
    except (OSError, ValueError):  # the worker itself broke (e.g. an import): not cached
        res.status, res.reason = "crashed", child.missing_result()
        return res
    res.compile_s = out.get("compile_s")
    if "error" in out:
        res.reason = out["error"]
        return res
    dumps = sorted((work / "dump").glob(f"*/{ISA_NAME}"))
    if not dumps:
        res.reason = "compile produced no final ISA dump"
        return res
    try:
        res.isa = parse_isa(dumps[-1].read_text())
    except IsaParseError as exc:
        res.reason = f"unreadable ISA: {exc}"
        return res
    why = problems(res.isa, arch)
    res.status, res.reason = ("pruned", "; ".join(why)) if why else ("ok", "")
    return res


def _store(entry: Path, work: Path, res: CompileResult) -> None:
    """Publish the result and its ISA atomically (a rename), so parallel writers never clash."""
    stage = work / "entry"
    stage.mkdir()
    dumps = sorted((work / "dump").glob(f"*/{ISA_NAME}"))
    if dumps:
        shutil.copy(dumps[-1], stage / "final_isa.s")
    (stage / "result.json").write_text(json.dumps(res.to_dict(), indent=1, sort_keys=True))
    try:
        os.rename(stage, entry)
    except OSError:  # another process stored it first: theirs is as good as ours
        pass
    res.artifact_dir = str(entry)


def _precheck(p: KernelParams, arch: str, use_cache: bool) -> CompileResult | None:
    """The result without compiling, when there is one: invalid builds and cache hits."""
    why = reasons(p, arch)
    if why:
        return CompileResult(p, arch, "invalid", "; ".join(why))
    if use_cache:
        return _load_cached(cache_dir() / arch / cache_key(p, arch), p, arch)
    return None


def _compile_with(worker: Worker, p: KernelParams, arch: str, root: Path, timeout: float) -> CompileResult:
    work = Path(tempfile.mkdtemp(prefix="build.", dir=root / arch))
    try:
        req = {"params": p.to_dict(), "arch": arch, "dump_dir": str(work / "dump"), "result": str(work / "result.json")}
        res = _interpret(p, arch, work, worker.request(req, timeout))
        if res.status in _CACHED_STATUSES:
            _store(root / arch / cache_key(p, arch), work, res)
        return res
    finally:
        shutil.rmtree(work, ignore_errors=True)


def compile_one(p: KernelParams, arch: str, *, use_cache: bool = True, timeout: float | None = None) -> CompileResult:
    """Compile one build for `arch` (validity-checked first); always returns a result."""
    return compile_many([p], arch, workers=1, use_cache=use_cache, timeout=timeout)[0]


def compile_many(
    builds: Iterable[KernelParams],
    arch: str,
    *,
    workers: int | None = None,
    use_cache: bool = True,
    timeout: float | None = None,
) -> list[CompileResult]:
    """Results for `builds` in input order: invalid ones rejected, cached ones read, the rest
    compiled by up to `workers` worker processes, each build once. Never raises for a build."""
    check_arch(arch)
    builds = list(builds)
    results: list[CompileResult | None] = [_precheck(p, arch, use_cache) for p in builds]
    todo: dict[KernelParams, list[int]] = {}
    for i, (p, r) in enumerate(zip(builds, results)):
        if r is None:
            todo.setdefault(p, []).append(i)
    if not todo:
        return results
    root = cache_dir()
    (root / arch).mkdir(parents=True, exist_ok=True)
    env = _child_env(arch, root)
    timeout = timeout or options.get("timeout")
    pending: queue.SimpleQueue = queue.SimpleQueue()
    for p in todo:
        pending.put(p)

    def take() -> KernelParams | None:
        try:
            return pending.get_nowait()
        except queue.Empty:
            return None

    def compile_in(worker: Worker, p: KernelParams) -> None:
        res = _compile_with(worker, p, arch, root, timeout)
        for i in todo[p]:
            results[i] = res

    n = min(workers or options.get("workers"), len(todo))
    drain_with_workers(take, compile_in, WORKER_MODULE, env, root / arch, n)
    return results
