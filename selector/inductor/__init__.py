"""Inside Inductor: installing kselect (lifecycle.py), the Selector, a thin adapter wiring the
decider and the verifier to Inductor's hook points (hook.py), its per-device rankers and early
decision; the op kinds it decides and its op gate are selector/ops/, the backends that join
Inductor's choices selector/backends/, the private-API boundary compat/."""
