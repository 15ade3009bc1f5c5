"""The ``privmap`` group and seed 000's ``privmap build`` (quantized or exact); the other commands
live in modules of their own and are added here (``_keyring``: keygen, keyring, cosign;
``_seed_builds``: build-funnel, build-max-correlation; ``_real``: build-gaussian, build-nullspace;
``_verify``: verify, inspect; ``_sanitize``; ``_eval``: evaluate, curve; ``_state``).

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
from privmap.device.constants import MAX_RANK

from .._errors import BuildError
from .._files import atomic_write
from ..commandline import (
    AutoOr,
    Section,
    SectionedCommand,
    bundle_options,
    data_options,
    emit,
    guard,
    header_options,
    json_option,
    read_passphrase,
)
from ._forward import PrivmapGroup
from ._scale import check_partitioned_options, run_partitioned, wants_partitioned
from ._verify import robust_line


@click.group(cls=PrivmapGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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


#: ``privmap build --help``: its options by section, one line each (``--help-all`` gives the full help).
BUILD_SECTIONS = (
    Section("Data", (
        ("private", "Private attribute column."),
        ("public", "Public columns, comma-separated (default: others)."),
        ("domains", "Declared domain, all columns or COL (repeatable)."),
        ("schema_file", "Column types, domains, missing tokens (JSON)."),
        ("schema_out", "Write the resolved schema here (JSON), to edit."),
        ("missing_token", "Text coding a missing answer, besides a blank."),
        ("missing", "Blank cells skipped or imputed (default: mask)."),
    )),
    Section("Mapping", (
        ("mechanism", "quantized (k-means) or exact (default: quantized)."),
        ("utility", "rows, or recommender: taste kept for recommenders."),
        ("factors", "recommender: latent rank (default: 10)."),
        ("factor_reg", "recommender: fold-in penalty, or auto (default)."),
        ("metric", "Distortion metric (default: l2; exact: erasures)."),
        ("clusters", "Clusters K, or auto: the best K meeting a target."),
        ("delta", "Distortion budget Delta, in the metric's unit."),
        ("delta_fraction", "Delta as a fraction of perfect privacy's (auto: searched)."),
        ("seed", "Seed of k-means (default: 0)."),
        ("no_codebook", "Release the k-means representatives unmoved."),
        ("smoothing", "Prior count smoothing, or auto (default: 0.0)."),
        ("prior", "p(a,c) from counts or classifier posteriors."),
        ("solver", "Certified fast solver or cvxpy (default: fast)."),
        ("bits", "Table rows sum to 2^BITS (default: 16)."),
    )),
    Section("Guarantees", (
        ("holdout_folds", "Folds of the new-user estimate (default: 5)."),
        ("target_leakage", "auto: new-user leakage in bits to stay under."),
        ("target_auc", "auto: held-out attacker AUC to stay under."),
        ("robust", "Certify the leakage over a set of priors."),
        ("max_output_leakage", "Limit every output's leakage to EPS bits."),
    )),
    Section("Out of core (Dask)", (
        ("workers", "Local Dask cluster of N workers (default: 2)."),
        ("scheduler", "Existing Dask cluster at ADDRESS."),
        ("kmeans", "minibatch (default), dask-ml or in-memory k-means."),
    )),
    Section("Bundle", (
        ("key", "Operator's private key (PEM; required)."),
        ("passphrase_file", "File whose first line is the key's passphrase."),
        ("out", "Bundle file to write (required)."),
        ("bundle_version", "Bundle version; devices refuse older (default: 1)."),
        ("issued_at", "Creation time, unix s (default: now)."),
        ("valid_days", "Days until it expires (default: 365)."),
        ("device_class", "Device class it is for (default: generic)."),
        ("as_json", "Print the build summary as JSON."),
    )),
)


@main.command(cls=SectionedCommand, sections=BUILD_SECTIONS, brief=(
    "Build a seed-000 bundle from labelled data DATA: a CSV file, or a directory or glob of CSV "
    "or Parquet parts (built out of core on Dask).\n\n"
    "\b\nExample (K = 64 clusters, Delta half the perfect-privacy distortion):\n"
    "  privmap build ratings.csv --private gender --domain 1:5 --clusters 64 \\\n"
    "      --delta-fraction 0.5 --key keys/private.pem --out ratings.bundle"))
@click.argument("data", metavar="DATA", type=click.Path(path_type=pathlib.Path))
@click.option("--private", "private", metavar="COL", help="Private attribute column.")
@click.option("--public", "public", metavar="COLS", help="Comma-separated public columns (default: all others).")
@click.option("--mechanism", type=click.Choice(["quantized", "exact"]), default="quantized", show_default=True,
              help="quantized: k-means representatives of numeric rows (Algorithm 2); exact: categorical tuples "
                   "and their erasures (Algorithm 1). Other mechanisms have their own commands (build-funnel, "
                   "build-max-correlation, build-gaussian, build-nullspace).")
@click.option("--utility", type=click.Choice(["rows", "recommender"]), default="rows", show_default=True,
              help="rows: release a representative of the public rows (seed 000 as written); recommender: for "
                   "ratings with blank cells, map users' latent taste (a factor model fitted here, folded in on "
                   "the device) and release a full row of predicted ratings, distortion in stars "
                   "(docs/recommender.md).")
@click.option("--factors", type=click.IntRange(1, MAX_RANK), default=10, show_default=True, metavar="RANK",
              help="--utility recommender: rank of the latent-factor model.")
@click.option("--factor-reg", type=AutoOr(float, 1e-9), default="auto", show_default=True, metavar="REG|auto",
              help="--utility recommender: ridge penalty of the factor model and the device's fold-in, or 'auto' "
                   "(least RMSE on 10% of the training ratings held back).")
@click.option("--metric", type=click.Choice(["l2", "l1", "hamming", "erasures"]), default=None,
              help="Distortion metric [default: l2 for quantized, erasures for exact].")
@click.option("--clusters", "-k", type=AutoOr(int, 1), metavar="K|auto",
              help="Number of clusters K (quantized), or 'auto': of K = 4, 8, ... up to what the data supports "
                   "(32 training rows per cluster, 8 with --prior posteriors), the least held-out distortion whose "
                   "new-user leakage meets the target (--target-leakage / --target-auc, default 1% of H(A)); the "
                   "candidates are printed.")
@click.option("--delta", type=float, help="Distortion budget Delta, in the metric's unit.")
@click.option("--delta-fraction", type=float,
              help="Delta as a fraction of the perfect-privacy distortion (1.0 = zero leakage). With "
                   "--clusters auto and neither this nor --delta, the fraction is searched with K.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of k-means.")
@data_options
@click.option("--schema", "schema_file", type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="JSON schema file: per column type (integer|real), min, max, missing (bool), missing_token.")
@click.option("--schema-out", type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Write the resolved schema (declared + inferred) here as JSON, to edit and pass to --schema.")
@click.option("--missing", type=click.Choice(["mask", "impute"]), default="mask", show_default=True,
              help="Missing answers (blank cells): mask = distances over observed cells; impute = column "
                   "training median, recorded in the bundle.")
@click.option("--solver", type=click.Choice(["fast", "cvxpy"]), default="fast", show_default=True,
              help="fast: privmap's certified solver; cvxpy: Clarabel reference.")
@click.option("--bits", type=click.IntRange(1, 32), default=16, show_default=True,
              help="Table weights sum to 2^BITS per row.")
@click.option("--smoothing", type=AutoOr(float, 0), default="0.0", show_default=True, metavar="S|auto",
              help="Additive smoothing of the prior's counts, or 'auto' (chosen with the clusters, as above).")
@click.option("--prior", "prior", type=click.Choice(["counts", "posteriors"]), default=None,
              help="How p(a, c) is estimated: counts per cluster, or a logistic regression's cross-fitted "
                   "posteriors summed per cluster (steadier with few users per cluster; lets --clusters auto "
                   "try more clusters) [default: posteriors with --utility recommender, else counts].")
@click.option("--target-leakage", type=click.FloatRange(min=0), default=None, metavar="BITS",
              help="With 'auto': the new-user (cross-fitted) leakage to stay under; the least held-out distortion "
                   "within it wins, and the bundle declares that very figure [default: 0.01 x H(A)].")
@click.option("--target-auc", type=click.FloatRange(0.0, 1.0), default=None, metavar="AUC",
              help="With 'auto': the out-of-sample attacker ROC AUC to stay under (logistic regression on simulated "
                   "releases of the held-out rows); combines with --target-leakage.")
@click.option("--no-codebook", is_flag=True,
              help="Release the k-means representatives as they are (skip the codebook step that moves each "
                   "released row to the metric's optimum and re-solves).")
@click.option("--robust", "robust", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
              metavar="CONFIDENCE",
              help="Certify the leakage over a confidence set of priors (per-cluster L1 balls holding the "
                   "population's posteriors with this probability, e.g. 0.95), choose the table of least "
                   "certified worst case, and declare robust_leakage_bits (docs/guarantees.md).")
@click.option("--holdout-folds", type=click.IntRange(min=0, max=20), default=5, show_default=True,
              help="Folds of the cross-fitted (new-user) leakage estimate written into the bundle; 0 = skip.")
@click.option("--max-output-leakage", type=click.FloatRange(min=0, min_open=True), default=None, metavar="EPS",
              help="Per-output limit in bits: every released output c^ keeps |log2 p(a|c^) - log2 p(a)| <= EPS "
                   "on the training prior (checked on the shipped integer table). The fast solver's table ships "
                   "when it meets the limit, else Clarabel solves under it by column generation "
                   "(docs/per-output-leakage.md); turns the codebook step off.")
# Partitioned (out-of-core) build on Dask: needs the scale extra.
@click.option("--workers", metavar="N", type=click.IntRange(min=1), default=None,
              help="Partitioned build on a local Dask cluster of N worker processes [default: 2].")
@click.option("--scheduler", metavar="ADDRESS", default=None,
              help="Partitioned build on the existing Dask cluster at ADDRESS (e.g. tcp://10.0.0.5:8786).")
@click.option("--kmeans", type=click.Choice(["minibatch", "dask-ml", "in-memory"]), default="minibatch",
              show_default=True, help="Partitioned build's k-means: mini-batch over partitions, dask-ml's "
              "scalable k-means, or the in-memory build's k-means on all rows gathered (small data).")
@bundle_options
@header_options
@json_option
@guard
def build(data, private, public, mechanism, utility, factors, factor_reg, metric, clusters, delta, delta_fraction, key, out, seed, domains,
          schema_file, missing_token, schema_out, missing, solver, bits, smoothing, prior, target_leakage, target_auc,
          no_codebook, robust, holdout_folds, max_output_leakage, header, as_json, passphrase_file, workers, scheduler,
          kmeans):
    """Build a seed-000 bundle (quantized, or exact) from labelled data DATA.

    \b
    Example (K = 64 clusters, Delta half the perfect-privacy distortion):
      privmap build ratings.csv --private gender --domain 1:5 --clusters 64 \\
          --delta-fraction 0.5 --key keys/private.pem --out ratings.bundle

    Estimates p(a, c), quantizes (K clusters), solves min I(A; C^) s.t.
    E d(C, C^) <= Delta, moves each released row to the metric's optimum and
    re-solves (codebook step), compresses the table to integers and signs the
    bundle. The bundle is loaded back with the device runtime before it is written.
    It declares the in-sample leakage I(A; C^) and the cross-fitted one a new user
    faces (holdout_leakage_bits, with an interval); --clusters auto picks K by it.

    A blank cell in a public column is a missing answer (--missing says how it
    is handled). Each public column's domain goes into the bundle and devices
    refuse cells outside it: declare it (--domain 1:5, --domain age=18:99,
    --schema FILE), or it is inferred from the data and printed on stderr.

    DATA is a CSV file, or, for millions of users, a directory or glob of CSV or
    Parquet files built out of core on Dask (also a lone CSV with --workers or
    --scheduler). Other mechanisms: privmap build-funnel, build-max-correlation,
    build-gaussian, build-nullspace.
    """
    if missing_token is not None and mechanism != "quantized":
        raise BuildError(f"--missing-token applies to the quantized mechanism's numeric columns, not {mechanism}")
    if not private:
        raise BuildError(f"--mechanism {mechanism} needs --private COL")
    if robust is not None and wants_partitioned(data, workers, scheduler):
        raise BuildError("--robust needs the training rows in memory; it does not apply to a partitioned build")
    from ..bundle._keys import load_private_key
    from ..bundle._write import check_bundle, encode_payload, sign_bundle
    from ..data._schema import declare, read_schema_file, schema_json
    from ..mechanisms.quantized._pipeline import BuildOptions, StageTimer
    from ..mechanisms.quantized._pipeline import build as run_build

    auto = clusters == "auto" or smoothing == "auto"
    search_delta = clusters == "auto" and delta is None and delta_fraction is None
    if delta is not None and delta_fraction is not None or (delta is None and delta_fraction is None
                                                            and not search_delta):
        raise BuildError("give exactly one of --delta and --delta-fraction"
                         + (" (or neither: --clusters auto then searches it)" if clusters == "auto" else ""))
    if auto and mechanism != "quantized":
        raise BuildError("'auto' clusters or smoothing apply to the quantized mechanism only")
    rec = (_recommender_options(mechanism, metric, missing, factors, factor_reg,
                                partitioned=wants_partitioned(data, workers, scheduler))
           if utility == "recommender" else None)
    if search_delta:
        from ..mechanisms.quantized._autotune import CANDIDATE_DELTA_FRACTIONS
        delta_fraction = CANDIDATE_DELTA_FRACTIONS[0]       # each candidate gets its own
    options = BuildOptions(
        private=private, public=tuple(c.strip() for c in public.split(",")) if public else None,
        mechanism=mechanism, metric=metric or ("erasures" if mechanism == "exact" else "l2"),
        clusters=1 if clusters == "auto" else clusters, delta=delta, delta_fraction=delta_fraction, seed=seed,
        solver=solver, bits=bits, smoothing=0.0 if smoothing == "auto" else smoothing,
        prior=prior or ("posteriors" if utility == "recommender" else "counts"),
        **header,
        codebook=not no_codebook and max_output_leakage is None, max_output_leakage_bits=max_output_leakage,
        holdout_folds=holdout_folds, missing=missing, robust=robust,
        declared=declare(read_schema_file(schema_file) if schema_file else None, domains, missing_token)
        if (schema_file or domains or missing_token is not None) else None)
    partitioned = wants_partitioned(data, workers, scheduler)
    checked = check_partitioned_options(data, options, auto=auto, kmeans=kmeans) if partitioned else None
    private_key = load_private_key(key, password=read_passphrase(passphrase_file))
    started = time.perf_counter()
    search, choice, prepared = StageTimer(), None, None
    if rec is not None:
        from ..mechanisms.recommender import prepare
        search("factor-model", 0.0)                  # timed beside the search: the build's own timer starts later
        with _stage_bar("factors") as progress:
            prepared = prepare(data, options, rec, progress=progress)
        search.close()
    if auto:
        search("auto-search", 0.0)
        if prepared is not None:
            from ..mechanisms.recommender import factor_options
        choice = _choose_auto(data, options if prepared is None else factor_options(options), clusters, smoothing,
                              target_leakage, target_auc, dataset=None if prepared is None else prepared.factors,
                              search_delta=search_delta)
        search.close()
        search.attach_search("auto-search", choice.fold_costs, candidates=list(choice.candidate_costs))
        options = dataclasses.replace(options, clusters=choice.clusters, smoothing=choice.smoothing)
        if search_delta:
            options = dataclasses.replace(options, delta=None, delta_fraction=choice.delta_fraction)
    if prepared is not None:
        from ..mechanisms.recommender import build_prepared
        with _stage_bar("build") as progress:
            result = build_prepared(prepared, options, rec, progress=progress,
                                    **(choice.build_kwargs() if choice else {}))
        timer = result.stages
    elif partitioned:
        timer = StageTimer()
        result = run_partitioned(data, options, workers=workers, scheduler=scheduler, kmeans=kmeans,
                                 progress=timer, checked=checked)
    else:
        with _stage_bar("build") as progress:
            result = run_build(data, options, progress=progress, **(choice.build_kwargs() if choice else {}))
        timer = result.stages                       # the build's own StageTimer
    timer("encode-sign", 1.0)
    payload_bytes = encode_payload(result.payload)
    bundle_bytes = sign_bundle(payload_bytes, private_key)
    check_bundle(bundle_bytes, private_key.public_key(), now=result.payload["issued_at"])
    schema = result.alphabet.schema
    if schema_out is not None:
        atomic_write(schema_out, (json.dumps(schema_json(schema), indent=2) + "\n").encode("utf-8"))
    inferred = [c for c in schema if "domain" in c.inferred] if prepared is None else []
    if prepared is not None and prepared.inferred:
        click.echo(f"note: the rating domain was inferred from the data: [{prepared.lo:g}, {prepared.hi:g}]; "
                   "devices refuse ratings outside it and release inside it (declare it with --domain LO:HI)",
                   err=True)
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
    stages = search.records() + timer.records()
    metrics = result.payload["metrics"]
    summary = {"out": str(out), "bytes": len(bundle_bytes), "build_seconds": round(seconds, 3),
               **{k: metrics[k] for k in ("leakage_before_bits", "leakage_bits", "distortion", "delta", "r",
                                          "delta_plus_r", "clusters", "n", "perfect_privacy_distortion",
                                          "measured_distortion", "leakage_change_bits")},
               "solver": result.solved.solver, "stage_seconds": _seconds_by_stage(stages),
               "stages": stages,
               "quantization_distortion": metrics["quantization_distortion"]}
    if math.isfinite(result.solved.gap_bits):
        summary["solver_gap_bits"] = result.solved.gap_bits
    from .._information import max_output_leakage_bits
    summary["max_output_leakage_bits"] = (metrics["max_output_leakage_bits"] if "max_output_leakage_bits" in metrics
                                          else max_output_leakage_bits(result.p_ac, result.table.probabilities()))
    summary.update({k: v for k, v in metrics.items()
                    if k.startswith(("holdout_", "codebook_", "robust_", "max_output_", "factor_", "rating_"))})
    summary["utility"] = utility
    if choice is not None:
        summary["auto"] = choice.summary()
    _warn_new_user_leakage(metrics)
    if as_json:
        emit(summary)
        return
    searched = "".join(f", the auto search {r['seconds']:.2f} s of it" for r in search.records()
                       if r["stage"] == "auto-search")
    click.echo(f"wrote {out} ({len(bundle_bytes)} bytes) in {seconds:.2f} s{searched}")
    click.echo(f"  leakage I(A;C^): {metrics['leakage_bits']:.6f} bits "
               f"(before the mapping: {metrics['leakage_before_bits']:.6f} bits)")
    where = "raw rows (codebook step)" if "codebook_iterations" in metrics else "clusters"
    click.echo(f"  distortion: {metrics['distortion']:.4f} on {where} (Delta = {metrics['delta']:.4f}); "
               f"measured on data {metrics['measured_distortion']:.4f} <= Delta + r = {metrics['delta_plus_r']:.4f}")
    if prepared is not None:
        click.echo(f"  recommender: {metrics['rating_columns']} rating columns "
                   f"({100 * metrics['missing_cell_fraction']:.1f} % blank), rank {metrics['factor_rank']} factors, "
                   f"penalty {metrics['factor_reg']:g}; distortion in stars (RMS over the columns)")
    click.echo(f"  K = {metrics['clusters']}, n = {metrics['n']}, perfect privacy at Delta = "
               f"{metrics['perfect_privacy_distortion']:.4f}, solver {result.solved.solver}")
    if "codebook_iterations" in metrics:
        click.echo(f"  codebook step: distortion on data {metrics['codebook_start_distortion']:.4f} -> "
                   f"{metrics['measured_distortion']:.4f}, leakage {metrics['codebook_start_leakage_bits']:.6f} -> "
                   f"{metrics['leakage_bits']:.6f} bits in {metrics['codebook_iterations']} rounds "
                   f"(rounding to valid values cost {metrics['codebook_rounding_cost']:.4f})")
    if "robust_leakage_bits" in metrics:
        click.echo("  " + robust_line(metrics))
    eps = summary["max_output_leakage_bits"]
    click.echo(f"  per-output leakage: {eps:.6f} bits (max over outputs and classes of |log2 p(a|c^)/p(a)|)"
               + (f" <= limit {metrics['max_output_leakage_limit_bits']:g}"
                  if "max_output_leakage_limit_bits" in metrics else ""))
    if "holdout_leakage_bits" in metrics:
        click.echo(f"  new users ({metrics['holdout_folds']}-fold cross-fitted): leakage "
                   f"{metrics['holdout_leakage_bits']:.6f} bits [{metrics['holdout_leakage_low_bits']:.6f}, "
                   f"{metrics['holdout_leakage_high_bits']:.6f}] (in-sample {metrics['leakage_bits']:.6f}), "
                   f"distortion {metrics['holdout_distortion']:.4f}")


#: A declared new-user leakage at least this many times the in-sample one (and above it by
#: :data:`OVERFIT_MIN_GAP_BITS`) is flagged: the prior was fitted to the training users more
#: closely than it describes anyone else, and fewer clusters would serve new users better.
OVERFIT_RATIO = 3.0
OVERFIT_MIN_GAP_BITS = 1e-3


def _warn_new_user_leakage(metrics: dict) -> None:
    """Say on stderr when the cross-fitted leakage is several times the in-sample one."""
    held, fitted = metrics.get("holdout_leakage_bits"), metrics["leakage_bits"]
    if held is None or held - fitted < OVERFIT_MIN_GAP_BITS or held < OVERFIT_RATIO * fitted:
        return
    click.echo(f"warning: new users leak {held:.6f} bits, {held / max(fitted, 1e-12):.1f} times the in-sample "
               f"{fitted:.6f}: K = {metrics['clusters']} is too many clusters for {metrics['n']} users "
               "(try fewer, or --clusters auto with a target)", err=True)


def _seconds_by_stage(records: list[dict]) -> dict[str, float]:
    """Wall seconds per stage name, from :meth:`StageTimer.records` (a name seen twice is summed)."""
    seconds: dict[str, float] = {}
    for r in records:
        seconds[r["stage"]] = round(seconds.get(r["stage"], 0.0) + r["seconds"], 3)
    return seconds


def _recommender_options(mechanism, metric, missing, factors, factor_reg, *, partitioned: bool):
    """``--utility recommender``'s options; BuildError for a combination it cannot honour."""
    from ..mechanisms.recommender import RecommenderOptions
    if mechanism != "quantized" or (metric or "l2") != "l2" or missing != "mask":
        raise BuildError("--utility recommender maps latent taste with the quantized mechanism, the l2 metric "
                         "(stars) and blank cells as unrated (--missing mask)")
    if partitioned:
        raise BuildError("--utility recommender needs the training rows in memory (one CSV file)")
    return RecommenderOptions(rank=factors, reg=None if factor_reg == "auto" else factor_reg)


