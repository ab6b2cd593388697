"""FlyDSL GEMM backend for AMD gfx942/gfx950 (compiles anywhere, runs on ROCm only)."""
