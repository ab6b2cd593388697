"""Deciding a GEMM: the decider (decider.py: rank -> keep -> record, a Decision returned), rankers,
the policy that turns scores into the kept set, a dynamic M's per-size picks, the decision cache."""
