"""The ``privmap`` command line (click): keygen, build, verify, inspect, sanitize, evaluate, curve.

Every failure prints one line ``error: ...`` on stderr and exits non-zero
(1 for bad input or a refused bundle, 2 for usage errors); nothing half-written
is left behind. ``--json`` prints one JSON object on stdout for scripts;
progress goes to stderr. Stdout carries the command's output only: what solvers
and libraries print goes to stderr (``_common.reserved_stdout``). A closed stdout
(``privmap ... | head -1``) ends the command quietly with status 141.
"""
from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import sys
import time

import click
from privmap.device import read_bundle_file

from .._errors import BuildError
from ._common import CommandGroup, atomic_write, emit, guard, trust_options, trusted_keyring
from ._passphrase import passphrase_option, read_passphrase
from ._scale import check_partitioned_options, run_partitioned, wants_partitioned


class AutoOr(click.ParamType):
    """A number (of ``kind``, at least ``minimum``) or the word ``auto``."""

    def __init__(self, kind, minimum):
        self.kind, self.minimum = kind, minimum
        self.name = f"{kind.__name__}|auto"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        try:
            number = self.kind(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is neither {'an integer' if self.kind is int else 'a number'} nor 'auto'",
                      param, ctx)
        if not (math.isfinite(number) and number >= self.minimum):
            self.fail(f"{value!r} must be >= {self.minimum} (or 'auto')", param, ctx)
        return number


@click.group(cls=CommandGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="privmap")
def main():
    """privmap: privacy-preserving mappings against inference attacks.

    An operator learns a mapping offline from users who share both their public
    data (ratings) and a private attribute (gender, party, income), signs it into
    a bundle, and ships it to devices; a device releases sanitized ratings that
    leak at most the bundle's declared I(A; released) bits about the attribute.

    \b
    Typical session:
      privmap keygen keys/
      privmap build data.csv --private gender --clusters 64 --delta-fraction 0.5 \\
          --key keys/private.pem --out tables/demo.bundle
      privmap verify tables/demo.bundle --trusted keys/public.pem
      privmap sanitize tables/demo.bundle --trusted keys/public.pem users.csv released.csv
      privmap evaluate tables/demo.bundle data.csv --private gender
    """


@main.command()
@click.argument("keydir", type=click.Path(file_okay=False, path_type=pathlib.Path))
@passphrase_option
@guard
def keygen(keydir, passphrase_file):
    """Create an Ed25519 signing key pair in KEYDIR.

    Writes KEYDIR/private.pem (mode 0600; keep it on the build machine) and
    KEYDIR/public.pem (ship it to devices as their trusted key). Existing keys
    are never overwritten, and a KEYDIR writable by group or others is refused.
    With --passphrase-file the private key is encrypted (PKCS#8, best available).
    """
    from ..bundle._keys import generate_keypair
    generate_keypair(keydir, password=read_passphrase(passphrase_file))
    click.echo(f"wrote {keydir / 'private.pem'} (mode 0600) and {keydir / 'public.pem'}")


@main.command()
@click.argument("data", metavar="DATA", type=click.Path(path_type=pathlib.Path))
@click.option("--private", "private", metavar="COL",
              help="Private attribute column (gaussian: comma-separated private columns; max-correlation: none, "
                   "it never reads labels).")
@click.option("--public", "public", metavar="COLS", help="Comma-separated public columns (default: all others).")
@click.option("--mechanism", type=click.Choice(["quantized", "exact", "funnel", "max-correlation", "nullspace", "gaussian"]),
              default="quantized", show_default=True,
              help="quantized: k-means representatives (Algorithm 2); exact: categorical tuples (Algorithm 1); "
                   "funnel: greedy merging of categorical tuples, I(X;Y) >= R (seed 003); max-correlation: "
                   "min rho_m(X;Y)^2 s.t. E d <= D from P_X alone (seed 002); nullspace: clean real rows for a "
                   "linear predictor (seed 001); gaussian: greedy per-column Gaussian noise (seed 004).")
# -- options of the real-valued mechanisms --
@click.option("--utility", metavar="COLS", help="gaussian: comma-separated utility columns (not released).")
@click.option("--gamma", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="gaussian: least ratio of privacy gain to utility loss.")
@click.option("--fisher", is_flag=True, help="gaussian: measure utility by Fisher information (one utility column).")
@click.option("--desired", metavar="COLS", help="nullspace: comma-separated targets of the desired predictor.")
@click.option("--confidential", metavar="COLS", help="nullspace: comma-separated confidential targets.")
@click.option("--epsilon", type=click.FloatRange(min=0), help="nullspace: per-row budget ||A_d^T (x - x~)||^2.")
@click.option("--metric", type=click.Choice(["l2", "l1", "hamming", "erasures", "log-loss"]), default=None,
              help="Distortion metric [default: l2 for quantized, erasures for exact, log-loss for funnel, "
                   "hamming for max-correlation].")
