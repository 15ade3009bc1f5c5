"""A bundle audited from outside: what a service and an attacker get from its releases of new users.

``privmap evaluate B DATA.csv --train TRAIN.csv`` follows the protocol of ``SERVICE.md`` with the
operator's training users (TRAIN) and the evaluated users (DATA) as the new ones:

- each evaluated user has 10 % of their rated cells hidden (:func:`privmap.offline.measures.hide_ratings`,
  seeded) and releases one simulated draw from the rest (the bundle's view, as the device does);
  each training user releases from their whole row;
- the service (:class:`privmap.offline.measures.ServiceUtility`) is trained on the training users'
  true rows plus the evaluated users' released rows: value kept by rating error and by ranking
  (recall@10, NDCG@10), beside the evaluated users' true rows, nothing, popularity and k-means alone
  (no privacy) at the bundle's K fitted on the training users' rows;
- the protocol is run ``repeats`` times, each with fresh hidden cells, release draws and service
  initialisation: the service's figures are the runs' means, and value kept (by rating error and
  by ranking) carries the 95 % prediction interval of one more run (mean +- t sd sqrt(1 + 1/R),
  Student's t on R - 1 degrees of freedom), where an outside service running the same protocol
  on the same users lands. Where the true rows barely beat nothing the interval is wide: that
  is what the users' ratings can tell, not noise to hide;
- the three attackers (:mod:`privmap.offline._strongest`) are trained on the training users'
  released rows and scored on the evaluated users': each one's AUC with its 95 % interval
  (DeLong's), the strongest named;
- exposure (:func:`._exposure.users_exposure`): the share of evaluated users whose release raises
  the posterior odds of their own class more than 2x (and 4x), from their visible rows, under the
  posterior an attacker holding the bundle computes (its prior and table), expected over releases;
- overlap: DATA rows that are rows of the bundle's training data make in-sample figures. The
  bundle declares its training file's ``data_sha256``: DATA with that digest is that file, and
  TRAIN with it lets each DATA row be compared (public cells, blanks equal, and private value;
  each training row matches one DATA row at most; where TRAIN repeats rows itself, as few coarse
  columns do, equal rows need not be the same users, and the note says so). The report leads with
  what it found.
"""
from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from .._errors import BuildError
from .._rows import unique_rows
from .._strongest import ATTACKERS, strongest_attack
from ..measures import ServiceUtility
from ..mechanisms import view_of
from ..mechanisms.table import rated_figures, view_release
from ._baselines import quantization_alone
from ._bundle_report import load_for
from ._exposure import users_exposure

__all__ = ["audit_bundle", "format_audit"]

#: Two-sided confidence of the attackers' and value kept's intervals.
CONFIDENCE = 0.95
#: Runs of the service protocol behind value kept's interval (module docstring).
REPEATS = 5


class _ServiceSVD(TypedDict):
    """The keyword arguments of :class:`~privmap.offline.measures.ServiceUtility` that fix its SVD."""

    factors: int
    epochs: int
    regularisation: float


#: The service's SVD as SERVICE.md fixes it (learning rate 0.005: surprise's default).
SERVICE_SVD: _ServiceSVD = {"factors": 50, "epochs": 40, "regularisation": 0.05}


