"""ATen's GEMMs as a backend (cuBLAS, hipBLASLt, MKL)."""
