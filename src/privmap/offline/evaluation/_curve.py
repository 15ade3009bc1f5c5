"""Privacy-distortion sweeps over Delta and the number of clusters K (``privmap curve``).

For each K the public data is quantized once (Algorithm 2; K = 0 means no
quantization, every distinct row is a symbol, Algorithm 1) or, for the exact
erasure mechanism, turned into the erasure instance; then program (19) is solved
for each Delta and the solved table is measured on the same data with
:func:`privmap.offline.mechanisms.table.evaluate_view` (leakage, distortion on the raw
rows, MAP and logistic-regression attackers; with ``recommender``, the service's recommender
figures of :func:`privmap.offline.measures.recommender_utility`). With several private columns
(``columns``, their joint attribute protected) each point also carries each column's figures
alone, under the keys of :data:`COLUMN_POINT_FIGURES` suffixed ``[COL]``.
"""
from __future__ import annotations

import csv
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import BuildError, InfeasibleError
from .._information import max_output_leakage_bits
from .._joint import PrivateColumns, column_key
from ..data import joint_prior, observed_domain, pairwise, quantize
from ..mechanisms import MECHANISMS, Mechanism
from ..mechanisms.table import erasure_problem, evaluate_view, input_alphabet, metric_center, refine, view_from_table
from ..solvers import certified_leakage_bits, confidence_set, counts_from_prior, solve

#: Most symbols an unquantized (K = 0) numeric sweep accepts.
MAX_UNQUANTIZED = 600

#: The recommender figures of each point (:func:`privmap.offline.measures.recommender_utility`; NaN when not measured): the
#: true and nothing cases are the same for every point of a sweep (one split, one hiding).
RECOMMENDER_COLUMNS = ("rmse_true", "rmse_released", "rmse_nothing", "value_kept", "ndcg_at_k_true",
                       "ndcg_at_k_released", "ndcg_at_k_nothing", "recall_at_k_true", "recall_at_k_released",
                       "recall_at_k_nothing", "ranking_recall_true", "ranking_recall_popularity",
                       "ranking_recall_released", "ranking_ndcg_true", "ranking_ndcg_popularity",
                       "ranking_ndcg_released", "ranking_value_kept")

CSV_COLUMNS = ("k", "clusters", "delta", "leakage_bits", "leakage_bias_bits", "distortion", "distortion_symbols",
               "quantization_mean", "r", "distortion_bound", "map_accuracy", "lr_accuracy",
               "lr_balanced_accuracy", "lr_auc", "majority", "solver", "gap_bits", "status", "codebook",
               "robust_leakage_bits", "max_output_leakage_bits") + RECOMMENDER_COLUMNS


#: Each private column's figures at a point of a joint sweep (keys ``FIGURE[COL]``): its leakage
#: I(A_i; C^), the MAP attacker's accuracy, the majority-class rate and the logistic-regression
#: attacker's accuracy and ROC AUC (one-vs-rest macro for a column of more than two values).
COLUMN_POINT_FIGURES = ("leakage_bits", "map_accuracy", "majority", "lr_accuracy", "lr_auc")


def point_columns(points: Sequence[dict]) -> tuple[str, ...]:
    """:data:`CSV_COLUMNS`, then the per-column keys (``FIGURE[COL]``) the points carry.

    In the order of their first appearance.
    """
    extra: dict[str, None] = {}
    for p in points:
        extra.update(dict.fromkeys(k for k in p if "[" in k and k not in extra))
    return CSV_COLUMNS + tuple(extra)


@dataclass(frozen=True)
class Problem:
    """One instance of program (19) built from a dataset: symbols, outputs, distortion and prior."""

    mechanism: str
    metric: str
    inputs: np.ndarray
    outputs: np.ndarray
    distortion: np.ndarray
    p_ac: np.ndarray
    labels: np.ndarray
    clusters: int


