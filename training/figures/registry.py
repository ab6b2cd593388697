"""Every named figure the docs hold: name -> (the file it is written in, its computation)."""

from __future__ import annotations

from kselect.training.figures import amd, cards, gpu_runs, status_table

FIGURES = {**status_table.FIGURES, **gpu_runs.FIGURES, **cards.FIGURES, **amd.FIGURES}
