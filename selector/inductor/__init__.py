"""Inside Inductor: installing kselect (lifecycle.py), the Selector and its hook points (hook.py)
with its per-device rankers and early decision, the op gate (op_kind.py: which ops kselect
decides), the private-API boundary (compat/), epilogue-aware checks, FlyDSL's join."""
