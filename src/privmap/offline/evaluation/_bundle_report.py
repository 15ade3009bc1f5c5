"""A seed-000 bundle (quantized or exact) measured on labelled rows.

What ``privmap evaluate`` prints and what the notebook API returns
(:func:`privmap.offline.api.evaluate`).

:func:`evaluate_table_bundle` loads the rows with the bundle's features (a numeric feature's
missing token read as a missing answer, as the device does; private codes in the bundle's class
order), measures leakage, distortion and the attackers
(:func:`privmap.offline.mechanisms.table.evaluate_view`; for a joint bundle, each private column
alone too), the baselines a bundle must beat (:mod:`._baselines`), and puts the bundle's own
declared leakages beside them (each column's, and the per-output epsilon of each class).
"""
from __future__ import annotations

import pathlib
from collections.abc import Sequence

from .._errors import BuildError
from .._joint import COLUMN_FIGURES, by_column, marginal_prior, payload_columns, split_private
from .._listing import name_some
from ..bundle import payload_output_leakage, payload_table
from ..data import load_dataset
from ..measures import drift_check, format_drift
from ..mechanisms import view_of
from ..mechanisms.table import evaluate_view, format_summary
from ._baselines import bundle_baselines, format_baselines

__all__ = ["evaluate_table_bundle", "format_table_report", "load_for", "declared", "format_declared"]


def evaluate_table_bundle(payload: dict, data, private: str | Sequence[str], *, seed: int = 0, test_fraction: float = 0.3,
                          permutations: int = 20, attacker: bool = True, recommender: bool | None = None) -> dict:
    """The evaluation of a quantized or exact ``payload`` on the labelled CSV ``data`` (a path).

    Returns a dict: ``data_sha256``, the measured summary of :func:`privmap.offline.mechanisms.table.evaluate_view`
    (``leakage_bits``, ``distortion``, ``attacker``, ``recommender`` when measured, ...),
    ``declared`` (the bundle's own leakages, :func:`declared`), ``baselines``
    (:func:`._baselines.bundle_baselines`) and ``drift`` (whether the rows' prior lies in the
    bundle's confidence set, :func:`privmap.offline.measures.drift_check`).

    ``recommender``: True measures the service's recommender figures (:func:`privmap.offline.measures.recommender_utility`),
    False skips them, None (default) measures them when the rows are ratings with blank cells
    (a numeric bundle, DATA with a missing answer), and then records why in
    ``recommender_note`` instead of failing when they cannot be measured.

    Raises
    ------
    BuildError
        Unreadable data, a missing feature or private column, private values the bundle does not
        know, or recommender figures asked for (True) that cannot be measured.
    """
    view = view_of(payload)
    ds, codes = load_for(data, private, payload, bool(view.categorical))     # resolved by MappingView
    result = evaluate_view(view, ds.public, codes, seed=seed, test_fraction=test_fraction,
                           permutations=permutations, attacker=attacker, recommender=recommender)
    base = bundle_baselines(view, ds.public, codes, seed=seed, test_fraction=test_fraction, attacker=attacker)
    drift = _drift(payload, view, ds.public, codes, result.summary["leakage_bias_bits"], seed)
    return {"data_sha256": ds.sha256, **result.summary, "declared": declared(payload), "baselines": base,
            "drift": drift}


def _drift(payload, view, public, codes, bias_bits, seed) -> dict:
    """The drift check of the rows against the bundle's confidence set (:func:`privmap.offline.measures.drift_check`)."""
    import numpy as np

    symbols = view.lookup(public)
    matched = symbols >= 0
    metrics = payload["metrics"]
    return drift_check(payload["prior"], int(metrics.get("n", 0)), view.q, symbols[matched],
                       np.asarray(codes)[matched], confidence=metrics.get("robust_confidence"),
                       leakage_bias_bits=bias_bits, declared_robust_bits=metrics.get("robust_leakage_bits"),
                       seed=seed)


def format_table_report(report: dict) -> str:
    """The text ``privmap evaluate`` prints for :func:`evaluate_table_bundle`'s dict."""
    lines = [format_summary(report), format_declared(report["declared"]), format_drift(report["drift"])]
    if report["baselines"] is not None:
        auc = report.get("attacker", {}).get("after", {}).get("roc_auc")
        lines += ["", format_baselines(report["baselines"], report["distortion"], auc)]
    return "\n".join(lines)


def declared(payload: dict) -> dict:
    """The bundle's declared leakages (seed 000's table mechanisms), with its per-output epsilon.

    The per-output epsilon is in bits on the training prior (``max_output_leakage_bits``,
    declared or computed from the payload as ``inspect`` does; None when unbounded), with where
    that figure comes from (``max_output_leakage_note``).
    """
    metrics = payload["metrics"]
    epsilon, note = payload_output_leakage(payload)
    out = {**{key: metrics.get(key) for key in (
        "leakage_bits", "holdout_leakage_bits", "holdout_leakage_low_bits", "holdout_leakage_high_bits",
        "mismatch_leakage_bound_bits", "mismatch_bound_vacuous", "robust_leakage_bits", "robust_confidence",
        "robust_max_output_leakage_bits")},
        "max_output_leakage_bits": epsilon, "max_output_leakage_note": note,
        **_epsilon_by_class(payload)}
    columns = payload_columns(payload)
    if columns is not None:
        out["private_columns"] = list(columns.names)
        out.update({f"{figure}_by_column": by_column(metrics, figure, columns.names) for figure in COLUMN_FIGURES})
    return out


