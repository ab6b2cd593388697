"""The GEMM op kinds kselect can decide, one module each (mm.py: the dense GEMMs; scaled_mm.py;
grouped_mm.py), listed by registry.py; naming.py reads which op Inductor is lowering and
gate.py sends every op without a module, or one the serving model does not hold, to stock."""
