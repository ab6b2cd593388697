"""Triton compile cost: collected on this CPU for a target GPU, and the model fitted to it."""
