"""The GEMM ops kselect can decide, by name: one spelling each.

A `Problem`'s `op`, a model sidecar's `ops`, a feature block and an ATen candidate's template
use these names; the selector's floors below its op modules (model/, compat/) read them here
rather than spelling them again (tests/project/test_layout.py holds that).
"""

MM = "mm"
ADDMM = "addmm"
BMM = "bmm"
BADDBMM = "baddbmm"  # lowered as a bmm with a bias: its Problem's op is BMM
SCALED_MM = "scaled_mm"  # fp8 torch._scaled_mm
GROUPED_MM = "grouped_mm"  # torch._grouped_mm, the MoE expert GEMM
LINEAR = "linear"  # a frozen Linear on the CPU (MKL's or oneDNN's): read as an mm or addmm

# ATen's names of the two underscored ops (their extern kernels and aten:: overloads)
ATEN_SCALED_MM = "_" + SCALED_MM
ATEN_GROUPED_MM = "_" + GROUPED_MM
