"""Every named figure the docs hold: name -> (the file it is written in, its computation)."""

from __future__ import annotations

from kselect.training.figures import cards, status_table

FIGURES = {**status_table.FIGURES, **cards.FIGURES}
