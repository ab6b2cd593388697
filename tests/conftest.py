"""Shared test fixtures: paths to the repo, the committed dataset and ../shared, and the
settings of a recorded GPU bench e2e run."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# every collected test's fixtures exist, GPU tests included (tests/fixture_guard.py)
pytest_plugins = ("fixture_guard",)

# One Inductor compile thread in every test process and the processes it starts, on a host of a
# few cores: CI runs two test processes on two cores, so Inductor's compile-worker pool (a
# sidecar and one worker per core, each importing torch, per process that compiles) buys no
# parallelism there and costs a pool start in every bench, collect and retime worker. Compiles
# are the same, in-process. A test about the pool itself asks for it back with
# `with_inductor_pool`. A GPU host (16 cores and more) keeps Inductor's pool, as its users do:
# there the pool is what the GPU tests of verify's compile workers exercise, and the
# max-autotune compiles of the GPU suite need it.
SMALL_HOST_CORES = 4
INDUCTOR_THREADS_ENV = "TORCHINDUCTOR_COMPILE_THREADS"
# the user's own setting ("" for none), kept where the xdist workers, which start with this
# process's environment, read it too
_USERS_THREADS_ENV = "KSELECT_TESTS_USERS_COMPILE_THREADS"
os.environ.setdefault(_USERS_THREADS_ENV, os.environ.get(INDUCTOR_THREADS_ENV, ""))
if (os.cpu_count() or 1) <= SMALL_HOST_CORES:
    os.environ.setdefault(INDUCTOR_THREADS_ENV, "1")
    # There too, an OpenMP thread that spins while it waits for work (libgomp's default; torch's
    # CPU ops and Inductor's C++ kernels run on torch's libgomp) burns a core the other test
    # process and the processes the tests start need: the tests' OpenMP threads sleep while they
    # wait, as selector/model/cost_model.py has XGBoost's do (it sets this after `import torch`
    # has loaded torch's libgomp, which reads it then). Thread counts, and so the kernels Inductor
    # generates, stay as they are; a user's setting stays. Measured on the 2-core CI machine: the
    # compiling modules (real models, selector CPU, dynamic shapes, epilogue, graph warm-up) in
    # 98-103 s instead of 106-113 s, 8 % less CPU.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Inductor proves each vector ISA the CPU lists (avx2, avx512, ...) by compiling and loading a
# small C++ program, once per process and cache directory: ~5-10 s of g++ in every fresh
# process, and the bench, collect and retime workers each start with a cold cache by design.
# The tests take the CPU's own list as proven (TORCHINDUCTOR_VEC_ISA_OK=1, Inductor's override;
# the same pick on this machine's image); a compiler that could not build one would fail the
# first C++ kernel loudly. A user's setting stays.
os.environ.setdefault("TORCHINDUCTOR_VEC_ISA_OK", "1")


def _share_built_kernels() -> None:
    """Put tests/cxx_cache/g++ first on PATH for the whole test run (the xdist workers and every
    process they start inherit it): an Inductor C++ kernel whose source and flags an earlier
    process already built is copied from that build instead of compiled again. One folder for the
    run, made by the first process that loads this file; a user's own CXX stays theirs. (Not
    KSELECT_* names: the bench's workers drop those.)"""
    real = shutil.which("g++")
    if real is None or "CXX" in os.environ or os.environ.get("TESTS_REAL_CXX"):
        return
    cache = tempfile.mkdtemp(prefix="kselect-tests-kernels-")
    atexit.register(shutil.rmtree, cache, ignore_errors=True)
    os.environ["TESTS_REAL_CXX"] = real
    os.environ["TESTS_CXX_CACHE"] = cache
    os.environ["PATH"] = os.pathsep.join([str(Path(__file__).parent / "cxx_cache"), os.environ["PATH"]])


_share_built_kernels()


def with_inductor_pool(env: dict[str, str]) -> dict[str, str]:
    """`env` with Inductor's compile threads as the user's environment had them (its own
    default, a pool on this machine, where the user set none)."""
    env = {k: v for k, v in env.items() if k != INDUCTOR_THREADS_ENV}
    if os.environ.get(_USERS_THREADS_ENV):
        env[INDUCTOR_THREADS_ENV] = os.environ[_USERS_THREADS_ENV]
    return env


REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
H200_DATA = REPO / "data" / "h200-bf16"

# The settings a GPU `bench e2e` run records that every test of its report and pooling shares.
E2E_RUN_SETTINGS = {
    "device": "cuda",
    "model": "m",
    "dtype": "bf16",
    "batch": 8,
    "seq": 1024,
    "steps": 20,
    "warmup": 3,
    "k": 4,
}


@pytest.fixture
def repo() -> Path:
    return REPO


def pytest_collection_modifyitems(items):
    """The modules that hold a `slow` test run first, each module's tests kept together and in
    their order (module fixtures set up once): on CI's two workers a long module collected last
    ran alone at the end, the other worker idle."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)  # stable: the order within each group stays