def audit_bundle(payload: dict, data: pathlib.Path, train: pathlib.Path, private, *, seed: int = 0,
                 repeats: int = REPEATS) -> dict:
    """The audit of ``payload`` (module docstring) on the evaluated users of ``data``.

    With the training users of ``train`` (CSV paths, read with the bundle's features and private
    column), the service protocol run ``repeats`` times (>= 1; the attackers and exposure on the
    first run).

    Returns
    -------
    dict
        ``mechanism``, ``metric`` and ``clusters`` as the bundle declares them; ``overlap``
        (:func:`_overlap`); ``value_kept`` and ``ranking_value_kept``, the runs' means (None where
        in some run the true rows do not beat nothing, or popularity; ``value_kept`` None too for a
        bundle that releases scores: :func:`~privmap.offline.mechanisms.table.rated_figures`),
        each with its ``_interval`` (95 % prediction interval of one more run, None below two runs
        or where the figure is None) and ``_runs`` (each run's); ``repeats``; ``service`` (the
        release's full figures, each number the runs' mean,
        :meth:`~privmap.offline.measures.ServiceUtility.measure`); ``baselines`` (``true rows``,
        ``nothing``, ``popularity``, ``k-means alone``, ``bundle``: ``rmse``, ``value_kept``,
        ``recall_at_10``, ``ndcg_at_10``, ``ranking_value_kept``, runs' means); ``attacker_auc``
        (the strongest's), ``attacker_auc_interval``, ``attacker`` (its name) and ``attackers``
        (each one's ``auc`` and ``interval``); ``attacker_auc_before`` and ``attacker_before``: the
        strongest of the same three on the true rows (trained on the training users' true rows,
        scored on the evaluated users' visible rows), what the release takes away; ``exposed_2x``
        and ``exposed_4x``; ``users`` (training, evaluated).

    Raises
    ------
    BuildError
        A bundle without numeric rows, files that cannot be read with the bundle's columns, or
        rows the service cannot measure (no evaluated user with two ratings).
    ValueError
        ``repeats`` below 1.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    view = view_of(payload)
    if view.categorical:
        raise BuildError("evaluate --train audits bundles that release numeric rows, not categories")
    tested, y_test = load_for(data, private, payload, False)
    trained, y_train = load_for(train, private, payload, False)
    R_test, R_train = np.asarray(tested.public, float), np.asarray(trained.public, float)
    n_classes = len(payload["private"]["classes"])
    overlap = _overlap(payload, tested, trained, R_test, y_test, R_train, y_train)
    clusters = int(payload["metrics"]["clusters"])
    runs = [_service_run(view, R_train, R_test, clusters, payload["metric"], seed, r) for r in range(repeats)]
    first = runs[0]
    attack = strongest_attack(first.released_train, y_train, first.released_test, y_test, n_classes, seed=seed)
    before = strongest_attack(R_train, y_train, first.visible, y_test, n_classes, seed=seed)
    z = _z()
    attackers = {name: {"auc": auc, "interval": [max(0.0, auc - z * se), min(1.0, auc + z * se)]}
                 for name, (auc, se) in attack.aucs.items()}
    exposure = {key: value for key, value in users_exposure(view, first.visible, y_test).items()
                if key.startswith("exposed_")}
    baselines = _mean_figures([run.baselines for run in runs])
    kept = {}
    for key in ("value_kept", "ranking_value_kept"):
        values = [run.baselines["bundle"][key] for run in runs]
        kept.update({key: baselines["bundle"][key], f"{key}_interval": _prediction_interval(values),
                     f"{key}_runs": values})
    return {"mechanism": payload["mechanism"], "metric": payload["metric"], "clusters": clusters,
            "overlap": overlap, "users": {"training": int(R_train.shape[0]), "evaluated": int(R_test.shape[0])},
            **kept, "repeats": repeats,
            "attacker_auc": attack.auc, "attacker_auc_interval": attackers[attack.strongest]["interval"],
            "attacker_auc_before": before.auc, "attacker_before": before.strongest,
            "attacker": attack.strongest, "attackers": attackers, **exposure,
            "baselines": baselines, "service": _mean_figures([run.measured for run in runs])}


@dataclass(frozen=True)
class _Run:
    """One run of the service protocol.

    The evaluated users' ``visible`` rows (n_test, m), both groups' released rows, the service's
    ``measured`` figures and the ``baselines`` table.
    """

    visible: np.ndarray
    released_test: np.ndarray
    released_train: np.ndarray
    measured: dict
    baselines: dict


def _service_run(view, R_train: np.ndarray, R_test: np.ndarray, clusters: int, metric: str, seed: int,
                 run: int) -> _Run:
    """Run ``run`` of the protocol, with its own hidden cells, service initialisation and release draws.

    Run 0's hidden cells and service initialisation are seeded by ``seed`` itself.
    """
    service_seed = seed if run == 0 else int(np.random.SeedSequence([seed, run]).generate_state(1)[0])
    try:
        service = ServiceUtility(R_train, R_test, seed=service_seed, **SERVICE_SVD)
    except ValueError as exc:
        raise BuildError(f"evaluate --train: {exc}") from None
    release = view_release(view, np.random.default_rng([seed, 1] if run == 0 else [seed, 1, run]))
    released_test, released_train = release(service.visible.copy()), release(R_train)
    measured = rated_figures(view, service.measure(released_test))
    kmeans, used, _ = quantization_alone(R_train, service.visible, clusters, metric, seed=seed)
    return _Run(service.visible, released_test, released_train, measured,
                _baselines(service, measured, service.measure(kmeans), used))


def _mean_figures(runs: list[dict]) -> dict:
    """The runs' figures with each float the runs' mean.

    The runs' figures are dicts of one shape, nested. A float is None where some run has None;
    other values (counts, names) are the first run's.
    """
    first = runs[0]
    out: dict = {}
    for key, value in first.items():
        values = [run[key] for run in runs]
        if isinstance(value, dict):
            out[key] = _mean_figures(values)
        elif any(isinstance(v, float) for v in values) and all(isinstance(v, (int, float)) for v in values):
            out[key] = float(np.mean([float(v) for v in values]))
        elif any(isinstance(v, float) for v in values):
            out[key] = None
        else:
            out[key] = value
    return out


def _prediction_interval(values: list) -> list | None:
    """The 95 % interval where one more run's figure lands, from ``values`` (one per run).

    Mean +- t sd sqrt(1 + 1/R); None below two runs or where a run has no figure.
    """
    if len(values) < 2 or any(v is None for v in values):
        return None
    from scipy.stats import t
    mean, sd, R = float(np.mean(values)), float(np.std(values, ddof=1)), len(values)
    half = float(t.ppf(0.5 + CONFIDENCE / 2.0, R - 1)) * sd * math.sqrt(1.0 + 1.0 / R)
    return [mean - half, mean + half]


def _z() -> float:
    from scipy.stats import norm
    return float(norm.ppf(0.5 + CONFIDENCE / 2.0))


def _baselines(service: ServiceUtility, measured: dict, kmeans: dict, used: int) -> dict:
    """The releases beside the bundle's, each with its figures.

    Each as ``rmse``, ``value_kept``, ``recall_at_10``, ``ndcg_at_10`` and
    ``ranking_value_kept`` (None where a figure does not apply).
    """
    def row(rmse, kept, recall, ndcg, ranking) -> dict:
        return {"rmse": rmse, "value_kept": kept, "recall_at_10": recall, "ndcg_at_10": ndcg,
                "ranking_value_kept": ranking}
    b = service.baseline
    return {"true rows": row(b["rmse_true"], 1.0, measured["ranking_recall_true"], measured["ranking_ndcg_true"], 1.0),
            "nothing": row(b["rmse_nothing"], 0.0, None, None, None),
            "popularity": row(None, None, measured["ranking_recall_popularity"],
                              measured["ranking_ndcg_popularity"], 0.0),
            "k-means alone": {**row(kmeans["rmse_released"], kmeans["value_kept"], kmeans["ranking_recall_released"],
                                    kmeans["ranking_ndcg_released"], kmeans["ranking_value_kept"]), "clusters": used},
            "bundle": row(measured["rmse_released"], measured["value_kept"], measured["ranking_recall_released"],
                          measured["ranking_ndcg_released"], measured["ranking_value_kept"])}


def _overlap(payload, tested, trained, R_test, y_test, R_train, y_train) -> dict:
    """What DATA shares with the bundle's training data (module docstring).

    ``data_is_training_file``, ``train_is_training_file`` (digests equal to the bundle's
    ``data_sha256``), ``rows`` (DATA rows equal to training rows; None when neither file is the
    bundle's training file), ``of`` (DATA's rows) and ``note`` (the line the report leads with,
    None when there is nothing to say).
    """
    declared = payload["provenance"].get("data_sha256")
    data_is, train_is = tested.sha256 == declared, trained.sha256 == declared
    rows = int(R_test.shape[0]) if data_is else (_shared_rows(R_test, y_test, R_train, y_train) if train_is else None)
    note = None
    if data_is:
        note = "DATA is the bundle's own training file: every figure below is in-sample, not a new user's"
    elif rows and _repeats(R_train, y_train):
        note = (f"{rows} of {R_test.shape[0]} rows of DATA equal rows of the bundle's training data (TRAIN is that "
                "file); TRAIN repeats rows itself, so equal rows need not be the same users")
    elif rows:
        note = (f"{rows} of {R_test.shape[0]} rows of DATA equal rows of the bundle's training data (TRAIN is that "
                "file): their figures are in-sample, not new users'")
    elif not train_is:
        note = ("TRAIN is not the bundle's training file (its sha256 differs from the bundle's data_sha256): "
                "whether DATA's users were among the bundle's training users cannot be checked")
    return {"data_is_training_file": data_is, "train_is_training_file": train_is, "rows": rows,
            "of": int(R_test.shape[0]), "note": note}


def _repeats(R, y) -> bool:
    """Whether some row (public cells, blanks equal, and private code) occurs twice in ``R``.

    Such rows are users whose answers coincide, whom equal rows cannot tell apart.
    """
    keyed = np.where(np.isnan(R), np.inf, R)
    return unique_rows(np.column_stack([keyed, y]))[0].shape[0] < R.shape[0]


def _shared_rows(R_test, y_test, R_train, y_train) -> int:
    """DATA rows equal to a training row (public cells with blanks equal, and private code).

    Each training row matches at most one: the sum over distinct rows of the smaller count.
    """
    keyed = np.vstack([np.column_stack([R_test, y_test]), np.column_stack([R_train, y_train])])
    keyed = np.where(np.isnan(keyed), np.inf, keyed)
    distinct, inverse, _ = unique_rows(keyed, return_inverse=True)
    n = R_test.shape[0]
    in_test = np.bincount(inverse[:n], minlength=distinct.shape[0])
    in_train = np.bincount(inverse[n:], minlength=distinct.shape[0])
    return int(np.minimum(in_test, in_train).sum())


def format_audit(report: dict) -> str:
    """The text ``privmap evaluate --train`` prints: the overlap first when there is one."""
    def f(x, nd=3):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"

    lines = [f"warning: {report['overlap']['note']}"] if report["overlap"]["note"] else []
    users = report["users"]
    lines.append(f"{report['mechanism']} bundle, metric {report['metric']}, K = {report['clusters']}: "
                 f"{users['evaluated']} evaluated users released beside {users['training']} training users' true rows")
    lines.append(f"  {'release':<24}{'RMSE':>8}{'value kept':>12}{'recall@10':>11}{'NDCG@10':>9}{'ranking kept':>14}")
    for name, row in report["baselines"].items():
        label = f"k-means alone, K = {row['clusters']}" if name == "k-means alone" else name
        lines.append(f"  {label:<24}{f(row['rmse'], 4):>8}{f(row['value_kept']):>12}{f(row['recall_at_10']):>11}"
                     f"{f(row['ndcg_at_10']):>9}{f(row['ranking_value_kept']):>14}")
    lines.append(f"  value kept, mean of {report['repeats']} runs of the protocol [95 % where one more run lands]: "
                 f"by rating error {_kept(report, 'value_kept', f)}, by ranking {_kept(report, 'ranking_value_kept', f)}")
    lines.append("  attackers trained on the training users' releases, AUC on the evaluated users' (95 %): " + ", ".join(
        f"{name} {f(a['auc'])} [{f(a['interval'][0])}, {f(a['interval'][1])}]"
        for name, a in ((n, report["attackers"][n]) for n in ATTACKERS)) + f"; strongest {report['attacker']}")
    lines.append(f"  the strongest attacker on the true rows instead: AUC {f(report['attacker_auc_before'])} "
                 f"({report['attacker_before']})")
    lines.append(f"  exposure: {100 * report['exposed_2x']:.1f} % of evaluated users have their own class's odds "
                 f"raised more than 2x ({100 * report['exposed_4x']:.1f} % more than 4x)")
    return "\n".join(lines)


def _kept(report: dict, key: str, f) -> str:
    """A value kept and its interval as text; why there is none where a run has no figure."""
    runs = report[f"{key}_runs"]
    if key == "value_kept" and report["baselines"]["bundle"]["rmse"] is None:
        return "- (the bundle releases scores, not ratings)"
    if report[key] is None and any(v is None for v in runs):
        missing = sum(v is None for v in runs)
        return f"- (in {missing} of {len(runs)} runs the true rows did not beat the baseline)"
    interval = report[f"{key}_interval"]
    return f(report[key]) + ("" if interval is None else f" [{f(interval[0])}, {f(interval[1])}]")
