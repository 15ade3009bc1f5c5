"""The quantized and exact mechanisms' evaluation view.

A mapping measured on labelled data (leakage, distortion, attacks; ``privmap evaluate``).

The evaluation works on a :class:`MappingView`, plain arrays that describe what
a device does with a bundle (inputs, outputs, the row-stochastic table q), so it
does not depend on how bundles are encoded: :func:`view_from_bundle` builds one
from a decoded device bundle, :func:`view_from_table` from a freshly solved table.

Figures reported (all on the evaluation data, rows the mapping cannot look up
are counted and left out):

- leakage: exact I(A; C_hat) in bits on this data's empirical prior (Theorem 2:
  the same as on the raw rows), and its plug-in bias, the mean leakage after
  permuting the private column; before: I(A; C) of the input symbols and the
  plug-in I(A; B) of the raw rows, each with its own permutation bias.
- distortion: E d(B, released) on the raw rows (exact expectation over q, and
  one simulated release), E d(C, C_hat) on the symbols, r = max d(b, psi(b)) and
  Theorem 2's bound delta + r.
- MAP attacker (knows the mapping and this data's prior), before and after.
- logistic-regression attacker trained on sanitized training rows and tested on
  sanitized held-out rows (before: raw rows): accuracy, balanced accuracy, ROC AUC; it chooses
  its regularisation by inner cross-validation (:mod:`privmap.offline._attacker`).
- Theorem 1 / Proposition 1 prior-mismatch bounds for a prior estimated from n rows.
- several private columns (a joint bundle, :mod:`privmap.offline._joint`): the figures above are
  the joint attribute's; ``columns`` gives each column alone: its leakage before and after, the
  MAP attacker's accuracy against the majority-class rate, and the logistic-regression attacker
  trained on the same released rows (ROC AUC: one-vs-rest macro for a many-valued column, plain
  for a binary one).
- with ``recommender``: utility as the service sees it, on the attacker's held-out rows
  (:mod:`privmap.offline.measures`): a recommender's RMSE on hidden ratings with the true rows, the
  released rows and no row, the value kept, NDCG@10 and recall@10.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse

from privmap.device.kinds import TABLE_KINDS, Bundle, TableKind

from ..._errors import BuildError
from ..._information import (
    expected_distortion,
    joint_output,
    leakage_bits,
    mutual_information_bits,
)
from ..._joint import PrivateColumns, marginal_prior, payload_columns
from ...bundle import payload_table
from ...data import joint_prior, nearest, pairwise
from ...measures import (
    AttackScores,
    format_utility,
    logistic_attack,
    map_accuracy,
    map_accuracy_after,
    map_guess,
    permutation_bias,
    prior_mismatch_bounds,
    recommender_utility,
    split_rows,
)
from ._erasure import erasure_distortion
from ._erasure import lookup as lookup_tuples

#: What one unit of each metric's distortion is, for the printed summary.
DISTORTION_UNITS = {"l2": "Euclidean distance per row", "l1": "sum of absolute differences per row",
                    "hamming": "changed cells per row", "erasures": "erased cells per row"}


@dataclass(frozen=True)
class MappingView:
    """What a device does with a bundle, as plain arrays.

    Attributes
    ----------
    mechanism : {"quantized", "exact"}
        ``quantized``: a row goes to its nearest input under ``metric``.
        ``exact``: a row goes to the input equal to it (categorical tuples).
    metric : str
        ``l2``, ``l1``, ``hamming`` or ``erasures`` (number of erased cells,
        ``inf`` when a kept cell differs).
    inputs : ndarray, shape (K_in, d)
        float for quantized, object (str) for exact.
    outputs : ndarray, shape (K_out, d)
        Released rows; ``None`` marks an erased cell.
    q : ndarray, shape (K_in, K_out)
        Row-stochastic mapping.
    classes : tuple of str
        Private classes, in code order.
    features : tuple of str
        Public column names.
    private_name : str
    delta : float or None
        The distortion budget the mapping was built for.
    prior : ndarray or None, shape (n_classes, K_in)
        The prior the mapping was built on (the bundle's), if known.
    missing : tuple of str, length d, or empty
        The bundle's per-feature missing rule ("refuse", "mask", "impute"); empty = mask all.
    fill : tuple, length d, or empty
        The impute value of each "impute" feature (None elsewhere).
    columns : PrivateColumns or None
        Several private columns: ``classes`` are their joint values, and this says how each
        decomposes (:class:`privmap.offline._joint.PrivateColumns`); None for one column.
    """

    mechanism: str
    metric: str
    inputs: np.ndarray
    outputs: np.ndarray
    q: np.ndarray
    classes: tuple[str, ...]
    features: tuple[str, ...]
    private_name: str = "private"
    delta: float | None = None
    prior: np.ndarray | None = None
    categorical: bool | None = None
    missing: tuple[str, ...] = ()
    fill: tuple = ()
    columns: PrivateColumns | None = None
    #: What a released row holds: ``"rows"`` (values in the public columns' units: ratings, where
    #: they are ratings) or ``"scores"`` (a ranking, higher first: a rating recommender's error on
    #: them means nothing, and the service's rating figures are left out).
    RELEASES: ClassVar[str] = "rows"

    def __post_init__(self) -> None:
        exact = self.exact_lookup                     # raises BuildError for an unknown mechanism
        if self.categorical is None:
            object.__setattr__(self, "categorical", exact)
        q = np.asarray(self.q, dtype=float)
        if q.shape != (len(self.inputs), len(self.outputs)):
            raise BuildError(f"mapping of shape {q.shape} does not join {len(self.inputs)} inputs "
                             f"to {len(self.outputs)} outputs")
        if np.any(q < 0) or not np.allclose(q.sum(axis=1), 1.0, atol=1e-9):
            raise BuildError("mapping rows must be probability distributions")

    @property
    def exact_lookup(self) -> bool:
        """Whether the device looks a row up by its equal input tuple.

        It does for the exact mechanism, rather than by its nearest representative: the rule of
        the bundle's kind (:data:`privmap.device.kinds.TABLE_KINDS`).
        """
        return _table_kind(self.mechanism).exact_lookup

    def lookup(self, public: ArrayLike) -> np.ndarray:
        """Input index of each row (the device's psi); ``-1`` where the exact mechanism has no match.

        quantized: nearest input under the metric, ties to the lowest index (the device's rule).
        Missing answers (NaN) follow the device too: imputed with the recorded fill, masked, or
        refused (``-1``, as is a row whose every cell is missing).
        """
        if self.exact_lookup:
            return lookup_tuples([tuple(t) for t in self.inputs], public)
        if self.categorical:  # quantized hamming on categories
            return np.argmin(self.costs(public, self.inputs), axis=1).astype(np.int64)
        X = np.asarray(public, float)
        blank = np.isnan(X)
        refused = blank.all(axis=1)
        if self.missing:
            fill = np.array([np.nan if v is None else float(v) for v in self.fill])
            refused |= np.any(blank & (np.array(self.missing) == "refuse"), axis=1)
            X = np.where(blank & ~np.isnan(fill), fill, X)
        symbols = nearest(X, np.asarray(self.inputs, float), self.metric)
        symbols[refused] = -1
        return symbols

    def costs(self, rows: ArrayLike, targets: ArrayLike) -> np.ndarray:
        """d(row, target), shape (len(rows), len(targets)), in this mapping's metric."""
        if self.metric == "erasures":
            return erasure_distortion(np.asarray(rows, dtype=object), np.asarray(targets, dtype=object))
        if self.categorical:  # hamming on categories; an erased cell counts as a change
            R = np.asarray(rows, dtype=object)
            T = np.asarray(targets, dtype=object)
            return np.sum(R[:, None, :] != T[None, :, :], axis=2).astype(float)
        return pairwise(np.asarray(rows, float), np.asarray(targets, float), self.metric)

    def release(self, symbols: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Draw an output index for each input symbol (simulation; the device uses its own CSPRNG)."""
        cdf = np.cumsum(np.asarray(self.q, float), axis=1)
        cdf[:, -1] = 1.0
        symbols = np.asarray(symbols, dtype=np.int64)
        u = rng.random(len(symbols))
        out = np.empty(len(symbols), dtype=np.int64)
        for start in range(0, len(symbols), 8192):  # bounded memory: 8192 x K_out at a time
            rows = cdf[symbols[start:start + 8192]]
            out[start:start + 8192] = np.sum(rows <= u[start:start + 8192, None], axis=1)
        return np.minimum(out, cdf.shape[1] - 1)

    def released_rows(self, output_index: np.ndarray) -> np.ndarray:
        """The released cells for output indexes (object array for exact, float otherwise)."""
        out = np.asarray(self.outputs, dtype=object if self.categorical else float)
        return out[np.asarray(output_index, dtype=np.int64)]


def _table_kind(mechanism: str) -> TableKind:
    """The device's kind of a table ``mechanism``, from :data:`privmap.device.kinds.TABLE_KINDS`.

    Raises BuildError for a mechanism the device releases no table for.
    """
    kind = TABLE_KINDS.get(mechanism) if isinstance(mechanism, str) else None
    if kind is None:
        raise BuildError(f"unknown mechanism {mechanism!r}; expected one of {', '.join(TABLE_KINDS)}")
    return kind


def view_from_table(mechanism: str, metric: str, inputs: Sequence[Sequence[object]] | np.ndarray,
                    outputs: Sequence[Sequence[object]] | np.ndarray, q: np.ndarray | sparse.spmatrix,
                    classes: Sequence[str], features: Sequence[str], *, private_name: str = "private",
                    delta: float | None = None, prior: ArrayLike | None = None, categorical: bool | None = None,
                    missing: Sequence[str] = (), fill: Sequence[float | None] = (),
                    columns: PrivateColumns | None = None) -> MappingView:
    """A mapping view from arrays.

    A :class:`MappingView` from arrays (for instance a freshly solved table); ``columns`` the
    private columns of a joint attribute (:class:`MappingView`).
    """
    cat = _table_kind(mechanism).exact_lookup if categorical is None else bool(categorical)
    q = np.asarray(q.toarray() if hasattr(q, "toarray") else q, dtype=float)
    return MappingView(mechanism=mechanism, metric=metric,
                       inputs=np.asarray(inputs, dtype=object if cat else float),
                       outputs=np.asarray(outputs, dtype=object if cat else float),
                       q=q, classes=tuple(classes), features=tuple(features), private_name=private_name,
                       delta=None if delta is None else float(delta),
                       prior=None if prior is None else np.asarray(prior, float), categorical=cat,
                       missing=tuple(missing), fill=tuple(fill), columns=columns)


def view_from_payload(payload: dict) -> MappingView:
    """A :class:`MappingView` of a decoded bundle payload (``docs/bundle-format.md``).

    Categorical cells are stored as indexes into the feature's ``values`` and are
    decoded to their strings; ``None`` output cells are erasures. The table's
    sparse integer rows become ``q = weight / 2^bits``.
    """
    features = payload["features"]
    categorical = any(f["kind"] == "categorical" for f in features)

    def decode(row: Sequence[int | float | None]) -> list[object]:
        return [None if cell is None else (f["values"][cell] if f["kind"] == "categorical" else cell)
                for cell, f in zip(row, features)]

    inputs = [decode(r) for r in payload["inputs"]]
    outputs = [decode(r) for r in payload["outputs"]]
    q = payload_table(payload).toarray()
    metrics = dict(payload.get("metrics") or {})
    return view_from_table(payload["mechanism"], payload["metric"], inputs, outputs, q,
                           payload["private"]["classes"], [f["name"] for f in features],
                           private_name=payload["private"]["name"], delta=metrics.get("delta"),
                           prior=payload.get("prior"), categorical=categorical,
                           missing=tuple(f.get("missing", "mask") for f in features) if not categorical else (),
                           fill=tuple(f.get("fill") for f in features) if not categorical else (),
                           columns=payload_columns(payload))


def table_probabilities(index: Sequence[Sequence[int]], weight: Sequence[Sequence[int]], bits: int,
                        k_out: int) -> np.ndarray:
    """q(c^ | c) of a device table's sparse integer rows, dense, shape (K_in, ``k_out``).

    ``index`` and ``weight`` hold K_in rows each; q is ``weight / 2**bits``.
    """
    q = np.zeros((len(index), k_out))
    scale = float(1 << int(bits))
    for c, (idx, w) in enumerate(zip(index, weight)):
        q[c, list(idx)] = np.asarray(w, dtype=float) / scale
    return q


def view_from_bundle(bundle: Bundle) -> MappingView:
    """The mapping view of a verified table bundle.

    A :class:`MappingView` of a verified :class:`privmap.device.Bundle` (not of a recommender
    bundle, whose view folds ratings in first: :func:`privmap.offline.mechanisms.recommender.view_of_recommender`).

    Raises
    ------
    BuildError
        A bundle designed without a private attribute (max-correlation): a view measures what a
        release tells of one.
    """
    if bundle.private_name is None:
        raise BuildError(f"a {bundle.mechanism} bundle has no private attribute for a view to measure")
    q = table_probabilities(bundle.index, bundle.weight, bundle.bits, len(bundle.outputs))
    categorical = any(f.kind == "categorical" for f in bundle.features)
    return view_from_table(bundle.mechanism, bundle.metric, bundle.input_cells, bundle.output_cells, q,
                           bundle.classes, [f.name for f in bundle.features], private_name=bundle.private_name,
                           delta=bundle.metrics.get("delta"), prior=bundle.prior, categorical=categorical,
                           missing=tuple(f.missing for f in bundle.features) if not categorical else (),
                           fill=tuple(f.fill for f in bundle.features) if not categorical else (),
                           columns=payload_columns({"private": {"name": bundle.private_name,
                                                                "classes": list(bundle.classes)}}))


@dataclass
class Evaluation:
    """The result of :func:`evaluate_view`: ``summary`` is JSON-ready; attacks keep their scores for ROC plots."""

    summary: dict
    attack_before: AttackScores | None = None
    attack_after: AttackScores | None = None
    extra: dict = field(default_factory=dict)


def _row_codes(public: ArrayLike, categorical: bool) -> tuple[np.ndarray, int]:
    """Index of each row among the distinct raw rows."""
    if categorical:
        keys = [tuple(r) for r in np.asarray(public, dtype=object)]
        where: dict = {}
        codes = np.array([where.setdefault(k, len(where)) for k in keys], dtype=np.int64)
        return codes, len(where)
    X = np.asarray(public, float)
    _, codes = np.unique(np.where(np.isnan(X), np.inf, X), axis=0, return_inverse=True)  # blank: its own value
    codes = np.asarray(codes).reshape(-1)
    return codes.astype(np.int64), int(codes.max()) + 1


@dataclass
class _Rows:
    """The rows an evaluation measures.

    The rows :func:`evaluate_view` measures, once checked and looked up: the phases below each
    read them, so they travel together rather than as five arguments.

    Attributes
    ----------
    public : ndarray, shape (n, d)
        The raw public rows the mapping looks up (float, or object for categorical rows).
    private : ndarray of int64, shape (n,)
        Their private class codes.
    symbols : ndarray of int64, shape (n,)
        Each row's input symbol (the device's psi).
    unmatched : int
        Rows of the data left out because the mapping cannot look them up.
    p_ac : ndarray, shape (n_classes, K_in)
        This data's empirical joint prior of class and input symbol.
    """

    public: np.ndarray
    private: np.ndarray
    symbols: np.ndarray
    unmatched: int
    p_ac: np.ndarray

    @property
    def n(self) -> int:
        """Number of rows measured."""
        return int(self.public.shape[0])


def _matched_rows(view: MappingView, public: ArrayLike, private: ArrayLike) -> _Rows:
    """The rows of the data a view can look up.

    They are checked against the view's features and classes; every figure is measured on
    these alone (the rest are only counted).

    Raises
    ------
    BuildError
        The number of public columns differs from the view's features, the row counts differ, a
        class code is out of range, or no row can be looked up.
    """
    n_classes = len(view.classes)
    public = np.asarray(public, dtype=object if view.categorical else float)
    private = np.asarray(private, dtype=np.int64)
    if public.ndim != 2 or public.shape[1] != len(view.features):
        raise BuildError(f"data has {public.shape[1] if public.ndim == 2 else '?'} public columns, "
                         f"the mapping expects {len(view.features)}")
    if private.shape[0] != public.shape[0]:
        raise BuildError("public and private data have different numbers of rows")
    if private.size and (private.min() < 0 or private.max() >= n_classes):
        raise BuildError("private codes out of range of the mapping's classes")
    symbols = view.lookup(public)
    matched = symbols >= 0
    n_unmatched = int((~matched).sum())
    if not matched.any():
        raise BuildError("no row of the data matches an input of the mapping")
    public, private, symbols = public[matched], private[matched], symbols[matched]
    p_ac = joint_prior(private, symbols, n_classes, view.q.shape[0])
    return _Rows(public=public, private=private, symbols=symbols, unmatched=n_unmatched, p_ac=p_ac)


def _leakage_figures(view: MappingView, rows: _Rows, permutations: int, seed: int) -> dict:
    """The summary's leakage entries.

    The summary's leakage entries, in their order: I(A; C^) after the mapping, I(A; C) of the
    input symbols and the plug-in I(A; B) of the raw rows, each with its permutation bias, and
    H(A), in bits.
    """
    n_classes, K_in = len(view.classes), view.q.shape[0]
    private, symbols, q, p_ac = rows.private, rows.symbols, view.q, rows.p_ac
    p_a = p_ac.sum(axis=1)
    leak = leakage_bits(p_ac, q)
    leak_bias, leak_bias_sd = permutation_bias(private, symbols, n_classes, K_in, q,
                                                        permutations=permutations, seed=seed)
    leak_in = mutual_information_bits(p_ac)
    leak_in_bias, _ = permutation_bias(private, symbols, n_classes, K_in,
                                                permutations=permutations, seed=seed)
    raw_codes, n_raw = _row_codes(rows.public, bool(view.categorical))
    raw_mi = mutual_information_bits(joint_prior(private, raw_codes, n_classes, n_raw))
    raw_bias, _ = permutation_bias(private, raw_codes, n_classes, n_raw,
                                            permutations=permutations, seed=seed)
    h_a = float(-np.sum(p_a[p_a > 0] * np.log2(p_a[p_a > 0])))
    return {"leakage_bits": leak, "leakage_bias_bits": leak_bias, "leakage_bias_sd_bits": leak_bias_sd,
            "leakage_debiased_bits": max(leak - leak_bias, 0.0), "leakage_before_bits": leak_in,
            "leakage_before_bias_bits": leak_in_bias, "raw_plugin_bits": raw_mi, "raw_plugin_bias_bits": raw_bias,
            "raw_distinct_rows": int(n_raw), "private_entropy_bits": h_a}


def _distortion_figures(view: MappingView, rows: _Rows, rng: np.random.Generator) -> tuple[dict, float]:
    """The summary's distortion entries.

    The summary's distortion entries, in their order (the exact expectation over q on the raw
    rows, one simulated release drawn from ``rng``, the symbols' distortion, r and Theorem 2's
    bound), and d_max, the largest finite symbol-to-output distortion (the prior-mismatch
    bounds' scale).
    """
    n, symbols, q = rows.n, rows.symbols, view.q
    sym_costs = view.costs(view.inputs, view.outputs)           # (K_in, K_out)
    if view.exact_lookup:                                        # a matched row equals its input
        costs = sym_costs[symbols]
        to_input = np.zeros(n)
    else:
        costs = view.costs(rows.public, view.outputs)            # (n, K_out)
        to_input = view.costs(rows.public, view.inputs)[np.arange(n), symbols]
    qs = q[symbols]
    expected = float(np.mean(np.sum(np.where(qs > 0, qs * np.where(np.isfinite(costs), costs, 0.0), 0.0), axis=1)))
    if np.any((qs > 0) & ~np.isfinite(costs)):
        expected = math.inf
    released = view.release(symbols, rng)
    sampled = float(np.mean(costs[np.arange(n), released]))
    prior_distortion = expected_distortion(rows.p_ac.sum(axis=0), q, sym_costs)
    r = float(np.max(to_input))
    finite = sym_costs[np.isfinite(sym_costs)]
    d_max = float(finite.max()) if finite.size else math.nan
    return {"distortion": expected, "distortion_sampled": sampled, "distortion_symbols": prior_distortion,
            "quantization_mean": float(np.mean(to_input)), "r": r,
            "distortion_bound": (view.delta + r) if view.delta is not None else None}, d_max


def _map_figures(view: MappingView, rows: _Rows, d_max: float, confidence: float) -> dict:
    """The summary's MAP-attacker entries.

    The summary's MAP-attacker entries, in their order: the attacker who knows the mapping and
    this data's prior (and the bundle's prior, where it has one of this data's shape), with the
    Theorem 1 / Proposition 1 prior-mismatch bounds.
    """
    p_ac, q = rows.p_ac, view.q
    K_in, K_out = q.shape
    figures = {"majority": float(p_ac.sum(axis=1).max()), "map_accuracy_before": map_accuracy(p_ac),
               "map_accuracy_after": map_accuracy_after(p_ac, q),
               "prior_mismatch": prior_mismatch_bounds(rows.n, len(view.classes), K_in, d_max=d_max,
                                                       confidence=confidence)}
    if view.prior is not None and np.asarray(view.prior).shape == p_ac.shape:
        guess = map_guess(view.prior, q)                  # the bundle's prior, applied to this data
        p_aj = joint_output(p_ac, q)
        figures["map_accuracy_after_bundle_prior"] = float(sum(p_aj[guess[j], j] for j in range(K_out)))
    return figures


def _logistic_figures(view: MappingView, rows: _Rows, rng: np.random.Generator, test_fraction: float,
                      seed: int) -> tuple[AttackScores, AttackScores, dict, tuple]:
    """The logistic-regression attacker before and after the mapping.

    Before is on raw rows, after on rows released by draws from ``rng``, both trained and
    tested on the same split. Returns both scores, the summary's ``attacker`` entry, and the raw
    and released train and test rows with their indexes (what each private column's own
    attacker reuses).

    Raises
    ------
    BuildError
        Fewer than 10 rows, or a test fraction outside (0, 1).
    """
    n, public, private, symbols = rows.n, rows.public, rows.private, rows.symbols
    n_classes = len(view.classes)
    if n < 10 or not (0.0 < test_fraction < 1.0):
        raise BuildError(f"cannot split {n} rows with test fraction {test_fraction}")
    train, test = split_rows(n, private, test_fraction, seed)
    before = logistic_attack(public[train], private[train], public[test], private[test], n_classes,
                                      categorical=bool(view.categorical), seed=seed)
    rel_train = view.released_rows(view.release(symbols[train], rng))
    rel_test = view.released_rows(view.release(symbols[test], rng))
    after = logistic_attack(rel_train, private[train], rel_test, private[test], n_classes,
                                     categorical=bool(view.categorical), seed=seed)
    entry = {"model": "logistic-regression", "train_rows": int(len(train)),
             "test_rows": int(len(test)), "before": before.as_dict(), "after": after.as_dict()}
    return before, after, entry, (public[train], rel_train, public[test], rel_test, train, test)


def _add_recommender(summary: dict, view: MappingView, rows: _Rows, recommender: bool | None,
                     test_fraction: float, seed: int) -> None:
    """Add the recommender figures to a summary as :func:`evaluate_view`'s ``recommender`` asks.

    ``recommender`` None adds them only for numeric rows with blank cells, and a figure that
    cannot be measured becomes a ``recommender_note`` rather than an error.

    Raises
    ------
    BuildError
        ``recommender`` is True and the figures cannot be measured.
    """
    auto = recommender is None
    if auto:
        recommender = not view.categorical and bool(np.isnan(np.asarray(rows.public, dtype=float)).any())
    if recommender:
        n = rows.n
        try:
            if n < 10 or not (0.0 < test_fraction < 1.0):
                raise BuildError(f"recommender figures: cannot split {n} rows with test fraction {test_fraction}")
            train, test = split_rows(n, rows.private, test_fraction, seed)
            summary["recommender"] = recommender_figures(view, rows.public[train], rows.public[test], seed=seed)
        except BuildError as exc:
            if not auto:
                raise
            summary["recommender_note"] = str(exc)


def evaluate_view(view: MappingView, public: ArrayLike, private: ArrayLike, *, seed: int = 0, test_fraction: float = 0.3,
                  permutations: int = 20, attacker: bool = True, confidence: float = 0.95,
                  recommender: bool | None = False) -> Evaluation:
    """Measure ``view`` on labelled rows.

    Parameters
    ----------
    view : MappingView
    public : array-like, shape (n, d)
        Raw public rows (float, or str for the exact mechanism).
    private : array-like of int, shape (n,)
        Private class codes, indexes into ``view.classes``.
    seed : int
        Seeds the train/test split, the simulated releases and the permutations.
    test_fraction : float
        Share of rows held out to test the logistic-regression attacker.
    permutations : int
        Permutations of the private column for the plug-in bias.
    attacker : bool
        Run the logistic-regression attacker.
    confidence : float
        Confidence of the Proposition 1 radius.
    recommender : bool or None
        True: also measure the recommender figures (``summary["recommender"]``,
        :func:`recommender_figures`) on the attacker's split, NaN cells read as "not rated".
        None: measure them when the rows are ratings with blank cells (a numeric view, a NaN in
        ``public``), and when they cannot be measured say why in ``summary["recommender_note"]``
        instead of failing. False: skip them.

    Raises
    ------
    BuildError
        No row can be looked up, a class code out of range, too few rows to split, recommender
        figures asked of categorical rows, or no held-out user with two ratings.
    """
    rng = np.random.default_rng(seed)
    rows = _matched_rows(view, public, private)
    K_in, K_out = view.q.shape
    leakage = _leakage_figures(view, rows, permutations, seed)
    distortion, d_max = _distortion_figures(view, rows, rng)
    summary = {"mechanism": view.mechanism, "metric": view.metric, "private": view.private_name,
               "classes": list(view.classes), "rows": rows.n, "unmatched_rows": rows.unmatched,
               "clusters": int(K_in), "outputs": int(K_out), "delta": view.delta,
               **leakage, **distortion, **_map_figures(view, rows, d_max, confidence)}
    before = after = attacked = None
    if attacker:
        before, after, summary["attacker"], attacked = _logistic_figures(view, rows, rng, test_fraction, seed)
    if view.columns is not None:
        summary["columns"] = _column_summaries(view, rows.p_ac, rows.private, attacked, seed)
    _add_recommender(summary, view, rows, recommender, test_fraction, seed)
    return Evaluation(summary=summary, attack_before=before, attack_after=after)


def _column_summaries(view: MappingView, p_ac: np.ndarray, private: np.ndarray, attacked: tuple | None,
                      seed: int) -> dict:
    """Each private column of a joint view alone.

    Each private column alone (a joint view): ``{column: figures}`` with its ``classes``,
    ``leakage_before_bits`` and ``leakage_bits`` (I(A_i; C), I(A_i; C^) on this data's marginal
    prior), ``majority`` (the majority-class rate), ``map_accuracy_before`` / ``_after`` (the MAP
    attacker who knows the mapping and this data's prior), and with ``attacked`` (the joint
    attacker's raw and released train and test rows, and their indexes) the logistic-regression
    attacker before and after, trained on the same rows with this column's values as labels.
    """
    columns = view.columns
    assert columns is not None
    out = {}
    for i, name in enumerate(columns.names):
        marginal = marginal_prior(p_ac, columns, i)
        p_a = marginal.sum(axis=1)
        figures = {"classes": list(columns.values[i]), "leakage_before_bits": mutual_information_bits(marginal),
                   "leakage_bits": leakage_bits(marginal, view.q), "majority": float(p_a.max() / p_a.sum()),
                   "map_accuracy_before": map_accuracy(marginal),
                   "map_accuracy_after": map_accuracy_after(marginal, view.q)}
        if attacked is not None:
            raw_train, rel_train, raw_test, rel_test, train, test = attacked
            y = columns.column_codes(private, i)
            k = len(columns.values[i])
            before = logistic_attack(raw_train, y[train], raw_test, y[test], k, categorical=bool(view.categorical),
                                     seed=seed)
            after = logistic_attack(rel_train, y[train], rel_test, y[test], k, categorical=bool(view.categorical),
                                    seed=seed)
            figures["attacker"] = {"auc": "plain" if k == 2 else "one-vs-rest macro", "before": before.as_dict(),
                                   "after": after.as_dict()}
        out[name] = figures
    return out


def view_release(view: MappingView, rng: np.random.Generator) -> Callable[[ArrayLike], np.ndarray]:
    """The release of a view's rows as a device makes it.

    ``release(rows) -> released``: the rows a device with ``view`` releases (one simulated draw
    each), NaN rows where it releases nothing (a row it refuses); numeric views only.
    """
    def release(rows: ArrayLike) -> np.ndarray:
        rows = np.asarray(rows, dtype=float)
        out = np.full(rows.shape, np.nan)
        symbols = view.lookup(rows)
        served = symbols >= 0
        if served.any():
            out[served] = view.released_rows(view.release(symbols[served], rng))
        return out
    return release


def recommender_figures(view: MappingView, train: ArrayLike, heldout: ArrayLike, *, seed: int = 0) -> dict:
    """The service's figures for a view, by :func:`privmap.offline.measures.recommender_utility`.

    Measured on the training rows' true ratings beside each held-out row as the device releases
    it from its visible cells (one simulated draw, seeded by ``seed``).

    Parameters
    ----------
    train, heldout : array-like of float, shapes (n_train, d) and (n_test, d)
        True rows, NaN = not rated.

    Raises
    ------
    BuildError
        A categorical view, or no held-out user with two ratings.
    """
    if view.categorical:
        raise BuildError("the recommender figures need numeric ratings, not categories")
    try:
        return rated_figures(view, recommender_utility(np.asarray(train, float), np.asarray(heldout, float),
                                                       view_release(view, np.random.default_rng([seed, 1])),
                                                       seed=seed))
    except ValueError as exc:
        raise BuildError(f"recommender figures: {exc}") from None


#: The service's figures that read a released row as ratings (the rating recommender's).
RATING_FIGURES = ("rmse_released", "value_kept", "ndcg_at_k_released", "recall_at_k_released")


def rated_figures(view: MappingView, figures: dict) -> dict:
    """The service's figures of a view's releases.

    The service's ``figures`` of ``view``'s releases, those of :data:`RATING_FIGURES` None when
    its rows are scores (``view.RELEASES``): a rating recommender fed scores measures nothing.
    """
    if view.RELEASES != "scores":
        return figures
    return {**figures, **dict.fromkeys(RATING_FIGURES)}


def _c(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def format_columns(s: dict) -> str:
    """Each private column alone beside the joint, as a table.

    The columns are a joint evaluation's ``columns``. Figures: leakage, the MAP attacker's
    accuracy against the majority-class rate, and the logistic-regression attacker on released
    rows (its accuracy and ROC AUC: one-vs-rest macro for a many-valued column).
    """
    def f(x: object) -> str:
        return "-" if x is None else ("nan" if isinstance(x, float) and math.isnan(x) else f"{x:.4f}")
    head = f"{'private attribute':24}{'values':>7}{'leak bits':>10}{'majority':>9}{'MAP acc':>9}{'LR acc':>8}{'LR AUC':>8}"
    lines = [head]
    joint_after = s.get("attacker", {}).get("after", {})
    lines.append(f"{'joint (' + ', '.join(s['columns']) + ')':24}"[:24].ljust(24)
                 + f"{len(s['classes']):>7}{f(s['leakage_bits']):>10}{f(s['majority']):>9}"
                 f"{f(s['map_accuracy_after']):>9}{f(joint_after.get('accuracy')):>8}{f(joint_after.get('roc_auc')):>8}")
    for name, c in s["columns"].items():
        after = c.get("attacker", {}).get("after", {})
        lines.append(f"{name[:24]:24}{len(c['classes']):>7}{f(c['leakage_bits']):>10}{f(c['majority']):>9}"
                     f"{f(c['map_accuracy_after']):>9}{f(after.get('accuracy')):>8}{f(after.get('roc_auc')):>8}")
    lines.append("(after the mapping, on this data; AUC one-vs-rest macro for a column of more than two values)")
    return "\n".join(lines)


def format_summary(s: dict) -> str:
    """A human-readable table of an evaluation summary."""
    def f(x: object, nd: int = 4) -> str:
        if x is None:
            return "-"
        if isinstance(x, float):
            return "nan" if math.isnan(x) else f"{x:.{nd}f}"
        return str(x)

    unit = DISTORTION_UNITS.get(s["metric"], "the metric's unit")
    lines = [
        f"mechanism {s['mechanism']} ({s['metric']}), private {s['private']!r} {s['classes']}",
        f"rows {s['rows']} (unmatched {s['unmatched_rows']}), inputs {s['clusters']}, outputs {s['outputs']}",
        "",
        f"{'':34}{'before':>10}{'after':>10}",
        f"{'leakage I(A;C) / I(A;C^) bits':34}{f(s['leakage_before_bits']):>10}{f(s['leakage_bits']):>10}",
        f"{'  plug-in bias (permutation)':34}{f(s['leakage_before_bias_bits']):>10}{f(s['leakage_bias_bits']):>10}",
        f"{'MAP attacker accuracy':34}{f(s['map_accuracy_before']):>10}{f(s['map_accuracy_after']):>10}",
    ]
    if "attacker" in s:
        b, a = s["attacker"]["before"], s["attacker"]["after"]
        lines += [
            f"{'logistic regression accuracy':34}{f(b['accuracy']):>10}{f(a['accuracy']):>10}",
            f"{'  balanced accuracy':34}{f(b['balanced_accuracy']):>10}{f(a['balanced_accuracy']):>10}",
            f"{'  ROC AUC':34}{f(b['roc_auc']):>10}{f(a['roc_auc']):>10}",
            f"{'  majority class (test rows)':34}{f(b['majority']):>10}{f(a['majority']):>10}",
            f"{'  regularisation C (inner CV)':34}{_c(b.get('regularisation_c')):>10}"
            f"{_c(a.get('regularisation_c')):>10}",
        ]
    if "columns" in s:
        lines += ["", format_columns(s)]
    pm = s["prior_mismatch"]
    lines += [
        "",
        f"raw rows: plug-in I(A;B) {f(s['raw_plugin_bits'])} bits over {s['raw_distinct_rows']} distinct rows "
        f"(permutation bias {f(s['raw_plugin_bias_bits'])}); H(A) = {f(s['private_entropy_bits'])}",
        f"distortion, in {unit} ({s['metric']}):",
        f"{'  E d(B, B^) raw row to released row, this data':64}{f(s['distortion'])} "
        f"(one simulated release {f(s['distortion_sampled'])})",
        f"{'  E d(C, C^) input to output symbol, this data':64}{f(s['distortion_symbols'])}",
        f"{'  build budget Delta (the solve on E d(C, C^), training prior)':64}{f(s['delta'])}",
        f"  quantization d(B, C): mean {f(s['quantization_mean'])}, max r {f(s['r'])}; "
        f"Theorem 2 bound on E d(B, B^): Delta + r = {f(s['distortion_bound'])}",
        f"Proposition 1 ({pm['confidence']:.0%}): ||p - p_hat||_1 <= {f(pm['l1_radius'])}, leakage within "
        f"{f(pm['leakage_bound_bits'])} bits" + (" (vacuous)" if pm["vacuous"] else ""),
    ]
    if "recommender" in s:
        lines += ["", format_utility(s["recommender"])]
    elif "recommender_note" in s:
        lines += ["", f"recommender figures not measured: {s['recommender_note']}"]
    return "\n".join(lines)
