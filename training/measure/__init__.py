"""Measuring candidates on a GPU: crash-safe collection, re-timing as Inductor compiles, faithfulness checks."""
