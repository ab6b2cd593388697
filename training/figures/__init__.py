"""The figures the README's status table and the model cards quote, each written from the
committed raw files it comes from (`kselect write-figures`; `--check` finds any that drifted)."""