def build_problem(public, private, n_classes: int, *, mechanism: str, metric: str, clusters: int | None,
                  seed: int = 0, features: Sequence[str] | None = None) -> Problem:
    """The program (19) instance for one K (``clusters``; 0 or None = no quantization).

    quantized: k-means representatives (:func:`privmap.offline.data._quantize.quantize`)
    are both inputs and outputs, d = ``metric`` between them. exact with
    ``erasures``: :func:`privmap.offline.mechanisms.table.erasure_problem`. exact with
    ``hamming``: distinct tuples in and out, d = number of changed cells.
    """
    private = np.asarray(private, dtype=np.int64)
    if swept(mechanism).categorical:
        if metric == "erasures":
            ep = erasure_problem(public, private, n_classes, features)
            return Problem(mechanism, metric, np.asarray(ep.inputs, dtype=object), np.asarray(ep.outputs, dtype=object),
                           ep.distortion, ep.p_ac, ep.labels, len(ep.inputs))
        if metric != "hamming":
            raise BuildError(f"the exact mechanism supports metrics erasures and hamming, not {metric!r}")
        inputs, labels = input_alphabet(public)
        X = np.asarray(inputs, dtype=object)
        D = np.sum(X[:, None, :] != X[None, :, :], axis=2).astype(float)
        return Problem(mechanism, metric, X, X, D, joint_prior(private, labels, n_classes, len(inputs)),
                       labels, len(inputs))
    if metric not in ("l2", "l1", "hamming"):
        raise BuildError(f"the quantized mechanism supports metrics l2, l1 and hamming, not {metric!r}")
    X = np.asarray(public, dtype=float)
    if not clusters:
        centers, labels = np.unique(X, axis=0, return_inverse=True)
        labels = np.asarray(labels).reshape(-1)
        if centers.shape[0] > MAX_UNQUANTIZED:
            raise BuildError(f"{centers.shape[0]} distinct rows: too many to sweep without quantization "
                             f"(at most {MAX_UNQUANTIZED}); give --clusters")
    else:
        qz = quantize(X, int(clusters), metric=metric, seed=seed)
        centers, labels = qz.centers, qz.labels
    D = pairwise(centers, centers, metric)
    return Problem(mechanism, metric, centers, centers, D,
                   joint_prior(private, labels, n_classes, centers.shape[0]), labels, int(centers.shape[0]))


def swept(mechanism: str) -> Mechanism:
    """The record of a mechanism a curve sweeps through program (19).

    Quantized, exact: :attr:`~privmap.offline.mechanisms.Mechanism.sweeps`. Raises BuildError for
    any other.
    """
    record = MECHANISMS.get(mechanism) if isinstance(mechanism, str) else None
    if record is None or not record.sweeps:
        raise BuildError(f"unknown mechanism {mechanism!r}; expected quantized or exact")
    return record


def sweep(public, private, classes: Sequence[str], features: Sequence[str], *, deltas: Sequence[float],
          clusters: Sequence[int | None] = (None,), mechanism: str = "quantized", metric: str = "l2",
          seed: int = 0, solver: str = "fast", attacker: bool = True, test_fraction: float = 0.3,
          permutations: int = 5, private_name: str = "private", codebook: bool = True,
          robust: float | None = None, domain: tuple | None = None,
          progress: Callable[[int], None] | None = None, recommender: bool | None = False,
          columns: PrivateColumns | None = None) -> list[dict]:
    """Solve and measure program (19) for every (K, Delta).

    Returns one dict per point with the keys of :data:`CSV_COLUMNS` (``status``
    is ``"optimal"`` or ``"infeasible"``; infeasible points carry NaN figures).
    ``codebook`` 0 marks seed 000's mapping (representatives released as they are);
    with ``codebook`` (quantized mechanism only) each solved point is followed by the
    same point after the build's codebook step (:func:`privmap.offline.mechanisms.table.refine`),
    marked 1; its released rows keep to ``domain`` (integer, lo, hi: arrays of shape (d,), a build's
    resolved schema), by default what the observed cells show. ``progress(1)`` is called after each
    (K, Delta). With ``robust`` (a confidence),
    ``robust_leakage_bits`` is each table's certified worst-case leakage over the confidence set
    of the sweep's own training counts (:mod:`privmap.offline.solvers.robust`); NaN otherwise.
    ``max_output_leakage_bits`` is each table's per-output epsilon on the sweep's prior, max over
    outputs and classes of |log2 p(a | c_hat) - log2 p(a)| in bits (``inf`` when an output rules a
    class out; :func:`privmap.offline._information.max_output_leakage_bits`).
    ``recommender`` (True, False, or None = when the rows have blank cells; as
    :func:`privmap.offline.mechanisms.table.evaluate_view` takes it) fills :data:`RECOMMENDER_COLUMNS` on the
    attacker's held-out rows; the true and nothing fits are made once for the sweep.
    ``columns`` (the private columns of a joint attribute, ``classes`` being their joint values:
    :attr:`privmap.offline.data.Dataset.columns`) adds each column's figures alone to every point
    (:data:`COLUMN_POINT_FIGURES`).
    """
    points = []
    n_classes = len(classes)
    record = swept(mechanism)
    ks = list(clusters) if record.quantizes else [None]
    for k in ks:
        prob = build_problem(public, private, n_classes, mechanism=mechanism, metric=metric, clusters=k,
                             seed=seed, features=features)
        certify = _certifier(prob, robust)
        for delta in deltas:
            asked = int(k or 0) if record.quantizes else prob.clusters
            point: dict[str, Any] = {"k": asked, "clusters": prob.clusters, "delta": float(delta), "codebook": 0}
            try:
                res = solve(prob.p_ac, prob.distortion, float(delta), solver=solver)
            except InfeasibleError:
                point.update({c: math.nan for c in CSV_COLUMNS if c not in point})
                point.update({"solver": solver, "status": "infeasible"})
                points.append(point)
                if progress:
                    progress(1)
                continue
            measure = dict(classes=classes, features=features, private_name=private_name, seed=seed,
                           test_fraction=test_fraction, permutations=permutations, attacker=attacker,
                           recommender=recommender, columns=columns)
            points.append({**point, **_measure(prob, prob.outputs, res.table, delta, public, private, **measure),
                           "solver": res.solver, "gap_bits": res.gap_bits, "status": res.status,
                           "robust_leakage_bits": certify(res.table),
                           "max_output_leakage_bits": max_output_leakage_bits(prob.p_ac, res.table)})
            if codebook and record.quantizes:
                step = _codebook_step(prob, res, public, metric, solver, domain)
                last = step.solved or res
                points.append({**point, "codebook": 1,
                               **_measure(prob, step.outputs, step.table, delta, public, private, **measure),
                               "solver": last.solver, "gap_bits": last.gap_bits, "status": "optimal",
                               "robust_leakage_bits": certify(step.table),
                               "max_output_leakage_bits": max_output_leakage_bits(prob.p_ac, step.table)})
            if progress:
                progress(1)
    return points


