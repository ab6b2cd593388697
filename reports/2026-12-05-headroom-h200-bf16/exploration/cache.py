"""Featurise data/h200-bf16 once into /tmp/hr/X.npy (the exploration scripts rebuild the shapes,
3 s, and read the features from there)."""
import os

import numpy as np

from kselect.selector.model.features import featurize_frame
from kselect.training.learn.ranking_metrics import ShapeSet
from kselect.training.learn.held_out import load_data


def load_shapes():
    df, fp = load_data("data/h200-bf16")
    return ShapeSet.from_frame(df), fp


if __name__ == "__main__":
    shapes, fp = load_shapes()
    os.makedirs("/tmp/hr", exist_ok=True)
    np.save("/tmp/hr/X.npy", featurize_frame(shapes.rows, fp))
