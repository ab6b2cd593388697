"""The `kselect` command line: one module per verb; each only parses, calls and prints."""
