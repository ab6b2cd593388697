"""Verify mode: measuring the kept choices (orchestration, kselect's own timing, background
compiles) and caching the verified winner."""
