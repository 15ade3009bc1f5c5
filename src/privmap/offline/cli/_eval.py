"""The evaluation suite's commands, ``privmap evaluate`` and ``privmap curve``.

Both print a human table by default and one JSON object with ``--json``;
progress bars go to stderr. Every failure prints one line ``error: ...`` and
exits with status 1 (2 for usage errors, as click does).
"""
from __future__ import annotations

import pathlib
import sys

import click

from .. import _routed
from .._errors import BuildError
from .._joint import split_private
from ..commandline import data_options, emit, guard, parse_floats, parse_ints
from ..mechanisms import MECHANISMS, Mechanism, mechanism_of


def _read_payload(bundle: pathlib.Path, trusted) -> tuple[dict, bool]:
    """The bundle's decoded payload, and whether its signature was verified (with ``trusted`` keys)."""
    from ..bundle import read_bytes, read_unverified
    if trusted:
        from privmap.device import Keyring, read_bundle_file
        return read_unverified(read_bundle_file(bundle, Keyring.from_pem_files(*trusted)).data)[0], True
    return read_unverified(read_bytes(bundle))[0], False


@click.command()
@click.argument("bundle", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.argument("data", metavar="DATA.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("--private", "private", required=True, metavar="COL",
              help="Private attribute column of DATA; a joint bundle's columns, comma-separated.")
@click.option("--trusted", multiple=True, type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Verify the bundle with this public key first (otherwise it is read UNVERIFIED).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the train/test split, simulated releases and permutations.")
@click.option("--test-fraction", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.3,
              show_default=True, help="Share of rows held out to test the logistic-regression attacker.")
@click.option("--permutations", type=click.IntRange(min=1), default=20, show_default=True,
              help="Permutations of the private column for the plug-in bias.")
@click.option("--no-attacker", is_flag=True, help="Skip the logistic-regression attacker.")
@click.option("--recommender/--no-recommender", "recommender", default=None,
              help="Measure (or skip) the recommender figures on the held-out rows [default: measure them "
                   "when DATA's public columns have blank cells].")
@click.option("--train", "train", type=click.Path(dir_okay=False, path_type=pathlib.Path), default=None,
              metavar="TRAIN.csv",
              help="Audit as an outside service would: the operator's training users' rows, beside which DATA's "
                   "users are the new ones (bundles that release numeric rows; see below).")
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True,
              help="With --train: runs of the service protocol behind value kept's interval.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guard
def evaluate(bundle, data, private, trusted, seed, test_fraction, permutations, no_attacker, recommender, train,
             repeats, as_json):
    """Measure BUNDLE on the labelled rows of DATA.csv.

    \b
    Leakage: exact I(A; C^) in bits on DATA's empirical prior, and its plug-in
      bias (mean leakage after permuting the private column).
    Distortion: measured on DATA's raw rows, and Theorem 2's bound Delta + r.
    Attacks, before and after the mapping: the MAP adversary who knows the
      mapping, and a logistic-regression adversary trained on sanitized training
      rows and tested on sanitized held-out rows (accuracy, balanced accuracy,
      ROC AUC); it chooses its regularisation C by inner cross-validation.
    Recommender (bundles releasing ratings; --recommender, or DATA with blanks):
      10% of each held-out user's ratings hidden, the device releases a row
      from the rest; scikit-surprise's SVD (50 factors) trained on the training
      users' true ratings plus each held-out row as true, as released, or
      absent predicts the hidden ratings: RMSE of each, value kept =
      (RMSE none - RMSE released) / (RMSE none - RMSE true), NDCG@10 over the
      hidden items, recall@10 among the items not rated. JSON: "recommender".
    Funnel bundles (seed 003): I(S;Y) and I(S;X), disclosure I(X;Y) and the
      log-loss distortion H(X|Y) on DATA, all in bits, and the same attackers.
    Max-correlation bundles (seed 002): beside seed 000's mapping at the same
      distortion, on DATA's labels.
    Real-valued bundles (nullspace, gaussian): --private names the withheld
      column to attack; prints the attacker's AUC (binary) or R^2 on raw rows,
      the raw-data predictor on released rows, and a predictor retrained on
      released rows.
    With --train TRAIN.csv (the outside auditor): 10% of each DATA user's
      ratings hidden, the rest released; the service trained on TRAIN's true
      rows plus DATA's released rows: value kept by rating error and by ranking
      (recall@10, NDCG@10) beside true rows, nothing, popularity and k-means
      alone at the bundle's K; the Bayes attacker over the released rows,
      gradient boosting and logistic regression trained on TRAIN's releases,
      AUC on DATA's with 95% intervals; the share of DATA's users whose release
      raises their own class's odds more than 2x (4x). A DATA file that overlaps
      the bundle's training users is said so first. The protocol runs
      --repeats times (fresh hidden cells, draws and service start): value kept
      is the runs' mean with the 95% interval where one more run lands. JSON:
      value_kept, ranking_value_kept (and _interval), attacker_auc (the
      strongest), exposed_2x.
    """  # noqa: D301 - click's no-rewrap marker \b must stay a backspace, which a raw string would not make
    payload, verified = _read_payload(bundle, trusted)
    mechanism = payload["mechanism"]
    record = mechanism_of(mechanism)
    if train is None and recommender and record is not None and not record.ratings:
        raise BuildError(f"--recommender measures bundles that release ratings, not {mechanism} bundles")
    # The attackers and the service's models may warn once per fit (a logistic attacker that does
    # not converge on a thousand columns): every warning is recorded and told in one line after.
    _routed.clear()
    with _routed.caught() as records:
        if train is not None:
            _evaluate_audit(payload, bundle, data, train, private, verified, seed, repeats, as_json)
        elif record is not None and record.report is not None:
            _evaluate_real(record, payload, bundle, data, private, verified, seed, test_fraction, as_json)
        elif record is not None and not record.private:  # no private attribute in the bundle
            _evaluate_max_correlation(payload, bundle, data, private, verified, as_json)
        elif record is not None and record.disclosure:
            _evaluate_funnel(payload, bundle, data, private, verified, seed, test_fraction, permutations,
                             not no_attacker, as_json)
        else:
            _evaluate_table(payload, bundle, data, private, verified, seed, test_fraction, permutations,
                            not no_attacker, as_json, recommender if record is None or record.ratings else False)
    _routed.route(records)
    routed = _routed.summary(source="the measurement's models")
    if routed is not None:
        click.echo(routed, err=True)


def _evaluate_real(record: Mechanism, payload, bundle, data, target, verified, seed, test_fraction,
                   as_json) -> None:
    """``evaluate`` for a real-valued bundle.

    Its kind's view (``record.report``) attacks ``target`` on DATA's held-out rows.
    """
    assert record.report is not None
    result = {"bundle": str(bundle), "data": str(data), "signature_verified": verified,
              **record.report.evaluate_release(payload, data, target, seed=seed, test_fraction=test_fraction)}
    if as_json:
        emit(result)
        return
    click.echo(f"{bundle} on {data}" + _unverified_note(verified))
    click.echo(f"  attacker on {target!r} ({result['measure']}, held-out {test_fraction:.0%}): "
               f"raw {result['raw']:.4f}, fixed predictor on released {result['fixed']:.4f}, "
               f"retrained on released {result['retrained']:.4f}")
    if "declared_leakage_bits" in result:
        click.echo(f"  Gaussian model: I(X_p;Y) {result['declared_leakage_bits']:.4f} bits "
                   f"(before {result['declared_leakage_before_bits']:.4f})")


def _evaluate_audit(payload, bundle, data, train, private, verified, seed, repeats, as_json) -> None:
    """``evaluate --train``: the outside auditor's figures (:func:`privmap.offline.evaluation.audit_bundle`).

    The overlap with the bundle's training users comes first.
    """
    from ..evaluation import audit_bundle, format_audit
    record = mechanism_of(payload["mechanism"])
    if record is not None and not record.ratings:
        raise BuildError(f"--train audits bundles that release numeric rows, not {payload['mechanism']} bundles")
    report = audit_bundle(payload, data, train, private, seed=seed, repeats=repeats)
    if as_json:
        if report["overlap"]["note"]:
            click.echo(f"warning: {report['overlap']['note']}", err=True)
        emit({"bundle": str(bundle), "data": str(data), "train": str(train), "signature_verified": verified, **report})
        return
    click.echo(format_audit(report))
    click.echo(f"  {bundle} on {data} with {train}" + _unverified_note(verified))


def _unverified_note(verified: bool) -> str:
    return "" if verified else " (signature NOT verified: no --trusted key)"


def _evaluate_table(payload, bundle, data, private, verified, seed, test_fraction, permutations, attacker,
                    as_json, recommender=None) -> None:
    """``evaluate`` for seed 000's quantized and exact bundles: the full summary and the baselines.

    The recommender figures come too as ``recommender`` says: True, False or None (= when DATA has
    blank cells); False for a bundle that releases no ratings.
    """
    from ..evaluation import evaluate_table_bundle, format_table_report
    report = evaluate_table_bundle(payload, data, private, seed=seed, test_fraction=test_fraction,
                                   permutations=permutations, attacker=attacker, recommender=recommender)
    if as_json:
        emit({"bundle": str(bundle), "data": str(data), "data_sha256": report.pop("data_sha256"),
              "signature_verified": verified, **report})
        return
    click.echo(f"{bundle} on {data}" + _unverified_note(verified))
    click.echo(format_table_report(report))


def _evaluate_funnel(payload, bundle, data, private, verified, seed, test_fraction, permutations, attacker,
                     as_json) -> None:
    """``evaluate`` for a funnel bundle (seed 003): leakage I(S;Y), disclosure I(X;Y), log-loss distortion."""
    from ..evaluation import load_for
    from ..mechanisms.funnel import evaluate_funnel, format_funnel_evaluation
    ds, codes = load_for(data, private, payload, True)
    result = evaluate_funnel(payload, ds.public, codes, seed=seed, test_fraction=test_fraction,
                             permutations=permutations, attacker=attacker)
    if as_json:
        emit({"bundle": str(bundle), "data": str(data), "data_sha256": ds.sha256, "signature_verified": verified,
              **result})
        return
    click.echo(f"{bundle} on {data}" + _unverified_note(verified))
    click.echo(format_funnel_evaluation(result))


#: ``privmap curve --mechanism``: the mechanisms a curve is drawn for (those it sweeps through program
#: (19), and the funnel's own merging curves).
CURVES = [name for name, record in MECHANISMS.items() if record.sweeps or record.disclosure]


@click.command()
@click.argument("data", metavar="DATA.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("--private", "private", required=True, metavar="COL",
              help="Private column; COL1,COL2: their joint, each column drawn too.")
@click.option("--public", "public", metavar="COLS", help="Comma-separated public columns (default: all others).")
@click.option("--deltas", metavar="LIST",
              help="Distortion budgets: '0,0.5,1' or START:STOP:COUNT (e.g. 0:2:9); not for funnel.")
@click.option("--clusters", "-k", default="16", show_default=True, metavar="LIST",
              help="Numbers of clusters K, comma-separated (quantized); 0 = no quantization.")
@click.option("--mechanism", type=click.Choice(CURVES), default="quantized",
              show_default=True, help="funnel: seed 003's merging curves, I(S;Y) against I(X;Y).")
@click.option("--points", type=click.IntRange(min=2), default=25, show_default=True,
              help="funnel: disclosure floors R (and budgets) per curve.")
@click.option("--metric", type=click.Choice(["l2", "l1", "hamming", "erasures"]), default=None,
              help="Distortion metric [default: l2 for quantized, erasures for exact].")
@click.option("--solver", type=click.Choice(["fast", "cvxpy"]), default="fast", show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--test-fraction", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.3,
              show_default=True, help="Share of rows held out to test the attacker.")
@click.option("--no-attacker", is_flag=True, help="Skip the logistic-regression attacker (no AUC axis).")
@click.option("--recommender/--no-recommender", "recommender", default=None,
              help="Recommender figures [default: if blank cells]")
@click.option("--robust", "robust", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True, metavar="CONFIDENCE",
              help="Confidence of the set of priors of each table's certified worst case (dashed).")
@click.option("--png", type=click.Path(dir_okay=False, path_type=pathlib.Path), default=None,
              help="Plot to write [default: DATA's stem + _curve.png in the current folder].")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=pathlib.Path), default=None,
              help="Points to write [default: DATA's stem + _curve.csv].")
