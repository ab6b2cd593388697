"""Inside Inductor: the max-autotune hook, the private-API compatibility layer, epilogue-aware checks, FlyDSL's join."""
