"""Inside Inductor: installing kselect (lifecycle.py), the Selector and its hook points (hook.py)
with its per-device rankers and early decision; the op kinds it decides and its op gate are
selector/ops/, the backends that join Inductor's choices selector/backends/, the private-API
boundary compat/."""
