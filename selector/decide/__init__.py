"""Deciding a GEMM: rankers, the policy that turns scores into the kept set, the decision cache."""
