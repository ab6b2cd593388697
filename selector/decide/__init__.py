"""Deciding a GEMM: the decision's steps (pipeline.py), rankers, the policy that turns scores into
the kept set, a dynamic M's per-size picks, the decision cache."""
