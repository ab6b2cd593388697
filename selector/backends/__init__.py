"""Backends that join Inductor's GEMM choices through kselect, one module each (flydsl.py),
listed by registry.py."""
