"""Benchmarks of stock max-autotune against kselect: per GEMM and end to end, with their pooled statistics."""
