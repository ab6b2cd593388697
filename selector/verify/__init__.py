"""Verify mode: measuring the kept choices (orchestration, kselect's own timing in interleaved
rounds, background compiles), picking the winner beyond the rounds' noise (pick.py) and caching
the verified winner."""
