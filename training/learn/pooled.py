"""Datasets of several cards as one: each row keyed and featurised by the card it was measured on.

A pooled model trains on the rows of several cards at once. The feature schema already carries
the device (selector/model/features.py: `sm_count`, `peak_tflops`, `mem_bandwidth_gbs`,
`smem_optin`, `l2_mbytes`, and the roofline and traffic times derived from them), so each row
is featurised with its own card's fingerprint and the trees can tell the cards apart. A shape
measured on two cards stays two shapes: its problem_key is prefixed with the card's fingerprint id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from kselect.kernels.problem import DTYPE_BYTES
from kselect.selector.model.feature_blocks import feature_names
from kselect.selector.model.features import FEATURE_NAMES, device_constants, featurize_frame

KEY_SEPARATOR = "/"  # pooled problem_key = fingerprint id + KEY_SEPARATOR + the card's own key


class PoolingError(ValueError):
    """Datasets that cannot be pooled; the message says which and why."""


@dataclass(frozen=True)
class Devices:
    """The fingerprints of a pooled dataset's cards, by fingerprint id (in the order pooled)."""

    fingerprints: Mapping[str, Mapping]
    #: per pooled dataset, in order, the fingerprint id of its card (several datasets may share one)
    sources: tuple[str, ...] = ()

    def featurize(self, rows: pd.DataFrame) -> np.ndarray:
        """The feature matrix of pooled rows, each row featurised with its own card's fingerprint
        (the rows' `fingerprint_id` column says which)."""
        if "fingerprint_id" not in rows.columns:
            raise PoolingError("pooled rows lack the fingerprint_id column that names their card")
        ids = rows["fingerprint_id"].astype(str).to_numpy()
        unknown = sorted(set(ids) - set(self.fingerprints))
        if unknown:
            raise PoolingError(f"rows of card(s) {unknown} that the pool has no fingerprint for")
        X = np.empty((len(rows), len(FEATURE_NAMES)), dtype=np.float32)
        for fid, fp in self.fingerprints.items():
            mine = ids == fid
            if mine.any():
                X[mine] = featurize_frame(rows[mine], fp)
        return X

    def constants(self, dtype: str = "bf16") -> dict:
        """Per card (by GPU name and fingerprint id): the device columns the features take."""
        return {f"{fp.get('gpu_name')} ({fid})": device_constants(fp, dtype) for fid, fp in self.fingerprints.items()}

    def differing(self, dtype: str = "bf16") -> dict:
        """The device columns whose value differs between the cards: {column: {card: value}}."""
        per_card = self.constants(dtype)
        columns = next(iter(per_card.values())).keys()
        return {
            c: {card: v[c] for card, v in per_card.items()}
            for c in columns
            if len({v[c] for v in per_card.values()}) > 1
        }


def pool(parts: Sequence[tuple[pd.DataFrame, Mapping]]) -> tuple[pd.DataFrame, Devices]:
    """One frame of several datasets' (rows, fingerprint): every row tagged with its card's
    fingerprint id and its problem_key prefixed by it; the Devices featurise the result. Datasets
    of one card (the same fingerprint id; say bf16 and other dtypes collected apart) join as that
    card's rows, when their device columns agree and no problem was measured in both."""
    if not parts:
        raise PoolingError("nothing to pool")
    frames, fingerprints, sources = [], {}, []
    for i, (df, fp) in enumerate(parts):
        fid = str((fp or {}).get("fingerprint_id") or "")
        if not fid:
            raise PoolingError(f"dataset {i + 1} of {len(parts)} has a fingerprint without a fingerprint_id")
        if KEY_SEPARATOR in fid:
            raise PoolingError(f"fingerprint id {fid!r} contains {KEY_SEPARATOR!r}")
        rows = df.copy()
        rows["fingerprint_id"] = fid
        rows["problem_key"] = fid + KEY_SEPARATOR + rows["problem_key"].astype(str)
        if fid in fingerprints:
            fingerprints[fid] = same_card_fingerprint(fingerprints[fid], fp, i + 1)
            earlier = pd.concat([f for f, s in zip(frames, sources) if s == fid])["problem_key"]
            twice = sorted(set(earlier) & set(rows["problem_key"]))
            if twice:
                raise PoolingError(
                    f"dataset {i + 1} was measured on the same card {fp.get('gpu_name')!r} (fingerprint {fid}) "
                    f"as an earlier one and holds {len(twice)} of its problems (e.g. {twice[0].split(KEY_SEPARATOR)[1]}): "
                    "compact them into one dataset instead of pooling"
                )
        else:
            fingerprints[fid] = dict(fp)
        frames.append(rows)
        sources.append(fid)
    return pd.concat(frames, ignore_index=True), Devices(fingerprints, tuple(sources))


