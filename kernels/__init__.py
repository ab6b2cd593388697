"""kselect.kernels: the Backend interface, GEMM problems, candidates and the backends."""

from .backend import (
    Availability,
    Backend,
    BackendError,
    CandidateError,
    get_backend,
    known_backends,
    parse_backends,
    register_backend,
)
from .candidate import Candidate
from .problem import Problem, ProblemError

__all__ = [
    "Availability",
    "Backend",
    "BackendError",
    "CandidateError",
    "Candidate",
    "Problem",
    "ProblemError",
    "get_backend",
    "known_backends",
    "parse_backends",
    "register_backend",
]
