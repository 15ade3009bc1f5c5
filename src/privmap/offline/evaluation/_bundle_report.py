"""A seed-000 bundle (quantized or exact) measured on labelled rows: what ``privmap evaluate`` prints
and what the notebook API returns (:func:`privmap.offline.api.evaluate`).

:func:`evaluate_table_bundle` loads the rows with the bundle's features (a numeric feature's
missing token read as a missing answer, as the device does; private codes in the bundle's class
order), measures leakage, distortion and the attackers (:func:`privmap.offline.mechanisms.quantized.evaluate_view`), the baselines a bundle
must beat (:mod:`._baselines`), and puts the bundle's own declared leakages beside them.
"""
from __future__ import annotations

import pathlib

from .._errors import BuildError
from .._listing import name_some
from ..bundle import payload_output_leakage
from ..data import load_dataset
from ..measures import drift_check, format_drift
from ..mechanisms import view_of
from ..mechanisms.quantized import evaluate_view, format_summary
from ._baselines import bundle_baselines, format_baselines

__all__ = ["evaluate_table_bundle", "format_table_report", "load_for", "declared", "format_declared"]


def evaluate_table_bundle(payload: dict, data, private: str, *, seed: int = 0, test_fraction: float = 0.3,
                          permutations: int = 20, attacker: bool = True, recommender: bool | None = None) -> dict:
    """The evaluation of a quantized or exact ``payload`` on the labelled CSV ``data`` (a path).

    Returns a dict: ``data_sha256``, the measured summary of :func:`privmap.offline.mechanisms.quantized.evaluate_view`
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
    ds, codes = load_for(data, private, payload, view.categorical)
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
    """The bundle's declared leakages (seed 000's table mechanisms), with its per-output epsilon in
    bits on the training prior (``max_output_leakage_bits``, declared or computed from the payload as
    ``inspect`` does; None when unbounded) and where that figure comes from
    (``max_output_leakage_note``)."""
    metrics = payload["metrics"]
    epsilon, note = payload_output_leakage(payload)
    return {**{key: metrics.get(key) for key in (
        "leakage_bits", "holdout_leakage_bits", "holdout_leakage_low_bits", "holdout_leakage_high_bits",
        "mismatch_leakage_bound_bits", "mismatch_bound_vacuous", "robust_leakage_bits", "robust_confidence",
        "robust_max_output_leakage_bits")},
        "max_output_leakage_bits": epsilon, "max_output_leakage_note": note}


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
    return line


def load_for(data: pathlib.Path, private: str, payload: dict, categorical: bool):
    """Load DATA with the bundle's features (each numeric one's missing token read as a missing
    answer, as the device does), private codes in the bundle's class order."""
    import numpy as np

    model = payload.get("model")
    if model is not None:       # a recommender bundle: rows are its rating columns
        features = list(model["columns"])
        tokens = {name: model["missing_token"] for name in features} if model["missing_token"] else {}
    else:
        features = [f["name"] for f in payload["features"]]
        tokens = {f["name"]: f["missing_token"] for f in payload["features"] if f.get("missing_token")}
    classes = payload["private"]["classes"]
    ds = load_dataset(data, private=private, public=features, categorical=categorical, missing_tokens=tokens)
    order = {c: i for i, c in enumerate(classes)}
    unknown = [c for c in ds.classes if c not in order]
    if unknown:
        raise BuildError(f"{data}: private value(s) {name_some(unknown)} of column {name_some([private])} "
                         f"are not among the bundle's classes {name_some(classes)}")
    codes = np.array([order[c] for c in ds.classes], dtype=np.int64)[ds.private]
    return ds, codes
