"""Verify mode's own measurement of the kept choices and their background compiles."""