def same_card_fingerprint(have: Mapping, other: Mapping, nth: int) -> dict:
    """One fingerprint for two datasets of one card: `have`, with the dtype peaks `other` adds
    (say TF32's, recorded only by a collection that measured it). A device column that differs
    is a PoolingError: the rows would be featurised as one card that they were not."""
    peaks, more = have.get("peak_tflops") or {}, other.get("peak_tflops") or {}
    differ = [
        f"{c} ({d}): {a[c]} vs {b[c]}"
        for d in sorted(set(peaks) & set(more)) or ["bf16"]
        for a, b in [(device_constants(have, d), device_constants(other, d))]
        for c in a
        if a[c] != b[c]
    ]
    if differ:
        raise PoolingError(
            f"dataset {nth} has the fingerprint id {have.get('fingerprint_id')} of an earlier dataset but other "
            f"device columns: {'; '.join(differ)}"
        )
    return {**have, "peak_tflops": {**more, **peaks}}


def card_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(fingerprint id, the card's own problem_key) of pooled problem keys."""
    split = [str(k).split(KEY_SEPARATOR, 1) for k in keys]
    if any(len(s) != 2 for s in split):
        raise PoolingError("a problem key without its card's prefix: these rows were not pooled")
    return np.array([s[0] for s in split]), np.array([s[1] for s in split])


def featurize_rows(rows: pd.DataFrame, device, blocks: Sequence[str] = ()) -> np.ndarray:
    """Features of dataset rows: `device` is one card's fingerprint or a pool's Devices; `blocks`:
    the optional feature blocks (feature_blocks.FEATURE_BLOCKS) whose columns follow, in order."""
    X = device.featurize(rows) if isinstance(device, Devices) else featurize_frame(rows, device)
    if not blocks:
        return X
    from kselect.training.data.epilogue_rows import epilogue_columns

    extra = np.empty((len(rows), len(feature_names(blocks)) - X.shape[1]), dtype=np.float32)
    cards = device.fingerprints if isinstance(device, Devices) else {None: device}
    ids = rows["fingerprint_id"].astype(str).to_numpy() if isinstance(device, Devices) else None
    for fid, fp in cards.items():
        mine = np.ones(len(rows), dtype=bool) if fid is None else ids == fid
        if mine.any():  # each block's columns, in the order named (feature_names checked the names)
            extra[mine] = np.hstack(
                [epilogue_columns(rows[mine], fp) if b == "epilogue" else scaled_columns(rows[mine]) for b in blocks]
            )
    return np.hstack([X, extra])


def scaled_columns(rows: pd.DataFrame) -> np.ndarray:
    """The scaled_mm block of dataset rows (scaled_features.SCALED_MM_FEATURE_NAMES), as
    scaled_mm_problem_features reads a Problem: zeros and the operands' bytes for other ops."""
    blank = pd.Series("", index=rows.index)
    scaling = rows.get("scaling", blank).fillna("").astype(str).to_numpy()
    out = rows.get("out_dtype", blank).fillna("").astype(str).to_numpy()
    dtype = rows["dtype"].astype(str).to_numpy()
    fast = rows.get("fast_accum", pd.Series(False, index=rows.index)).fillna(False).astype(bool).to_numpy()
    out_bytes = [DTYPE_BYTES[o or d] for o, d in zip(out, dtype)]
    return np.column_stack([scaling == "rowwise", out_bytes, fast]).astype(np.float32)