def _certifier(prob: Problem, confidence: float | None) -> Callable[[np.ndarray], float]:
    """The map table -> certified worst-case leakage over the confidence set of ``prob``'s counts.

    NaN without a confidence.
    """
    if confidence is None:
        return lambda table: math.nan
    counts = counts_from_prior(prob.p_ac, len(prob.labels))
    if counts is None:
        return lambda table: math.nan
    cs = confidence_set(counts, confidence)
    return lambda table: certified_leakage_bits(cs, np.asarray(table, dtype=float))


def _codebook_step(prob: Problem, res, public, metric: str, solver: str, domain: tuple | None):
    """The build's codebook step on a sweep point's solve ``res``.

    Released rows kept to ``domain`` (:func:`sweep`; default: columns whose observed values are
    whole numbers stay whole, in the observed range); re-solves warm-started from ``res``, as in
    the build.
    """
    X = np.asarray(public, dtype=float)
    integer, lo, hi = domain if domain is not None else observed_domain(X)
    integer = np.asarray(integer, dtype=bool)
    distance, centre, project = metric_center(metric, integer=integer, lo=lo, hi=hi)
    return refine(X, prob.labels, prob.p_ac, res.table, np.asarray(prob.outputs, float), distance=distance,
                  centre=centre, project=project, solver=solver, warm_start=res)


def _measure(prob: Problem, outputs, table, delta, public, private, *, classes, features, private_name, seed,
             test_fraction, permutations, attacker, recommender, columns=None) -> dict:
    """One sweep point's figures: the table with these outputs measured on the rows.

    With ``columns``, also each private column's alone.
    """
    view = view_from_table(prob.mechanism, prob.metric, prob.inputs, outputs, table, classes, features,
                           private_name=private_name, delta=delta, prior=prob.p_ac, columns=columns)
    s = evaluate_view(view, public, private, seed=seed, test_fraction=test_fraction,
                      permutations=permutations, attacker=attacker,
                      recommender=recommender if MECHANISMS[prob.mechanism].ratings else False).summary
    after = s.get("attacker", {}).get("after", {})
    service = s.get("recommender", {})
    return {
        "leakage_bits": s["leakage_bits"], "leakage_bias_bits": s["leakage_bias_bits"],
        "distortion": s["distortion"], "distortion_symbols": s["distortion_symbols"],
        "quantization_mean": s["quantization_mean"], "r": s["r"],
        "distortion_bound": s["distortion_bound"], "map_accuracy": s["map_accuracy_after"],
        "lr_accuracy": after.get("accuracy", math.nan),
        "lr_balanced_accuracy": after.get("balanced_accuracy", math.nan),
        "lr_auc": after.get("roc_auc", math.nan), "majority": s["majority"], "table": table,
        **{c: (math.nan if service.get(c) is None else service[c]) for c in RECOMMENDER_COLUMNS},
        **_column_point(s.get("columns", {})),
    }


