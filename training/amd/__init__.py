"""AMD: which backend wins a shape, learned from AMD's tuned-GEMM tables.

A directory of ROCm/aiter's tuned bf16 GEMM tables becomes a multi-class classifier, measured
honestly: leave-one-table-out against two baselines that need no learning. One module per
concern: `tables` (loading and validation), `features` (inputs only, never the outcome
columns), `label_noise` (near-tie sets), `recipe` (weighted training rows), `classifier`
(the estimator and its files), `baselines`, `metrics`, `evaluation` (in-sample and
leave-one-table-out), `confusion_plot`.
"""
