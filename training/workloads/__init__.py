"""Which GEMMs to measure: named, seeded workload sets and shape lists."""
