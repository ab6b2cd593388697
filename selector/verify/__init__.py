"""Verify mode: the verifier (verifier.py: a decision and its choices in, the winner out) measuring
the kept choices (kselect's own timing in interleaved rounds, background compiles), picking the
winner beyond the rounds' noise (pick.py) and caching the verified winner."""