@click.option("--title", default=None, help="Title of the plot.")
@data_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the points.")
@guard
def curve(data, private, public, deltas, clusters, mechanism, points, metric, solver, seed, test_fraction,
          no_attacker, recommender, robust, png, csv_path, title, domains, missing_token, as_json):
    """Sweep Delta (and K) on DATA.csv: a privacy-distortion plot and a CSV of the points.

    \b
    Example (the data read as privmap build reads it, with --domain):
      privmap curve ratings.csv --private gender --domain 1:5 -k 16,64 --deltas 0:1.5:7

    For each (K, Delta) program (19) is solved and the mapping measured on DATA's
    raw rows: leakage, distortion, the attacker's ROC AUC (second axis). Quantized
    points come twice: seed 000's mapping (dotted) and after the build's codebook
    step (solid), beside the constant release and randomized response per
    feature; dashed, each table's certified worst case over the --robust set of
    priors (docs/guarantees.md). Without matplotlib the table is printed.
    Recommender figures: as evaluate --help says (columns rmse_*, value_kept).
    """  # noqa: D301 - click's no-rewrap marker \b must stay a backspace, which a raw string would not make
    import numpy as np

    from ..data import declare, load_dataset, resolve
    from ..evaluation import format_table, json_points, sweep, write_csv
    from ..measures import curve_title, have_matplotlib, plot_curve
    record = MECHANISMS[mechanism]
    if record.disclosure:  # seed 003's curves
        _funnel_curve_command(data, private, public, points, png, csv_path, title, as_json)
        return
    if deltas is None:
        raise BuildError("--deltas is required (except with --mechanism funnel)")
    if recommender and not record.ratings:
        raise BuildError("--recommender measures the quantized mechanism on ratings")
    metric = metric or record.default_metric
    delta_list = parse_floats(deltas, "--deltas")
    k_list = parse_ints(clusters, "--clusters")
    cols = [c.strip() for c in public.split(",")] if public else None
    declared = None
    if domains or missing_token is not None:
        if record.categorical:
            raise BuildError("--domain and --missing-token apply to the quantized mechanism's numeric columns")
        declared = declare(domains=domains, missing_token=missing_token)
    names = split_private(private)
    ds = load_dataset(data, private=names, public=cols, categorical=record.categorical,
                      missing_tokens=declared.missing_tokens() if declared else None)
    ds, dropped = ds.without_all_missing()
    domain = None
    if not record.categorical:
        schema = resolve(ds.features, ds.public, declared)              # values outside a declared domain fail
        domain = tuple(np.array([getattr(c, f) for c in schema], dtype=float) for f in ("integer", "min", "max"))
    if dropped:
        click.echo(f"note: {dropped} row(s) with every public cell missing left out", err=True)
    n_points = len(delta_list) * (len(k_list) if record.quantizes else 1)
    with click.progressbar(length=n_points, label="curve", file=sys.stderr, show_pos=True) as bar:
        points = sweep(ds.public, ds.private, ds.classes, ds.features, deltas=delta_list, clusters=k_list,
                              mechanism=mechanism, metric=metric, seed=seed, solver=solver,
                              attacker=not no_attacker, test_fraction=test_fraction, private_name=ds.private_name,
                              robust=robust, domain=domain, progress=bar.update,
                              recommender=recommender if record.ratings else False, columns=ds.columns)
    base = None
    if record.quantizes:
        from ..evaluation import baselines, format_quantization_alone
        base = baselines(ds.public, ds.private, len(ds.classes), metric, seed=seed, test_fraction=test_fraction,
                         attacker=not no_attacker, clusters=[k for k in k_list if k])
    stem = pathlib.Path(data).stem
    csv_path = csv_path or pathlib.Path(f"{stem}_curve.csv")
    write_csv(points, csv_path)
    png_written = None
    if have_matplotlib():
        png = png or pathlib.Path(f"{stem}_curve.png")
        png_written = plot_curve(points, png, auc=not no_attacker, baselines=base,
                                 title=title or curve_title(stem, names, ds.features),
                                 columns=ds.columns.names if ds.columns is not None else ())
    if as_json:
        emit({"data": str(data), "private": private, "mechanism": mechanism, "metric": metric,
              **({"private_columns": list(ds.columns.names)} if ds.columns is not None else {}),
               "classes": list(ds.classes), "rows": ds.n, "csv": str(csv_path), "png": png_written,
               "robust_confidence": robust,
               "points": json_points(points), "baselines": base})
        return
    click.echo(format_table(points))
    if base is not None:
        click.echo(f"baselines: constant release distortion {base['constant']['distortion']:.4f} at 0 bits; "
                   "randomized response per feature " + ", ".join(
                       f"eps {p['epsilon_per_feature']:g}: distortion {p['distortion']:.4f}"
                       + (f" AUC {p['roc_auc']:.3f}" if p.get("roc_auc") is not None else "")
                       for p in base["randomized_response"]))
        if base.get("quantization_alone"):
            click.echo(format_quantization_alone(base))
    click.echo(f"wrote {csv_path}" + (f" and {png_written}" if png_written else
                                       " (matplotlib not installed: no plot; pip install privmap[plot])"))


