"""The confusion matrix of a metrics result as a PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def plot_confusion(result: dict, path: str | Path, title: str) -> Path:
    """Confusion matrix as a PNG (Agg backend: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cm = np.asarray(result["confusion"])
    labels = result["labels"]
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.imshow(cm, cmap="Blues")
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("predicted backend")
    ax.set_ylabel("recorded winner")
    ax.set_title(title)
    top = cm.max() if cm.size else 0
    for i in range(cm.shape[0]):
        for j in range(cm.shape[1]):
            ax.text(
                j,
                i,
                str(cm[i, j]),
                ha="center",
                va="center",
                color="white" if cm[i, j] > top / 2 else "black",
                fontsize=8,
            )
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
