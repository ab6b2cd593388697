"""Shipped, trained kselect artifacts (XGBoost JSON/UBJ + model cards); never pickles."""
from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent


def shipped_model_path(name: str) -> Path:
    """Path of a shipped artifact by file name; raises FileNotFoundError naming what exists."""
    path = MODELS_DIR / name
    if not path.exists():
        have = sorted(p.name for p in MODELS_DIR.iterdir() if p.suffix in (".json", ".ubj"))
        raise FileNotFoundError(f"no shipped model {name!r} in {MODELS_DIR}; shipped: {have}")
    return path