def _funnel_curve_command(data, private, public, points, png, csv_path, title, as_json) -> None:
    """``curve --mechanism funnel``: greedy, negligent and MI-optimal curves as CSV + PNG."""
    from .._information import mutual_information_bits
    from ..data import load_dataset
    from ..measures import have_matplotlib
    from ..mechanisms.funnel import entropy_bits, funnel_prior, funnel_sweep, plot_funnel, write_funnel_csv
    cols = [c.strip() for c in public.split(",")] if public else None
    ds = load_dataset(data, private=private, public=cols, categorical=True)
    _, cells, _, p_sx = funnel_prior(ds)
    with click.progressbar(length=2 * points, label="funnel curve", file=sys.stderr, show_pos=True) as bar:
        pts = funnel_sweep(p_sx, cells, points=points, progress=bar.update)
    stem = pathlib.Path(data).stem
    csv_path = csv_path or pathlib.Path(f"{stem}_funnel.csv")
    write_funnel_csv(pts, csv_path)
    h_x, i_sx = entropy_bits(p_sx.sum(axis=0)), mutual_information_bits(p_sx)
    png_written = None
    if have_matplotlib():
        png = png or pathlib.Path(f"{stem}_funnel.png")
        png_written = plot_funnel(
            pts, png, title=title or f"{stem}: S = {private}, X = ({', '.join(ds.features)}), {len(cells)} tuples",
            h_x=h_x, i_sx=i_sx)
    summary = {"data": str(data), "private": private, "features": list(ds.features), "tuples": len(cells),
               "entropy_x_bits": h_x, "leakage_before_bits": i_sx, "csv": str(csv_path), "png": png_written,
               "points": pts}
    if as_json:
        emit(summary)
        return
    for p in pts:
        click.echo(f"  {p['curve']:<10} param {p['parameter']:8.4f}  I(X;Y) {p['disclosure_bits']:.4f}  "
                   f"I(S;Y) {p['leakage_bits']:.6f}  groups {p['groups']}")
    click.echo(f"H(X) = {h_x:.4f} bits, I(S;X) = {i_sx:.6f} bits; wrote {csv_path}"
               + (f" and {png_written}" if png_written else " (no matplotlib: no plot)"))



