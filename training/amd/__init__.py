"""AMD: which backend wins a shape, learned from AMD's tuned-GEMM tables."""
