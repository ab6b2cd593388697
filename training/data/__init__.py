"""The measured dataset: schema, part files, labels, oracle shapes, lookup tables."""