def _epsilon_by_class(payload: dict) -> dict:
    """The per-output epsilon of each class on the bundle's prior.

    The max over outputs of positive mass of |log2 p(a | c^) - log2 p(a)| in bits (None where an
    output rules the class out), as ``max_output_leakage_by_class_bits`` (class -> bits); with
    several private columns also each column's (its marginal prior),
    ``max_output_leakage_by_column_bits``. Empty without a prior.
    """
    if payload.get("prior") is None or payload.get("table") is None:
        return {}
    import numpy as np

    from .._information import output_posterior_ratios

    q = payload_table(payload)
    p_ac = np.asarray(payload["prior"], dtype=float)
    p_ac = p_ac / p_ac.sum()

    def worst(prior) -> list:
        ratios, _ = output_posterior_ratios(prior, q)
        by_class = np.abs(ratios).max(axis=1) if ratios.size else np.zeros(prior.shape[0])
        return [float(e) if np.isfinite(e) else None for e in by_class]

    out: dict = {"max_output_leakage_by_class_bits": dict(zip(payload["private"]["classes"], worst(p_ac)))}
    columns = payload_columns(payload)
    if columns is not None:
        out["max_output_leakage_by_column_bits"] = {}
        for i, name in enumerate(columns.names):
            each = worst(marginal_prior(p_ac, columns, i))
            finite = [e for e in each if e is not None]
            out["max_output_leakage_by_column_bits"][name] = max(finite) if len(finite) == len(each) else None
    return out


def format_declared(declared: dict) -> str:
    """The bundle's own leakage claims: in-sample, cross-fitted, Theorem 1's bound and the per-output epsilon."""
    line = f"declared by the bundle: in-sample leakage {declared['leakage_bits']:.6f} bits"
    if declared["holdout_leakage_bits"] is not None:
        line += (f"; new users (cross-fitted) {declared['holdout_leakage_bits']:.6f} bits "
                 f"[{declared['holdout_leakage_low_bits']:.6f}, {declared['holdout_leakage_high_bits']:.6f}]")
    if declared["mismatch_bound_vacuous"] is not None:
        bound = declared["mismatch_leakage_bound_bits"]
        line += "; Theorem 1 bound " + ("vacuous" if declared["mismatch_bound_vacuous"] else f"{bound:.6f} bits")
    if "max_output_leakage_note" in declared:
        epsilon = declared["max_output_leakage_bits"]
        line += ("; per-output epsilon " + (f"{epsilon:.6f} bits" if epsilon is not None else "-")
                 + f" ({declared['max_output_leakage_note']})")
    lines = [line]
    by_class = declared.get("max_output_leakage_by_class_bits")
    if by_class:
        lines.append("  per-output epsilon by class (bundle's prior): " + ", ".join(
            f"{c} {'-' if e is None else format(e, '.4f')}" for c, e in by_class.items()))
    for name in declared.get("private_columns", ()):
        figure = {f: (declared.get(f"{f}_by_column") or {}).get(name) for f in COLUMN_FIGURES}
        epsilon = (declared.get("max_output_leakage_by_column_bits") or {}).get(name)
        text = f"  column {name!r} alone: in-sample {figure['leakage_bits']:.6f} bits"
        if figure["holdout_leakage_bits"] is not None:
            text += (f", new users {figure['holdout_leakage_bits']:.6f} "
                     f"[{figure['holdout_leakage_low_bits']:.6f}, {figure['holdout_leakage_high_bits']:.6f}]")
        lines.append(text + ", per-output epsilon " + ("-" if epsilon is None else f"{epsilon:.4f}") + " bits")
    return "\n".join(lines)


def load_for(data: pathlib.Path, private, payload: dict, categorical: bool):
    """Load DATA with the bundle's features, private codes in the bundle's class order.

    Each numeric feature's missing token is read as a missing answer, as the device does.
    ``private`` is the private column, or several (a sequence, or comma-separated text) for a
    joint bundle: they must be the bundle's own private columns, in its order.

    Raises
    ------
    BuildError
        As :func:`privmap.offline.data.load_dataset`; private values the bundle does not know;
        private columns other than the bundle's.
    """
    import numpy as np

    model = payload.get("model")
    if model is not None:       # a recommender bundle: rows are its rating columns
        features = list(model["columns"])
        tokens = {name: model["missing_token"] for name in features} if model["missing_token"] else {}
    else:
        features = [f["name"] for f in payload["features"]]
        tokens = {f["name"]: f["missing_token"] for f in payload["features"] if f.get("missing_token")}
    classes = payload["private"]["classes"]
    columns = payload_columns(payload)
    whole = isinstance(private, str) and columns is None and private == payload["private"]["name"]
    names = (private,) if whole else split_private(private)
    if columns is not None and names != columns.names:
        raise BuildError(f"the bundle protects the private columns {', '.join(columns.names)} together: give "
                         f"--private {','.join(columns.names)}")
    if columns is None and len(names) > 1:
        raise BuildError(f"the bundle protects one private column ({payload['private']['name']!r}), not "
                         f"{', '.join(names)} together")
    ds = load_dataset(data, private=names, public=features, categorical=categorical, missing_tokens=tokens)
    order = {c: i for i, c in enumerate(classes)}
    unknown = [c for c in ds.classes if c not in order]
    if unknown:
        raise BuildError(f"{data}: private value(s) {name_some(unknown)} of column {name_some([ds.private_name])} "
                         f"are not among the bundle's classes {name_some(classes)}")
    codes = np.array([order[c] for c in ds.classes], dtype=np.int64)[ds.private]
    return ds, codes