def _stage_bar(label: str):
    """A progress bar on stderr driven as a build's ``progress(stage, fraction)`` callback."""
    import contextlib

    @contextlib.contextmanager
    def bar_context():
        with click.progressbar(length=1000, label=label, file=sys.stderr, show_eta=False) as bar:
            def progress(stage, fraction):
                bar.label = f"{label}: {stage:<15}"
                bar.update(max(0, int(fraction * 1000) - bar.pos))
            yield progress
    return bar_context()


def _choose_auto(data, options, clusters, smoothing, target_leakage, target_auc, *, dataset=None,
                 search_delta=False):
    """Run the ``auto`` search with a progress bar and print its candidates on stderr. ``dataset``:
    the rows to search on (default: ``data`` read as a build reads it); ``search_delta``: try every
    candidate budget fraction with each K."""
    from ..mechanisms.quantized._autotune import (
        CANDIDATE_DELTA_FRACTIONS,
        CANDIDATE_SMOOTHING,
        choose,
        format_candidates,
    )
    from ..mechanisms.quantized._pipeline import load_training
    if dataset is None:
        dataset, _ = load_training(data, options)
    ss = CANDIDATE_SMOOTHING if smoothing == "auto" else (smoothing,)
    with click.progressbar(length=1000, label="auto: candidates", file=sys.stderr) as bar:
        choice = choose(dataset, options, clusters=None if clusters == "auto" else (clusters,), smoothing=ss,
                        target_leakage_bits=target_leakage, target_auc=target_auc,
                        delta_fractions=CANDIDATE_DELTA_FRACTIONS if search_delta else None,
                        progress=lambda done, total: bar.update(int(1000 * done / total) - bar.pos))
    click.echo(format_candidates(choice), err=True)
    if not any(c.get("meets_target") for c in choice.candidates):
        click.echo("warning: no candidate meets the privacy target; the least-leaking one was chosen", err=True)
    return choice


def _register_commands() -> None:
    from ._keyring import cosign, keygen, keyring
    from ._real import build_gaussian, build_nullspace
    from ._sanitize import sanitize
    from ._seed_builds import build_funnel, build_max_correlation
    from ._state import state
    from ._verify import inspect, verify
    for command in (keygen, build_funnel, build_max_correlation, build_gaussian, build_nullspace, verify, inspect,
                    sanitize, keyring, cosign, state):
        main.add_command(command)
    try:
        from ._eval import curve, evaluate
    except ImportError:  # the evaluation suite is not in this build
        return
    main.add_command(evaluate)
    main.add_command(curve)


_register_commands()