def _evaluate_max_correlation(payload, bundle, data, private, verified, as_json) -> None:
    """A max-correlation bundle beside seed 000's mapping at the same distortion, on DATA's labels."""
    from ..data import load_dataset
    from ..mechanisms.max_correlation import compare_max_correlation
    ds = load_dataset(data, private=private, public=[f["name"] for f in payload["features"]], categorical=True)
    result = compare_max_correlation(payload, ds.public, ds.private, len(ds.classes))
    summary = {"bundle": str(bundle), "data": str(data), "private": private, "signature_verified": verified,
               **result}
    if as_json:
        emit(summary)
        return
    click.echo(f"{bundle} on {data}, private {private!r}" + _unverified_note(verified))
    click.echo(f"  before: I(S;X) = {result['leakage_before_bits']:.6f} bits, MAP accuracy "
               f"{result['map_accuracy_before']:.4f} (prior alone {result['map_accuracy_prior_only']:.4f})")
    for name in ("max_correlation", "seed000_mi_optimal"):
        r = result[name]
        click.echo(f"  {name:<20} I(S;Y) {r['leakage_bits']:.6f} bits  distortion {r['distortion']:.4f} changed "
                   f"cells  MAP accuracy {r['map_accuracy']:.4f}  I(X;Y) {r['disclosure_bits']:.4f} bits")
    click.echo(f"  guarantee S*_upper x I(S;X) = {result['guarantee_bits']:.6f} bits: "
               f"{'holds' if result['guarantee_holds'] else 'VIOLATED'}")