@click.option("--clusters", "-k", type=AutoOr(int, 1), metavar="K|auto",
              help="Number of clusters K (quantized), or 'auto': of K = 4, 8, ... up to what the data supports "
                   "(32 training rows per cluster), the least held-out distortion whose new-user leakage meets "
                   "the target (--target-leakage / --target-auc, default 1% of H(A)); the candidates are printed.")
@click.option("--delta", type=float, help="Distortion budget Delta, in the metric's unit "
              "(gaussian: utility-loss cap I(X_u;X) - I(X_u;Y) in nats).")

@click.option("--delta-fraction", type=float,
              help="Delta as a fraction of the perfect-privacy distortion (1.0 = zero leakage).")
@click.option("--disclosure", type=float, help="funnel: disclosure floor R = I(X;Y) in bits.")
@click.option("--disclosure-fraction", type=click.FloatRange(0, 1),
              help="funnel: R as a fraction of H(X) (1.0 = release X, 0 = merge everything).")
@click.option("--prior-only", is_flag=True,
              help="max-correlation: design from P_X alone (always so; accepted for clarity).")
@click.option("--information-budget", type=click.FloatRange(min=0), default=None,
              help="max-correlation: assumed bound Delta >= I(S;X) in bits; the bundle then declares "
                   "the leakage bound Delta x S*_upper.")
