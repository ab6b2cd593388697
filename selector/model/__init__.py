"""The models the selector serves: feature schema, tree evaluation in numpy, cost and compile-cost
models, whether a model may serve a device (checks.py) and which one does (discovery.py), verify's
compile price."""
