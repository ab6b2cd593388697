"""MoE grouped GEMM (`torch._grouped_mm`): the problem with its routing, Inductor's candidate
space for it, and how to run one candidate (docs/grouped-mm.md)."""
