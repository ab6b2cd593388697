"""A saved XGBoost tree model evaluated with numpy, for serving.

Why: importing xgboost costs 1.6-1.9 s per process (it imports scikit-learn for its
estimator API), which a first torch.compile would pay for ranking a few thousand rows.
Evaluating the trees needs only their arrays. `TreeEnsemble` reads XGBoost's own JSON model
(the documented schema: per tree `left_children`, `right_children`, `split_indices`,
`split_conditions`, `default_left`) and predicts bit-identically to XGBoost's `inplace_predict`
for what kselect trains: numeric splits, one output, objectives whose prediction is the raw
margin (tests/selector/test_forest.py compares both on trained models). Anything else raises
`UnsupportedModel`, and the caller loads the model with xgboost instead.

How: all trees' nodes live in flat arrays; a leaf points to itself with an infinite
threshold (and, where X holds a non-finite value, an explicit leaf mask), so every
(tree, row) pair walks the same number of levels. XGBoost sends a row
left when `x < threshold` (missing values: the node's default direction) and numbers a
node's right child one after its left, so the walk is one gather per level. Leaf values are
added in float32, tree after tree, to the base score -- XGBoost's own order.
"""

from __future__ import annotations

import numpy as np

# objectives whose prediction is the margin itself (no sigmoid / exp / softmax on top)
MARGIN_OBJECTIVES = frozenset(
    {"rank:pairwise", "rank:ndcg", "rank:map", "reg:squarederror", "reg:absoluteerror", "reg:pseudohubererror"}
)


class UnsupportedModel(ValueError):
    """This XGBoost model uses something TreeEnsemble does not evaluate; the message says what."""


