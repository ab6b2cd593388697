"""The models the selector serves: feature schema, tree evaluation in numpy, cost and compile-cost models, verify's compile price."""