@click.option("--key", required=True, type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Operator's private key (PEM, from `privmap keygen`).")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Bundle file to write (atomically).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of k-means.")
@click.option("--domain", "domains", multiple=True, metavar="[COL=]LO:HI",
              help="Declared closed domain: LO:HI for every public column, COL=LO:HI for one (repeatable; "
                   "the most specific wins). Undeclared domains are inferred from the data.")
@click.option("--schema", "schema_file", type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="JSON schema file: per column type (integer|real), min, max, missing (bool), missing_token.")
@click.option("--missing-token", metavar="TOKEN", default=None,
              help="Text that codes a missing answer in every public column besides a blank cell (e.g. 0 or NA; "
                   "a number must lie outside the column's domain); recorded in the bundle's schema.")
@click.option("--schema-out", type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Write the resolved schema (declared + inferred) here as JSON, to edit and pass to --schema.")
@click.option("--missing", type=click.Choice(["mask", "impute"]), default="mask", show_default=True,
              help="Missing answers (blank cells): mask = distances over observed cells; impute = column "
                   "training median, recorded in the bundle.")
@click.option("--solver", type=click.Choice(["fast", "cvxpy"]), default="fast", show_default=True,
              help="fast: privmap's certified solver; cvxpy: Clarabel reference.")
@click.option("--bits", type=click.IntRange(1, 32), default=None,
              help="Table weights sum to 2^BITS per row [default: 16; 24 for max-correlation, whose rho_m^2 "
                   "is sensitive to the rounding of rarely released outputs].")
@click.option("--smoothing", type=AutoOr(float, 0), default="0.0", show_default=True, metavar="S|auto",
              help="Additive smoothing of the prior's counts, or 'auto' (chosen with the clusters, as above).")
@click.option("--target-leakage", type=click.FloatRange(min=0), default=None, metavar="BITS",
              help="With 'auto': the new-user (cross-fitted) leakage to stay under; the least held-out distortion "
                   "within it wins, and the bundle declares that very figure [default: 0.01 x H(A)].")
@click.option("--target-auc", type=click.FloatRange(0.0, 1.0), default=None, metavar="AUC",
              help="With 'auto': the out-of-sample attacker ROC AUC to stay under (logistic regression on simulated "
                   "releases of the held-out rows); combines with --target-leakage.")
@click.option("--no-codebook", is_flag=True,
              help="Release the k-means representatives as they are (skip the codebook step that moves each "
                   "released row to the metric's optimum and re-solves).")
@click.option("--holdout-folds", type=click.IntRange(min=0, max=20), default=5, show_default=True,
              help="Folds of the cross-fitted (new-user) leakage estimate written into the bundle; 0 = skip.")
@click.option("--max-output-leakage", type=click.FloatRange(min=0, min_open=True), default=None, metavar="EPS",
              help="quantized/exact: per-output limit in bits: every released output c^ keeps "
                   "|log2 p(a|c^) - log2 p(a)| <= EPS on the training prior (checked on the shipped integer "
                   "table). Solved by the cvxpy reference (small K); turns the codebook step off.")
@click.option("--bundle-version", type=click.IntRange(1, 2 ** 63 - 1), default=1, show_default=True,
              help="Monotonic bundle version (devices refuse versions below their minimum).")
@click.option("--issued-at", type=int, default=None,
              help="Creation time, unix seconds [default: SOURCE_DATE_EPOCH, else now].")
@click.option("--valid-days", type=click.FloatRange(min=0, min_open=True), default=365, show_default=True,
              help="Days until the bundle expires.")
@click.option("--device-class", default="generic", show_default=True, metavar="NAME",
              help="Device class the bundle is for (1-64 printable ASCII, no spaces); devices "
                   "configured with a class refuse bundles for any other.")
@click.option("--json", "as_json", is_flag=True, help="Print the build summary as JSON.")
# Partitioned (out-of-core) build on Dask: needs the scale extra.
@click.option("--workers", metavar="N", type=click.IntRange(min=1), default=None,
              help="Partitioned build on a local Dask cluster of N worker processes [default: 2].")
@click.option("--scheduler", metavar="ADDRESS", default=None,
              help="Partitioned build on the existing Dask cluster at ADDRESS (e.g. tcp://10.0.0.5:8786).")
@click.option("--kmeans", type=click.Choice(["minibatch", "dask-ml", "in-memory"]), default="minibatch",
              show_default=True, help="Partitioned build's k-means: mini-batch over partitions, dask-ml's "
              "scalable k-means, or the in-memory build's k-means on all rows gathered (small data).")
@passphrase_option
@guard
def build(data, private, public, mechanism, utility, gamma, fisher, desired, confidential, epsilon, metric,
          clusters, delta, delta_fraction, disclosure, disclosure_fraction, prior_only, information_budget, key, out,
          seed, domains, schema_file, missing_token, schema_out, missing, solver, bits, smoothing, target_leakage,
          target_auc, no_codebook, holdout_folds, max_output_leakage, bundle_version, issued_at, valid_days,
          device_class, as_json,
          passphrase_file, workers, scheduler, kmeans):
    """Build, sign and write a bundle from labelled data DATA.

    Estimates p(a, c), quantizes (K clusters), solves min I(A; C^) s.t.
    E d(C, C^) <= Delta, moves each released row to the metric's optimum and
    re-solves (codebook step), compresses the table to integers and signs the
    bundle. The bundle is loaded back with the device runtime before it is written.

    A blank cell in a public column is a missing answer (--missing says how it
    is handled; rows with every public cell blank are left out). Each public
    column's domain goes into the bundle and devices refuse cells outside it:
    declare it (--domain 1:5, --domain age=18:99, --schema FILE), or it is
    inferred from the data and printed on stderr (save it with --schema-out).

    \b
    Real-valued columns (the released columns are all the others):
      privmap build data.csv --mechanism gaussian --private p1,p2 --utility u \\
          --delta 0.5 --gamma 0 --key keys/private.pem --out g.bundle
      privmap build data.csv --mechanism nullspace --desired yd --confidential yc \\
          --epsilon 0.01 --key keys/private.pem --out n.bundle

    \b
    The bundle declares two leakages, in bits:
      leakage_bits          I(A; C^) on the prior it was built from (in-sample);
      holdout_leakage_bits  cross-fitted: tables built on k-1 folds, measured on the
                            held-out fold, bias-corrected, with an interval; what a
                            new user faces.
    --clusters auto picks K (and --smoothing auto the smoothing) by that estimate.

    \b
    Seed mechanisms on categorical columns:
      privmap build adult.csv --private income_sex --mechanism funnel \\
          --disclosure-fraction 0.5 --key k.pem --out funnel.bundle
      privmap build public.csv --mechanism max-correlation --metric hamming \\
          --delta 0.3 --key k.pem --out maxcorr.bundle

    \b
    DATA is a CSV file (read into memory, up to 1 GiB), or, for millions of
    users, a directory or glob of CSV or Parquet files, built out of core on
    Dask partition by partition (quantized mechanism, l2 metric):
      privmap build 'ratings/*.parquet' --private party --clusters 1024 \\
          --delta-fraction 0.5 --key keys/private.pem --out big.bundle --workers 4
    A lone CSV file goes the partitioned way too when --workers or
    --scheduler is given.
    """
    if missing_token is not None and mechanism != "quantized":
        raise BuildError(f"--missing-token applies to the quantized mechanism's numeric columns, not {mechanism}")
    if max_output_leakage is not None and mechanism not in ("quantized", "exact"):
        raise BuildError(f"--max-output-leakage applies to the quantized and exact mechanisms, not {mechanism}")
    if mechanism in ("funnel", "max-correlation"):  # seeds 003 and 002
        from ._seed_builds import build_seed_mechanism
        if prior_only and mechanism != "max-correlation":
            raise BuildError("--prior-only applies to the max-correlation mechanism only")
        build_seed_mechanism(data=data, private=private, public=public, mechanism=mechanism, metric=metric,
                             delta=delta, delta_fraction=delta_fraction, disclosure=disclosure,
                             disclosure_fraction=disclosure_fraction, information_budget=information_budget,
                             key=key, passphrase_file=passphrase_file, out=out, seed=seed, bits=bits,
                             smoothing=smoothing, bundle_version=bundle_version, issued_at=issued_at,
                             valid_days=valid_days, device_class=device_class, as_json=as_json)
        return
    if prior_only or disclosure is not None or disclosure_fraction is not None or information_budget is not None:
        raise BuildError(f"--prior-only, --disclosure(-fraction) and --information-budget do not apply to the "
                         f"{mechanism} mechanism")
    from ._real import REAL_MECHANISMS, build_real, check_not_real
    if mechanism in REAL_MECHANISMS:
        from ..mechanisms._header import HeaderOptions
        return build_real(data, mechanism, private=private, utility=utility, desired=desired,
                          confidential=confidential, epsilon=epsilon, delta=delta, gamma=gamma, fisher=fisher,
                          key=key, passphrase_file=passphrase_file, out=out, as_json=as_json,
                          header=HeaderOptions(bundle_version, issued_at, valid_days, device_class))
    check_not_real(mechanism, private)
    from ..bundle._keys import load_private_key
    from ..bundle._write import check_bundle, encode_payload, sign_bundle
    from ..data._schema import declare, read_schema_file, schema_json
    from ..mechanisms._pipeline import BuildOptions, StageTimer
    from ..mechanisms._pipeline import build as run_build

    if (delta is None) == (delta_fraction is None):
        raise BuildError("give exactly one of --delta and --delta-fraction")
    auto = clusters == "auto" or smoothing == "auto"
    if auto and mechanism != "quantized":
        raise BuildError("'auto' clusters or smoothing apply to the quantized mechanism only")
    options = BuildOptions(
        private=private, public=tuple(c.strip() for c in public.split(",")) if public else None,
        mechanism=mechanism, metric=metric or ("erasures" if mechanism == "exact" else "l2"),
        clusters=1 if clusters == "auto" else clusters, delta=delta, delta_fraction=delta_fraction, seed=seed,
        solver=solver, bits=bits or 16, smoothing=0.0 if smoothing == "auto" else smoothing,
        bundle_version=bundle_version, issued_at=issued_at, valid_days=valid_days, device_class=device_class,
        codebook=not no_codebook and max_output_leakage is None, max_output_leakage_bits=max_output_leakage,
        holdout_folds=holdout_folds, missing=missing,
        declared=declare(read_schema_file(schema_file) if schema_file else None, domains, missing_token)
        if (schema_file or domains or missing_token is not None) else None)
    partitioned = wants_partitioned(data, workers, scheduler)
    checked = check_partitioned_options(data, options, auto=auto, kmeans=kmeans) if partitioned else None
    private_key = load_private_key(key, password=read_passphrase(passphrase_file))
    choice = _choose_auto(data, options, clusters, smoothing, target_leakage, target_auc) if auto else None
    if choice is not None:
        options = dataclasses.replace(options, clusters=choice.clusters, smoothing=choice.smoothing)
    started = time.perf_counter()
    if partitioned:
        timer = StageTimer()
        result = run_partitioned(data, options, workers=workers, scheduler=scheduler, kmeans=kmeans,
                                 progress=timer, checked=checked)
    else:
        with click.progressbar(length=1000, label="build", file=sys.stderr, show_eta=False) as bar:
            def progress(stage, fraction):
                bar.label = f"build: {stage:<15}"
                bar.update(int(fraction * 1000) - bar.pos)
            result = run_build(data, options, progress=progress, **(choice.build_kwargs() if choice else {}))
        timer = result.stages                       # the build's own StageTimer
    timer("encode-sign", 1.0)
    payload_bytes = encode_payload(result.payload)
    bundle_bytes = sign_bundle(payload_bytes, private_key)
    check_bundle(bundle_bytes, private_key.public_key(), now=result.payload["issued_at"])
    schema = result.alphabet.schema
    if schema_out is not None:
        atomic_write(schema_out, (json.dumps(schema_json(schema), indent=2) + "\n").encode("utf-8"))
    inferred = [c for c in schema if "domain" in c.inferred]
    if inferred:
        click.echo(f"note: {len(inferred)} column domain(s) inferred from the data; devices refuse values "
                   "outside them (declare with --domain or --schema; --schema-out saves this schema):", err=True)
        for c in inferred:
            click.echo(f"  {c.name}: {'integer' if c.integer else 'real'} [{c.min}, {c.max}]", err=True)
    if result.dropped_rows:
        click.echo(f"note: {result.dropped_rows} row(s) with every public cell missing left out", err=True)
    atomic_write(out, bundle_bytes)
    timer.close()
    seconds = time.perf_counter() - started
    metrics = result.payload["metrics"]
    summary = {"out": str(out), "bytes": len(bundle_bytes), "build_seconds": round(seconds, 3),
               **{k: metrics[k] for k in ("leakage_before_bits", "leakage_bits", "distortion", "delta", "r",
                                          "delta_plus_r", "clusters", "n", "perfect_privacy_distortion",
                                          "measured_distortion", "leakage_change_bits")},
               "solver": result.solved.solver, "stage_seconds": _seconds_by_stage(timer.records()),
               "stages": timer.records(),
               "quantization_distortion": metrics["quantization_distortion"]}
    if math.isfinite(result.solved.gap_bits):
        summary["solver_gap_bits"] = result.solved.gap_bits
    from .._information import max_output_leakage_bits
    summary["max_output_leakage_bits"] = metrics.get("max_output_leakage_bits") or max_output_leakage_bits(
        result.p_ac, result.table.probabilities())
    summary.update({k: v for k, v in metrics.items() if k.startswith(("holdout_", "codebook_", "max_output_"))})
    if choice is not None:
        summary["auto"] = choice.summary()
    if as_json:
        emit(summary)
        return
    click.echo(f"wrote {out} ({len(bundle_bytes)} bytes) in {seconds:.2f} s")
    click.echo(f"  leakage I(A;C^): {metrics['leakage_bits']:.6f} bits "
               f"(before the mapping: {metrics['leakage_before_bits']:.6f} bits)")
    where = "raw rows (codebook step)" if "codebook_iterations" in metrics else "clusters"
    click.echo(f"  distortion: {metrics['distortion']:.4f} on {where} (Delta = {metrics['delta']:.4f}); "
               f"measured on data {metrics['measured_distortion']:.4f} <= Delta + r = {metrics['delta_plus_r']:.4f}")
    click.echo(f"  K = {metrics['clusters']}, n = {metrics['n']}, perfect privacy at Delta = "
               f"{metrics['perfect_privacy_distortion']:.4f}, solver {result.solved.solver}")
    if "codebook_iterations" in metrics:
        click.echo(f"  codebook step: distortion on data {metrics['codebook_start_distortion']:.4f} -> "
                   f"{metrics['measured_distortion']:.4f}, leakage {metrics['codebook_start_leakage_bits']:.6f} -> "
                   f"{metrics['leakage_bits']:.6f} bits in {metrics['codebook_iterations']} rounds "
                   f"(rounding to valid values cost {metrics['codebook_rounding_cost']:.4f})")
    eps = summary["max_output_leakage_bits"]
    click.echo(f"  per-output leakage: {eps:.6f} bits (max over outputs and classes of |log2 p(a|c^)/p(a)|)"
               + (f" <= limit {metrics['max_output_leakage_limit_bits']:g}"
                  if "max_output_leakage_limit_bits" in metrics else ""))
    if "holdout_leakage_bits" in metrics:
        click.echo(f"  new users ({metrics['holdout_folds']}-fold cross-fitted): leakage "
                   f"{metrics['holdout_leakage_bits']:.6f} bits [{metrics['holdout_leakage_low_bits']:.6f}, "
                   f"{metrics['holdout_leakage_high_bits']:.6f}] (in-sample {metrics['leakage_bits']:.6f}), "
                   f"distortion {metrics['holdout_distortion']:.4f}")


def _seconds_by_stage(records: list[dict]) -> dict[str, float]:
    """Wall seconds per stage name, from :meth:`StageTimer.records` (a name seen twice is summed)."""
    seconds: dict[str, float] = {}
    for r in records:
        seconds[r["stage"]] = round(seconds.get(r["stage"], 0.0) + r["seconds"], 3)
    return seconds


def _choose_auto(data, options, clusters, smoothing, target_leakage, target_auc):
    """Run the ``auto`` search with a progress bar and print its candidates on stderr."""
    from ..mechanisms._autotune import CANDIDATE_SMOOTHING, choose, format_candidates
    from ..mechanisms._pipeline import load_training
    dataset, _ = load_training(data, options)
    ss = CANDIDATE_SMOOTHING if smoothing == "auto" else (smoothing,)
    with click.progressbar(length=1000, label="auto: candidates", file=sys.stderr) as bar:
        choice = choose(dataset, options, clusters=None if clusters == "auto" else (clusters,), smoothing=ss,
                        target_leakage_bits=target_leakage, target_auc=target_auc,
                        progress=lambda done, total: bar.update(int(1000 * done / total) - bar.pos))
    click.echo(format_candidates(choice), err=True)
    if not any(c.get("meets_target") for c in choice.candidates):
        click.echo("warning: no candidate meets the privacy target; the least-leaking one was chosen", err=True)
    return choice


def _describe(payload: dict) -> dict:
    metrics = payload["metrics"]
    if payload["mechanism"] in ("funnel", "max-correlation"):
        from ._seed_builds import describe_seed_payload
        return describe_seed_payload(payload)
    return {
        "version": payload["version"], "issued_at": payload["issued_at"], "expires": payload["expires"],
        "mechanism": payload["mechanism"], "metric": payload["metric"],
        "features": [f["name"] for f in payload["features"]],
        "domains": {f["name"]: {k: f[k] for k in ("min", "max", "integer", "missing", "fill", "missing_token")}
                    for f in payload["features"] if f["kind"] == "numeric"},
        "private": payload["private"]["name"], "classes": payload["private"]["classes"],
        "inputs": len(payload["inputs"]), "outputs": len(payload["outputs"]), "bits": payload["table"]["bits"],
        "nonzero_per_row": sum(len(r) for r in payload["table"]["index"]) / max(len(payload["table"]["index"]), 1),
        "leakage_bits": metrics["leakage_bits"], "distortion": metrics["distortion"], "delta": metrics["delta"],
        "clusters": metrics["clusters"], "metrics": dict(metrics), "provenance": dict(payload["provenance"]),
        "holdout_leakage_bits": metrics.get("holdout_leakage_bits"),
        "holdout_leakage_interval_bits": ([metrics["holdout_leakage_low_bits"], metrics["holdout_leakage_high_bits"]]
                                          if "holdout_leakage_low_bits" in metrics else None),
    }


def _print_description(info: dict) -> None:
    click.echo(f"  version {info['version']}, {info['mechanism']} mechanism, metric {info['metric']}, "
               f"expires {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(info['expires']))}")
    click.echo(f"  private {info['private']!r} in {info['classes']}; {len(info['features'])} public features")
    click.echo(f"  K_in = {info['inputs']}, K_out = {info['outputs']}, B = {info['bits']}, "
               f"{info['nonzero_per_row']:.2f} nonzero entries per row")
    if "rho_m_squared" in info:
        click.echo(f"  rho_m^2 {info['rho_m_squared']:.6f}, S* <= {info['s_star_upper_bound']:.6f} "
                   f"({'verified' if info['s_star_verified'] else 'S* = rho_m^2 NOT verified'}), "
                   f"distortion {info['distortion']:.4f} (D = {info['delta']:.4f})")
        return
    click.echo(f"  leakage {info['leakage_bits']:.6f} bits, distortion {info['distortion']:.4f} "
               f"(Delta = {info['delta']:.4f})" + (f", disclosure {info['disclosure_bits']:.6f} bits"
                                                   if "disclosure_bits" in info else ""))
    eps = info.get("max_output_leakage_bits")
    click.echo(f"  per-output leakage: " + ("-" if eps is None else f"{eps:.6f} bits")
               + f"; {info.get('max_output_leakage_note', '')}")
    if info["holdout_leakage_bits"] is not None:
        low, high = info["holdout_leakage_interval_bits"] or (math.nan, math.nan)
        click.echo(f"  new users (cross-fitted): leakage {info['holdout_leakage_bits']:.6f} bits "
                   f"[{low:.6f}, {high:.6f}]")


@main.command()
@click.argument("bundle", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@trust_options(required=True)
@click.option("--min-version", type=click.IntRange(min=1), default=1, show_default=True,
              help="Refuse bundles older than this version.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guard
def verify(bundle, trusted, keyrings, min_version, as_json):
    """Check BUNDLE exactly as a device would, and recompute its leakage.

    Size, envelope, Ed25519 signatures by trusted keys (before the payload is
    decoded; with --keyring, by as many distinct keys as its threshold), format,
    issue date and expiry, version, every array, and the declared leakage
    against the leakage recomputed from the bundled prior and integer table.
    Exits 1 with the reason if any check fails.
    """
    from privmap.device import recompute_leakage_bits, schema_sha256
    loaded = read_bundle_file(bundle, trusted_keyring(trusted, keyrings), min_version=min_version)
    if loaded.mechanism == "max-correlation":  # no prior; rho_m^2 was recomputed on load
        from privmap.device._maxcorr import rho_m_squared_pure
        info = {"ok": True, "sha256": loaded.sha256, "key_id": loaded.key_id, "version": loaded.version,
                "expires": loaded.expires, "rho_m_squared": loaded.metrics["rho_m_squared"],
                "recomputed_rho_m_squared": rho_m_squared_pure(loaded.p_x, loaded.index, loaded.weight, loaded.bits),
                "s_star_upper_bound": loaded.metrics["s_star_upper_bound"],
                "distortion": loaded.metrics["distortion"], "delta": loaded.metrics["delta"]}
        if as_json:
            emit(info)
            return
        click.echo(f"OK: {bundle} verified (sha256 {loaded.sha256[:16]}..., key {loaded.key_id[:16]}...)")
        click.echo(f"  declared rho_m^2 {info['rho_m_squared']:.6f}, recomputed {info['recomputed_rho_m_squared']:.6f}")
        return
    from ._real import REAL_MECHANISMS, verify_real
    if loaded.mechanism in REAL_MECHANISMS:
        info = verify_real(loaded)
        if as_json:
            emit(info)
        else:
            click.echo(f"OK: {bundle} verified (sha256 {loaded.sha256[:16]}..., key {loaded.key_id[:16]}...)")
        return
    recomputed = recompute_leakage_bits(loaded)
    info = {"ok": True, "sha256": loaded.sha256, "key_id": loaded.key_id, "version": loaded.version,
            "schema_sha256": schema_sha256(loaded.features),  # for devices' Binding
            "expires": loaded.expires, "leakage_bits": loaded.metrics["leakage_bits"],
            "recomputed_leakage_bits": recomputed, "distortion": loaded.metrics["distortion"],
            "delta": loaded.metrics["delta"], "clusters": loaded.metrics["clusters"]}
    if "disclosure_bits" in loaded.metrics:
        info["disclosure_bits"] = loaded.metrics["disclosure_bits"]
    if as_json:
        emit(info)
        return
    click.echo(f"OK: {bundle} verified (sha256 {loaded.sha256[:16]}..., key {loaded.key_id[:16]}...)")
    click.echo(f"  declared leakage {info['leakage_bits']:.6f} bits, recomputed {recomputed:.6f} bits")


@main.command()
@click.argument("bundle", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@trust_options(required=False)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guard
def inspect(bundle, trusted, keyrings, as_json):
    """Show what BUNDLE contains: mechanism, sizes, metrics, provenance, signatures.

    Without --trusted or --keyring the signatures are not checked and the
    output says so. Reads single-signature (format 1) and k-of-n (format 2)
    bundles.
    """
    from ..bundle._inspect import listed_signatures, payload_output_leakage, read_bytes, read_unverified
    keyring = trusted_keyring(trusted, keyrings, required=False)
    data = read_bytes(bundle) if keyring is None else read_bundle_file(bundle, keyring).data
    payload, _ = read_unverified(data)
    envelope_format, signers = listed_signatures(data)
    verified = keyring is not None
    from ._real import REAL_MECHANISMS, describe_real, print_real
    real = payload["mechanism"] in REAL_MECHANISMS
    info = {"signature_verified": verified, "envelope_format": envelope_format, "signatures": signers,
            **(describe_real(payload) if real else _describe(payload))}
    info["max_output_leakage_bits"], info["max_output_leakage_note"] = payload_output_leakage(payload)
    if as_json:
        emit(info)
        return
    click.echo(f"{bundle}: signature {'verified' if verified else 'NOT VERIFIED (no --trusted or --keyring given)'}")
    click.echo(f"  envelope format {envelope_format}, {len(signers)} signature(s) listed: "
               + ", ".join(f"{key_id[:16]}..." for key_id in signers))
    (print_real if real else _print_description)(info)


@main.command()
@click.argument("bundle", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.argument("infile", metavar="IN.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.argument("outfile", metavar="OUT.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@trust_options(required=True)
@click.option("--min-version", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--rejects", type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Write refused rows here as CSV: line number and reason (never the raw values).")
@click.option("--skip-invalid", is_flag=True,
              help="Exit 0 even when rows were refused (they are still left out and counted).")
@click.option("--state", "state_dir", type=click.Path(file_okay=False, path_type=pathlib.Path),
              help="Device state directory (created if absent): installs BUNDLE there, refuses a "
                   "lower version than one used before, and releases one permanent draw per input.")
@click.option("--stamp", is_flag=True, help="Add bundle_sha256 and bundle_version columns to OUT.csv.")
@click.option("--device-class", metavar="NAME",
              help="Act as a device of this class: refuse a bundle built for another class.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@guard
def sanitize(bundle, infile, outfile, trusted, keyrings, min_version, rejects, skip_invalid, state_dir, stamp,
             device_class, as_json):
    """Release sanitized rows of IN.csv into OUT.csv, as one device per row would.

    IN.csv has a header naming the bundle's public features (any order); the
    private column, if present, is ignored and never written. A blank cell is a
    missing answer (handled as the bundle declares). OUT.csv holds the public
    columns only, in the bundle's order, one row per valid input row, in input
    order; erased cells are empty.

    A row the device refuses (wrong length, not a number, outside the declared
    domain, every cell missing) is left out and nothing is released for it; the
    others are still released. Then the command exits 1 with the count of
    refused rows, unless --skip-invalid. --rejects FILE lists the refused line
    numbers and reasons; no raw value of a refused row is written anywhere.

    Without --state every call draws afresh, so asking the same rows again
    releases new draws (an observer averaging them learns more). With
    --state DIR the CLI acts as one device: running it twice on the same
    input gives identical released rows, and once a bundle of version v has
    been used with DIR a lower version is refused (nothing is written).

    Trust either PEM keys (--trusted, any one signature) or a keyring
    document (--keyring, its threshold of distinct signatures; with --state
    the device state is opened with that keyring's current keys). A bundle
    issued more than a day after the clock is refused, with or without --state.
    """
    from privmap.device import Binding, check_binding

    from ._batch import rejects_csv, sanitize_csv
    binding = Binding(device_class=device_class) if device_class else None
    keyring = trusted_keyring(trusted, keyrings)
    if state_dir is not None:
        from ._state import stateful_release
        loaded, release = stateful_release(state_dir, bundle, keyring, min_version, binding)
    else:  # issued_at beyond the clock by more than MAX_CLOCK_SKEW is refused here as with --state
        loaded = read_bundle_file(bundle, keyring, min_version=min_version)
        check_binding(loaded, binding)
        release = loaded.sanitize
    started = time.perf_counter()
    result = sanitize_csv(loaded, infile, release=release, stamp=stamp)
    elapsed = time.perf_counter() - started
    atomic_write(outfile, result.released.encode("utf-8"))
    if rejects is not None:
        atomic_write(rejects, rejects_csv(result.refused).encode("utf-8"))
    count = result.rows - len(result.refused)
    summary = {"rows": count, "refused": len(result.refused), "read": result.rows, "out": str(outfile),
               "rejects": str(rejects) if rejects is not None else None, "bundle_sha256": loaded.sha256,
               "bundle_version": loaded.version, "seconds": round(elapsed, 4),
               "microseconds_per_row": round(1e6 * elapsed / max(result.rows, 1), 1)}
    if as_json:
        emit(summary)
    else:
        click.echo(f"released {count} rows to {outfile} with bundle {loaded.sha256[:16]}... "
                   f"({summary['microseconds_per_row']} us/row)")
    if result.refused and not skip_invalid:
        first = result.refused[0]
        where = f"see {rejects}" if rejects is not None else f"first at line {first[0]}: {first[1]}"
        raise BuildError(f"{len(result.refused)} of {result.rows} rows refused and left out ({where}); "
                         "use --skip-invalid to accept that")


def _register_evaluation_commands() -> None:
    try:
        from ._eval import curve, evaluate
    except ImportError:  # the evaluation suite is not in this build
        return
    main.add_command(evaluate)
    main.add_command(curve)


_register_evaluation_commands()


def _register_key_commands() -> None:  # k-of-n keys and keyring rotation
    from ._keyring import cosign, keyring
    main.add_command(keyring)
    main.add_command(cosign)


_register_key_commands()


def _register_state_commands() -> None:  # privmap state show|rotate (issue 25)
    from ._state import state
    main.add_command(state)


_register_state_commands()