def _column_point(columns: dict) -> dict:
    """A point's per-column keys (``FIGURE[COL]``, :data:`COLUMN_POINT_FIGURES`).

    From an evaluation's ``columns`` summary (NaN where the attacker was not run).
    """
    out = {}
    for name, c in columns.items():
        after = c.get("attacker", {}).get("after", {})
        figures = {"leakage_bits": c["leakage_bits"], "map_accuracy": c["map_accuracy_after"],
                   "majority": c["majority"], "lr_accuracy": after.get("accuracy", math.nan),
                   "lr_auc": after.get("roc_auc", math.nan)}
        out.update({column_key(f, name): figures[f] for f in COLUMN_POINT_FIGURES})
    return out


def write_csv(points: Sequence[dict], path) -> None:
    """Write the sweep's points to ``path``.

    Columns :data:`CSV_COLUMNS`, then any per-column keys: :func:`point_columns`.
    """
    header = point_columns(points)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for p in points:
            w.writerow([_fmt(p.get(c)) for c in header])


def _fmt(x) -> str:
    if x is None:
        return ""
    if isinstance(x, float):
        return "nan" if math.isnan(x) else ("inf" if math.isinf(x) else f"{x:.6g}")
    return str(x)


def _has_recommender(points: Sequence[dict]) -> bool:
    return any(isinstance(p.get("rmse_released"), float) and math.isfinite(p["rmse_released"]) for p in points)


def format_table(points: Sequence[dict]) -> str:
    """The sweep as a human-readable table.

    With the recommender's RMSE, value kept and NDCG@10 of the released rows when measured, the
    top-10 lists' recall@10 and ranking value kept, and last lines with the true-row, no-row and
    popularity figures.
    """
    service = _has_recommender(points)
    head = f"{'K':>5} {'K used':>6} {'delta':>8} {'codebook':>8} {'leak bits':>10} {'bias':>8} {'dist raw':>9} " \
           f"{'dist sym':>9} {'MAP acc':>8} {'LR acc':>7} {'LR AUC':>7} {'robust':>9} {'epsilon':>9}" \
           + (f" {'RMSE':>7} {'kept':>7} {'NDCG@10':>7} {'top-10':>7} {'ranked':>7}" if service else "")
    lines = [head]
    for p in points:
        lines.append(f"{p['k']:>5} {p['clusters']:>6} {p['delta']:>8.4g} {'on' if p['codebook'] else 'off':>8} "
                     f"{_fmt(p['leakage_bits']):>10} "
                     f"{_fmt(p['leakage_bias_bits']):>8} {_fmt(p['distortion']):>9} {_fmt(p['distortion_symbols']):>9} "
                     f"{_fmt(p['map_accuracy']):>8} {_fmt(p['lr_accuracy']):>7} {_fmt(p['lr_auc']):>7} "
                     f"{_fmt(p.get('robust_leakage_bits')):>9} {_fmt(p.get('max_output_leakage_bits')):>9}"
                     + (f" {_fmt(p.get('rmse_released')):>7} {_fmt(p.get('value_kept')):>7} "
                        f"{_fmt(p.get('ndcg_at_k_released')):>7} {_fmt(p.get('ranking_recall_released')):>7} "
                        f"{_fmt(p.get('ranking_value_kept')):>7}" if service else "")
                     + ("" if p["status"] == "optimal" else f"  {p['status']}"))
    if service:
        first = next(p for p in points if isinstance(p.get("rmse_true"), float) and math.isfinite(p["rmse_true"]))
        lines.append(f"recommender on held-out users (hidden ratings): true rows RMSE {_fmt(first['rmse_true'])} "
                     f"NDCG@10 {_fmt(first['ndcg_at_k_true'])}; no row RMSE {_fmt(first['rmse_nothing'])} "
                     f"NDCG@10 {_fmt(first['ndcg_at_k_nothing'])}; kept = (RMSE no row - RMSE) / "
                     "(RMSE no row - RMSE true rows)")
        lines.append(f"top-10 lists of unseen items: recall@10 of EASE on the true rows "
                     f"{_fmt(first.get('ranking_recall_true'))}, of popularity {_fmt(first.get('ranking_recall_popularity'))}; "
                     "ranked = (recall@10 - popularity's) / (true rows' - popularity's)")
    return "\n".join(lines)


def json_points(points: Sequence[dict]) -> list[dict]:
    """Points without the solved tables, NaN as None (strict JSON)."""
    header = point_columns(points)
    out = []
    for p in points:
        out.append({c: (None if isinstance(p.get(c), float) and not math.isfinite(p[c]) else p.get(c))
                    for c in header})
    return out
