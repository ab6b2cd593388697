"""kselect.selector: features, cost model and the Inductor plug-in that picks GEMM kernels."""