class TreeEnsemble:
    """The trees of one XGBoost gbtree model; `margin(X)` equals XGBoost's prediction."""

    def __init__(self, model: dict):
        try:
            learner = model["learner"]
            objective = learner["objective"]["name"]
            params = learner["learner_model_param"]
            booster = learner["gradient_booster"]
        except (KeyError, TypeError) as exc:
            raise UnsupportedModel(f"not an XGBoost JSON model (missing {exc})") from None
        if booster.get("name") != "gbtree":
            raise UnsupportedModel(f"booster {booster.get('name')!r}: only gbtree is evaluated here")
        if objective not in MARGIN_OBJECTIVES:
            raise UnsupportedModel(f"objective {objective!r} transforms the margin")
        if int(params.get("num_class", 0)) > 1 or int(params.get("num_target", 1)) != 1:
            raise UnsupportedModel("more than one output per row")
        base = [float(x) for x in str(params["base_score"]).strip("[]").split(",") if x.strip()]
        if len(base) != 1:
            raise UnsupportedModel(f"base_score {params['base_score']!r} is not one value")
        trees = booster["model"]["trees"]
        if not trees:
            raise UnsupportedModel("the model has no trees")
        self.objective = objective
        self.base_score = np.float32(base[0])
        self.n_features = int(params.get("num_feature", 0))
        indptr = booster["model"].get("iteration_indptr")
        # iteration i's trees are trees[indptr[i]:indptr[i + 1]]
        self.iteration_indptr = np.asarray(indptr if indptr else range(len(trees) + 1), dtype=np.intp)
        try:
            self._build(trees)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise UnsupportedModel(f"malformed tree arrays ({type(exc).__name__}: {exc})") from None

    def _build(self, trees: list) -> None:
        """All trees as one set of node arrays (node ids offset per tree): a handful of numpy
        calls over the whole forest, not a dozen per tree (load time is compile time)."""
        for tree in trees:
            if any(int(t) != 0 for t in tree.get("split_type", [])) or tree.get("categories_nodes"):
                raise UnsupportedModel(f"tree {tree.get('id')} has categorical splits")
            if int(tree.get("tree_param", {}).get("size_leaf_vector", 1)) > 1:
                raise UnsupportedModel(f"tree {tree.get('id')} has vector leaves")
            if int(tree.get("tree_param", {}).get("num_deleted", 0)) != 0:
                raise UnsupportedModel(f"tree {tree.get('id')} has deleted nodes")
        sizes = np.fromiter((len(t["left_children"]) for t in trees), dtype=np.intp, count=len(trees))
        if any(
            len(t[k]) != n
            for t, n in zip(trees, sizes.tolist())
            for k in ("right_children", "split_conditions", "split_indices", "default_left")
        ):
            raise UnsupportedModel("a tree's node arrays differ in length")
        if not sizes.all():
            raise UnsupportedModel("a tree has no nodes")
        roots = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.intp)
        offset = np.repeat(roots, sizes)  # each node's tree offset

        def joined(key, dtype):
            return np.fromiter((v for t in trees for v in t[key]), dtype=dtype, count=int(sizes.sum()))

        lc, rc = joined("left_children", np.intp), joined("right_children", np.intp)
        cond = joined("split_conditions", np.float32)
        leaf = lc < 0
        if np.any(rc[~leaf] != lc[~leaf] + 1):
            bad = int(np.searchsorted(roots, int(np.flatnonzero(~leaf & (rc != lc + 1))[0]), side="right")) - 1
            raise UnsupportedModel(f"tree {trees[bad].get('id')} does not number right = left + 1")
        if np.any(lc[~leaf] <= 0) or np.any(rc[~leaf] >= np.repeat(sizes, sizes)[~leaf]):
            raise UnsupportedModel("a child index falls outside its tree")
        nodes = np.arange(len(lc), dtype=np.intp)
        self._left = np.where(leaf, nodes, lc + offset)  # a leaf points at itself
        self._feature = np.where(leaf, 0, joined("split_indices", np.intp))
        self._threshold = np.where(leaf, np.float32(np.inf), cond).astype(np.float32)
        self._default_left = np.where(leaf, True, joined("default_left", np.intp).astype(bool))
        self._value = np.where(leaf, cond, np.float32(0)).astype(np.float32)
        self._is_leaf = leaf
        self._roots = roots
        self._depths = _depths(self._left, leaf, roots)
        if self.n_features and int(self._feature.max()) >= self.n_features:
            raise UnsupportedModel("a split names a feature beyond num_feature")

    @property
    def n_iterations(self) -> int:
        return len(self.iteration_indptr) - 1

    def margin(self, X: np.ndarray, iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        """Prediction of each row of X (float32), over boosting rounds [begin, end) if given."""
        X = np.ascontiguousarray(X, dtype=np.float32)
        if X.ndim != 2 or (self.n_features and X.shape[1] != self.n_features):
            raise ValueError(f"X has shape {X.shape}; the model takes {self.n_features} features")
        begin, end = iteration_range or (0, self.n_iterations)
        if not 0 <= begin < end <= self.n_iterations:
            raise ValueError(f"iteration_range {iteration_range} outside [0, {self.n_iterations}]")
        t0, t1 = int(self.iteration_indptr[begin]), int(self.iteration_indptr[end])
        n_rows, n_cols = X.shape
        node = np.repeat(self._roots[t0:t1, None], n_rows, axis=1)  # (trees, rows)
        row_start = np.arange(n_rows, dtype=np.intp) * n_cols
        flat = X.ravel()
        special = not bool(np.isfinite(flat).all())  # NaN (missing) or +-inf somewhere
        for _ in range(int(self._depths[t0:t1].max())):
            x = flat[self._feature[node] + row_start]
            right = ~(x < self._threshold[node])
            if special:
                right &= ~(np.isnan(x) & self._default_left[node])  # missing: default direction
                right &= ~self._is_leaf[node]  # +inf must not leave a leaf
            node = self._left[node] + right
        leaves = self._value[node]
        leaves[0] += self.base_score
        # accumulate, not sum: a sum may add pairwise (it does for a single row); XGBoost adds
        # tree after tree, and float32 rounding makes the order visible
        return np.add.accumulate(leaves, axis=0)[-1]


def _depths(left: np.ndarray, leaf: np.ndarray, roots: np.ndarray) -> np.ndarray:
    """Per tree, levels from the root to the deepest leaf: one level of the whole forest at a
    time (`left`: global child ids, right = left + 1)."""
    depth = np.zeros(len(left), dtype=np.intp)
    level, d = roots, 0
    while len(level):
        level = level[~leaf[level]]
        d += 1
        level = np.concatenate((left[level], left[level] + 1))
        depth[level] = d
        if d > len(left):
            raise UnsupportedModel("a tree's children do not descend (a cycle)")
    return np.maximum.reduceat(depth, roots)  # trees are contiguous, none empty
