"""Triton GEMM kernels, their candidate space, and compiling them for a GPU this machine lacks."""
