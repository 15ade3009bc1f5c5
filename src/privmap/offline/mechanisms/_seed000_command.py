"""``privmap build DATA ...`` (also ``privmap build quantized`` and ``privmap build exact``): seed
000's two mechanisms, quantized (with ``--utility recommender``, the recommender) and exact, from
the command line to a signed bundle and its report.

The body of a build is options -> run -> report: :func:`seed000_options` turns the arguments into
the mechanism's options, each slice reading its own (``quantized.command_options``,
``exact.command_options``, and a model mode's around the quantized ones; the options check their
own rules), :func:`run` builds (in memory, or out of core on Dask) and :func:`report` signs,
writes and tells (text, or ``--json``). Each slice also holds its command's help.

What the two commands share lives here, above the quantized, exact, recommender and ranking
folders: one body builds all of them, and the model modes' packages stand on the quantized one's.
"""
from __future__ import annotations

import contextlib
import functools
import json
import math
import pathlib
import sys
import time
from collections.abc import Callable
from types import MappingProxyType

import click

from privmap.device.constants import MAX_RANK

from .. import _routed
from .._errors import BuildError
from .._files import atomic_write
from .._joint import COLUMN_FIGURES, by_column, column_key, payload_columns, split_private
from .._strongest import strongest_name
from ..bundle import payload_output_leakage
from ..commandline import (
    BUNDLE_SECTION,
    AutoOr,
    Columns,
    Section,
    SectionedCommand,
    bundle_options,
    data_options,
    emit,
    guard,
    header_options,
    json_option,
    load_key,
    sign_checked,
)
from ..data import Dataset, declare, read_schema_file, schema_json
from ..measures import exposure_line, payload_exposure
from . import exact, quantized, ranking, recommender
from ._seed000 import CrossFitting, OutputLimit, RobustCertificate
from .quantized import QuantizedOptions, format_candidates
from .table import IN_CORE_BYTES, OutOfCore, StageTimer, open_partitioned, run_partitioned, wants_partitioned

__all__ = ["quantized_command", "exact_command", "seed000_options", "run", "report", "robust_line", "column_lines",
           "private_columns", "parse_target_leakage", "SECTIONS"]

#: ``--mechanism``: seed 000's two mechanisms' options, by the payload ``mechanism`` they build.
MAPPINGS = MappingProxyType({options.mechanism: options for options in (QuantizedOptions, exact.ExactOptions)})
#: ``--utility``'s modes whose bundle carries a model between a user's row and the table's space
#: (each package's ``command_options``, ``report_line`` and ``REFUSED_MAPPING``), by its mechanism.
MODES = MappingProxyType({mode.MECHANISM: mode for mode in (recommender, ranking)})
#: Each options class -> the build it asks for (in memory).
BUILDS: MappingProxyType[type, Callable] = MappingProxyType({
    QuantizedOptions: quantized.build, exact.ExactOptions: exact.build,
    recommender.RecommenderOptions: recommender.build, ranking.RankingOptions: ranking.build})

#: ``privmap build --help``: its options by section, one line each (``--help-all`` gives the full help).
SECTIONS = (
    Section("Data", (
        ("private", "Private column, or COL1,COL2: their joint."),
        ("public", "Public columns, comma-separated (default: others)."),
        ("domains", "Declared domain, all columns or COL (repeatable)."),
        ("schema_file", "Column types, domains, missing tokens (JSON)."),
        ("schema_out", "Write the resolved schema here (JSON), to edit."),
        ("missing_token", "Text coding a missing answer, besides a blank."),
        ("missing", "Blank cells skipped or imputed (default: mask)."),
        ("workers", "Out of core: local Dask cluster of N workers."),
        ("scheduler", "Out of core: existing Dask cluster at ADDRESS."),
        ("kmeans", "Out of core k-means: minibatch|dask-ml|in-memory."),
        ("in_core_limit", "Map points up to MIB in memory (default: 1024)."),
    )),
    Section("Mapping", (
        ("mechanism", "quantized (k-means) or exact (default: quantized)."),
        ("utility", "rows, recommender (ratings), ranking (top-N)."),
        ("factors", "Model rank (recommender: 10, ranking: 32)."),
        ("factor_reg", "recommender: fold-in penalty, or auto (default)."),
        ("metric", "Distortion metric (default: l2; exact: erasures)."),
        ("clusters", "Clusters K, or auto: the best K meeting a target."),
        ("delta", "Distortion budget Delta, in the metric's unit."),
        ("delta_fraction", "Delta / perfect privacy's (auto: searched)."),
        ("seed", "Seed of k-means (default: 0)."),
        ("no_codebook", "Release the k-means representatives unmoved."),
        ("class_blind", "Cluster blind to the classes' mean differences."),
        ("smoothing", "Prior count smoothing, or auto (default: 0.0)."),
        ("prior", "p(a,c) from counts or classifier posteriors."),
        ("solver", "Certified fast solver or cvxpy (default: fast)."),
        ("bits", "Table rows sum to 2^BITS (default: 16)."),
    )),
    Section("Guarantees", (
        ("holdout_folds", "Folds of the new-user estimate (default: 5)."),
        ("target_leakage", "auto: new-user leakage BITS (or COL=BITS)."),
        ("target_auc", "auto: held-out attacker AUC to stay under."),
        ("allow_unmet", "auto: if no candidate meets it, build the nearest."),
        ("robust", "Certify the leakage over a set of priors."),
        ("max_output_leakage", "Limit every output's leakage to EPS bits."),
    )),
    BUNDLE_SECTION,
)

#: The options of a seed-000 build besides the bundle's (``commandline.bundle_options`` and the header's).
_DECORATORS = [
    click.argument("data", metavar="DATA", type=click.Path(path_type=pathlib.Path)),
    click.option("--private", "private", metavar="COL",
                 help="Private attribute column; several, comma-separated, are protected as their joint attribute "
                      "(each tuple of their values one class), and the bundle declares the leakage of the joint and "
                      "of each column alone."),
    click.option("--public", "public", type=Columns(), metavar="COLS",
                 help="Comma-separated public columns (default: all others)."),
    click.option(
        "--mechanism", type=click.Choice(["quantized", "exact"]), default="quantized", show_default=True,
        help="quantized: k-means representatives of numeric rows (Algorithm 2); exact: categorical tuples and their "
             "erasures (Algorithm 1), also 'privmap build exact'. Other mechanisms have their own commands (privmap "
             "build funnel, max-correlation, gaussian, nullspace)."),
    click.option("--utility", type=click.Choice(["rows", *MODES]), default="rows",
                 show_default=True,
                 help="rows: release a representative of the public rows (seed 000 as written); recommender: for "
                      "ratings with blank cells, map users' latent taste (a factor model fitted here, folded in on "
                      "the device) and release a full row of predicted ratings, distortion in stars "
                      "(docs/recommender.md); ranking: for rating or watch data with blank cells, map the direction "
                      "of users' item-item score rows (which items they rated, embedded on the device) and release "
                      "a full row of item scores a service ranks directly, higher = recommend sooner "
                      "(docs/ranking.md)."),
    click.option("--factors", type=click.IntRange(1, MAX_RANK), default=None, metavar="RANK",
                 help="--utility recommender: rank of the latent-factor model [default: 10]; --utility ranking: "
                      "rank of the score space [default: 32]."),
    click.option("--factor-reg", type=AutoOr(float, 1e-9), default="auto", show_default=True, metavar="REG|auto",
                 help="--utility recommender: ridge penalty of the factor model and the device's fold-in, or 'auto' "
                      "(least RMSE on 10% of the training ratings held back)."),
    click.option("--metric", type=click.Choice(["l2", "l1", "hamming", "erasures"]), default=None,
                 help="Distortion metric [default: l2 for quantized, erasures for exact]."),
    click.option("--clusters", "-k", type=AutoOr(int, 1), metavar="K|auto",
                 help="Number of clusters K (quantized), or 'auto': of K = 4, 8, ... up to what the data supports "
                      "(32 training rows per cluster, 4 with --prior posteriors), the least held-out distortion whose "
                      "new-user leakage meets the target (--target-leakage / --target-auc, default 1% of H(A)); the "
                      "candidates are printed."),
    click.option("--delta", type=float, help="Distortion budget Delta, in the metric's unit."),
    click.option("--delta-fraction", type=float,
                 help="Delta as a fraction of the perfect-privacy distortion (1.0 = zero leakage). With "
                      "--clusters auto and neither this nor --delta, the fraction is searched with K."),
    click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of k-means."),
    data_options,
    click.option("--schema", "schema_file", type=click.Path(dir_okay=False, path_type=pathlib.Path),
                 help="JSON schema file: per column type (integer|real), min, max, missing (bool), missing_token."),
    click.option("--schema-out", type=click.Path(dir_okay=False, path_type=pathlib.Path),
                 help="Write the resolved schema (declared + inferred) here as JSON, to edit and pass to --schema."),
    click.option("--missing", type=click.Choice(["mask", "impute"]), default="mask", show_default=True,
                 help="Missing answers (blank cells): mask = distances over observed cells; impute = column "
                      "training median, recorded in the bundle."),
    click.option("--solver", type=click.Choice(["fast", "cvxpy"]), default="fast", show_default=True,
                 help="fast: privmap's certified solver; cvxpy: Clarabel reference."),
    click.option("--bits", type=click.IntRange(1, 32), default=16, show_default=True,
                 help="Table weights sum to 2^BITS per row."),
    click.option("--smoothing", type=AutoOr(float, 0), default="0.0", show_default=True, metavar="S|auto",
                 help="Additive smoothing of the prior's counts, or 'auto' (chosen with the clusters, as above)."),
    click.option("--prior", "prior", type=click.Choice(["counts", "posteriors"]), default=None,
                 help="How p(a, c) is estimated: counts per cluster, or a logistic regression's cross-fitted "
                      "posteriors summed per cluster (steadier with few users per cluster; lets --clusters auto "
                      "try more clusters; users' points in memory, see --in-core-limit) [default: posteriors with "
                      "--utility recommender or ranking, else counts]."),
    click.option("--target-leakage", "target_leakage", multiple=True, metavar="BITS",
                 help="With 'auto': the new-user (cross-fitted) leakage to stay under; the least held-out distortion "
                      "within it wins, and the bundle declares that very figure [default: 0.01 x H(A)]. BITS applies "
                      "to the (joint) private attribute, COL=BITS to one private column alone; repeatable or "
                      "comma-separated, every target given is met."),
    click.option("--target-auc", type=click.FloatRange(0.0, 1.0), default=None, metavar="AUC",
                 help="With 'auto': the out-of-sample attacker ROC AUC to stay under, met by the strongest of three "
                      "attackers trained on each fold's releases and scored on the held-out rows' (the Bayes attacker "
                      "over the release alphabet, gradient boosting, logistic regression), by its 95% upper "
                      "confidence bound; combines with --target-leakage."),
    click.option("--allow-unmet", is_flag=True,
                 help="With 'auto': when no candidate meets the target, build the one nearest it by the target's own "
                      "measure (default: fail, writing no bundle)."),
    click.option("--no-codebook", is_flag=True,
                 help="Release the k-means representatives as they are (skip the codebook step that moves each "
                      "released row to the metric's optimum and re-solves)."),
    click.option("--class-blind/--no-class-blind", "class_blind", default=None,
                 help="Form the clusters with the private classes' mean differences projected out, so that they "
                      "split users by what the classes share (l2, rows without blanks, points in memory; the "
                      "device's lookup is unchanged) [default: off; with --utility recommender or ranking and "
                      "--clusters auto, both are searched and the least held-out distortion wins]."),
    click.option("--robust", "robust", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
                 metavar="CONFIDENCE",
                 help="Certify the leakage over a confidence set of priors (per-cluster L1 balls holding the "
                      "population's posteriors with this probability, e.g. 0.95), choose the table of least "
                      "certified worst case, and declare robust_leakage_bits (docs/guarantees.md)."),
    click.option("--holdout-folds", type=click.IntRange(min=0, max=20), default=5, show_default=True,
                 help="Folds of the cross-fitted (new-user) leakage estimate written into the bundle; 0 = skip."),
    click.option("--max-output-leakage", type=click.FloatRange(min=0, min_open=True), default=None, metavar="EPS",
                 help="Per-output limit in bits: every released output c^ keeps |log2 p(a|c^) - log2 p(a)| <= EPS "
                      "on the training prior (checked on the shipped integer table). The fast solver's table ships "
                      "when it meets the limit, else Clarabel solves under it by column generation "
                      "(docs/per-output-leakage.md); turns the codebook step off."),
    # Partitioned (out-of-core) build on Dask: needs the scale extra.
    click.option("--workers", metavar="N", type=click.IntRange(min=1), default=None,
                 help="Partitioned build on a local Dask cluster of N worker processes [default: 2]."),
    click.option("--scheduler", metavar="ADDRESS", default=None,
                 help="Partitioned build on the existing Dask cluster at ADDRESS (e.g. tcp://10.0.0.5:8786)."),
    click.option("--kmeans", type=click.Choice(["minibatch", "dask-ml", "in-memory"]), default="minibatch",
                 show_default=True, help="Partitioned build's k-means out of core: mini-batch over partitions, "
                 "dask-ml's scalable k-means, or the in-memory build's k-means on all rows gathered (small data)."),
    click.option("--in-core-limit", "in_core_limit", type=click.IntRange(min=0), default=IN_CORE_BYTES >> 20,
                 show_default=True, metavar="MIB",
                 help="Partitioned build: the users' points (the rows, or the factor or score points the workers "
                      "fold in; 8 bytes a coordinate) are mapped in memory, with every option of a one-file build, "
                      "while they take at most MIB; beyond, out of core (--clusters K, --prior counts, neither "
                      "--robust nor --class-blind). 0: always out of core."),
]

def _command(name: str, short_help: str, brief: str, doc: str, *, fixed: dict | None = None):
    """The seed-000 build command ``name``. ``fixed`` maps the options it leaves out to their
    values (``privmap build exact``: ``mechanism`` "exact", and the quantized mechanism's own
    options at their defaults, so its page shows only what applies)."""
    fixed = fixed or {}

    def command(data, **arguments):
        _build(data, **arguments, **defaults, **{k: v for k, v in fixed.items() if v is not _DEFAULT})

    command.__doc__ = doc
    for decorator in reversed([*_DECORATORS, bundle_options, header_options, json_option, guard]):
        command = decorator(command)
    built = click.command(name, cls=SectionedCommand, short_help=short_help, brief=brief, sections=tuple(
        Section(s.title, tuple(o for o in s.options if o[0] not in fixed)) for s in SECTIONS))(command)
    left_out = [p for p in built.params if p.name in fixed and fixed[p.name] is _DEFAULT]
    defaults = click.Command(name, params=left_out).make_context(name, []).params   # as click fills them in
    built.params = [p for p in built.params if p.name not in fixed]
    return built


#: In :func:`_command`'s ``fixed``: the option left out at its default.
_DEFAULT = object()


def _build(data, *, private, public, mechanism, utility, factors, factor_reg, metric, clusters, delta, delta_fraction,
           key, out, seed, domains, schema_file, missing_token, schema_out, missing, solver, bits, smoothing, prior,
           target_leakage, target_auc, no_codebook, class_blind, robust, holdout_folds, max_output_leakage, header,
           as_json, passphrase_file, workers, scheduler, kmeans, in_core_limit=IN_CORE_BYTES >> 20,
           allow_unmet=False):
    """The command's body: options, run, report."""
    partitioned = wants_partitioned(data, workers, scheduler)
    private = private_columns(private, public)
    declared = (declare(read_schema_file(schema_file) if schema_file else None, domains, missing_token)
                if (schema_file or domains or missing_token is not None) else None)
    options = seed000_options(
        mechanism, utility, private=private, partitioned=partitioned, metric=metric, clusters=clusters, delta=delta,
        delta_fraction=delta_fraction, seed=seed, declared=declared, missing_token=missing_token, missing=missing,
        solver=solver, bits=bits, smoothing=smoothing, prior=prior, target_leakage=target_leakage,
        target_auc=target_auc, no_codebook=no_codebook, class_blind=class_blind, robust=robust,
        holdout_folds=holdout_folds, max_output_leakage=max_output_leakage, factors=factors, factor_reg=factor_reg,
        header=header,
        allow_unmet=allow_unmet)
    out_of_core = _out_of_core(options, scratch=out.resolve().parent)
    source = (open_partitioned(data, options, out_of_core, private=private, public=public, kmeans=kmeans,
                               in_core_bytes=in_core_limit << 20) if partitioned else None)
    private_key = load_key(key, passphrase_file)
    started = time.perf_counter()
    _routed.clear()
    if source is not None:
        timer = StageTimer()
        result = run_partitioned(source, options, out_of_core, workers=workers, scheduler=scheduler, kmeans=kmeans,
                                 progress=timer, in_core_bytes=in_core_limit << 20)
    else:
        result, timer = run(data, options, private=private, public=public)
    report(result, timer, private_key=private_key, out=out, schema_out=schema_out, started=started,
           as_json=as_json, utility=utility)


def _out_of_core(options, *, scratch) -> OutOfCore:
    """The build out of core of ``options``' mode (a model mode's temporary points in ``scratch``)."""
    mode = (ranking if isinstance(options, ranking.RankingOptions)
            else recommender if isinstance(options, recommender.RecommenderOptions) else None)
    build = (functools.partial(mode.build_partitioned, scratch=scratch) if mode is not None
             else quantized.build_partitioned)
    return OutOfCore(build, quantized.check_out_of_core)


def seed000_options(mechanism: str, utility: str, *, private, partitioned: bool, metric, clusters, delta,
                    delta_fraction, seed, declared, missing_token, missing, solver, bits, smoothing, prior,
                    target_leakage, target_auc, no_codebook, robust, holdout_folds, max_output_leakage, factors,
                    factor_reg, header, class_blind=None,
                    allow_unmet=False):
    """The options of the mechanism the arguments ask for: :class:`QuantizedOptions`,
    :class:`ExactOptions`, or (``utility`` "recommender" or "ranking") :class:`RecommenderOptions`
    or :class:`~privmap.offline.mechanisms.ranking.RankingOptions` around the quantized ones; each
    checks its own rules at construction.

    Raises
    ------
    BuildError
        No private column; an argument the asked-for mechanism has no option for (``auto``, a
        metric or declared domains with exact; the recommender with exact); anything the options
        refuse. (A partitioned build's own refusals come with its source: ``open_partitioned``.)
    """
    if missing_token is not None and not MAPPINGS[mechanism].quantizes:
        raise BuildError(f"--missing-token applies to the quantized mechanism's numeric columns, not {mechanism}")
    if not private:
        raise BuildError(f"--mechanism {mechanism} needs --private COL")
    joint_target, column_targets = parse_target_leakage(target_leakage)
    auto = clusters == "auto" or smoothing == "auto"
    if allow_unmet and not auto:
        raise BuildError("--allow-unmet applies to a search for a target (--clusters auto or --smoothing auto)")
    fitting = CrossFitting(folds=holdout_folds) if holdout_folds else None
    certificate = RobustCertificate(confidence=robust) if robust is not None else None
    limit = OutputLimit(bits=max_output_leakage) if max_output_leakage is not None else None
    mode = MODES.get(utility)
    guarantees = {"cross_fitting": fitting, "robust": certificate, "output_limit": limit}
    budget = {"delta": delta, "delta_fraction": delta_fraction, "seed": seed, "solver": solver, "bits": bits}
    if not MAPPINGS[mechanism].quantizes:
        return exact.command_options(auto=auto, class_blind=class_blind, mode=mode, metric=metric, declared=declared,
                                     prior=prior, smoothing=smoothing, **budget, **guarantees, header=header)
    mapping = quantized.command_options(
        metric=metric, clusters=clusters, smoothing=smoothing, prior=prior, modal=mode is not None,
        no_codebook=no_codebook, max_output_leakage=max_output_leakage, missing=missing, declared=declared,
        class_blind=class_blind, auto=auto, joint_target=joint_target, target_auc=target_auc,
        column_targets=column_targets, allow_unmet=allow_unmet, **budget, **guarantees, header=header)
    return mapping if mode is None else mode.command_options(mapping, factors=factors, factor_reg=factor_reg)


def private_columns(private, public=None):
    """``--private``'s value as :func:`privmap.offline.data.load_dataset` takes it: the column name,
    or the tuple of several (their joint attribute); None when none is given. What the names
    alone decide is checked here, before any row is read.

    Raises
    ------
    BuildError
        A column named twice, or also among the ``public`` columns.
    """
    if not private:
        return None
    names = split_private(private)
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:
        raise BuildError(f"--private: column {twice!r} is named twice")
    both = next((n for n in names if n in (public or ())), None)
    if both is not None:
        raise BuildError(f"column {both!r} cannot be both private and public")
    return names[0] if len(names) == 1 else names


def parse_target_leakage(values) -> tuple[float | None, tuple[tuple[str, float], ...]]:
    """``--target-leakage`` values (each ``BITS`` or ``COL=BITS``, comma-separated) as the joint's
    target and the ``(column, bits)`` pairs.

    Raises
    ------
    BuildError
        A value that is not a number of bits >= 0, or two joint targets.
    """
    joint, columns = None, []
    for value in values or ():
        for item in (v.strip() for v in str(value).split(",")):
            if not item:
                continue
            column, _, text = item.rpartition("=")
            try:
                bits = float(text)
            except ValueError:
                raise BuildError(f"--target-leakage {item!r}: expected BITS or COL=BITS") from None
            if not (math.isfinite(bits) and bits >= 0):
                raise BuildError(f"--target-leakage {item!r}: bits must be a finite number >= 0")
            if column.strip():
                columns.append((column.strip(), bits))
            elif joint is not None:
                raise BuildError("--target-leakage: the joint's target is given twice")
            else:
                joint = bits
    return joint, tuple(columns)


def run(data, options, *, private, public) -> tuple:
    """Read DATA's rows (timed as the stage ``load``) and build them in memory with the mechanism
    of ``options``, its progress drawn on stderr: the
    :class:`~privmap.offline.mechanisms.Result` and the :class:`StageTimer` that timed it. Raises
    as the reading and the build."""
    mapping = getattr(options, "mapping", options)          # a recommender's or ranking's mapping options
    declared = getattr(mapping, "declared", None)
    build = BUILDS[type(options)]
    with _stage_bar("build") as progress:
        timer = StageTimer(progress)
        timer("load", 0.0)
        dataset = Dataset.from_csv(data, private=private, public=public, categorical=not mapping.quantizes,
                                   missing_tokens=declared.missing_tokens() if declared else None)
        return build(dataset, options, progress=timer), timer


#: The share of the bar an ``auto`` search fills (it takes most of such a build's time); the
#: chosen candidate's build fills the rest.
SEARCH_SHARE = 0.9


@contextlib.contextmanager
def _stage_bar(label: str):
    """A progress bar on stderr driven as a build's ``progress(stage, fraction[, detail])``
    callback. The ``auto-search`` stage tells its own fraction and where it is (``detail``): it
    fills :data:`SEARCH_SHARE` of the bar, and the build's stages after it the rest. The detail is
    drawn on a terminal only: elsewhere click writes a line each time the label changes, and a
    log gets one line per stage, not one per task."""
    searched, terminal = False, sys.stderr.isatty()
    with click.progressbar(length=1000, label=label, file=sys.stderr, show_eta=False, width=20) as bar:
        def progress(stage, fraction, detail=None):
            nonlocal searched
            if stage == "auto-search":
                searched, fraction = True, SEARCH_SHARE * fraction
            elif searched:
                fraction = SEARCH_SHARE + (1 - SEARCH_SHARE) * fraction
            bar.label = f"{label}: {stage:<15}" + (f" {detail}" if detail and terminal else "")
            bar.update(max(0, int(fraction * 1000) - bar.pos))
        yield progress


def report(result, timer: StageTimer, *, private_key, out: pathlib.Path, schema_out, started: float, as_json: bool,
           utility: str) -> None:
    """Sign the build (timed as the stage ``encode-sign``), check it as a device would, write the
    resolved schema and the bundle, and tell: notes and warnings on stderr, the summary as text
    or one JSON object."""
    built = result.detail
    timer("encode-sign", 1.0)
    bundle_bytes = sign_checked(result.payload, private_key)
    schema = built.alphabet.schema
    if schema_out is not None:
        atomic_write(schema_out, (json.dumps(schema_json(schema), indent=2) + "\n").encode("utf-8"))
    fitted = getattr(built, "fitted", None)
    _notes(schema, fitted, built.dropped_rows)
    atomic_write(out, bundle_bytes)
    timer.close()
    seconds = time.perf_counter() - started
    stages = timer.records()
    metrics = result.payload["metrics"]
    summary = {"out": str(out), "bytes": len(bundle_bytes), "build_seconds": round(seconds, 3),
               **{k: metrics[k] for k in ("leakage_before_bits", "leakage_bits", "distortion", "delta", "r",
                                          "delta_plus_r", "clusters", "n", "perfect_privacy_distortion",
                                          "measured_distortion", "leakage_change_bits")},
               "solver": built.solved.solver, "stage_seconds": _seconds_by_stage(stages),
               "stages": stages,
               "quantization_distortion": metrics["quantization_distortion"]}
    if math.isfinite(built.solved.gap_bits):
        summary["solver_gap_bits"] = built.solved.gap_bits
    summary["max_output_leakage_bits"], summary["max_output_leakage_note"] = payload_output_leakage(result.payload)
    summary.update(payload_exposure(result.payload))
    summary.update({k: v for k, v in metrics.items()
                    if k.startswith(("holdout_", "codebook_", "robust_", "max_output_", "factor_", "rating_", "score_"))
                    and "[" not in k})
    if "holdout_attacker_auc" in metrics:
        summary["holdout_attacker"] = strongest_name(metrics)
    columns = payload_columns(result.payload)
    if columns is not None:          # several private columns: each one's figures, by name
        summary["private_columns"] = list(columns.names)
        summary.update({f"{figure}_by_column": found for figure in COLUMN_FIGURES
                        if (found := by_column(metrics, figure, columns.names)) is not None})
    summary["utility"] = utility
    routed = _routed.summary()
    if routed is not None:
        click.echo(routed, err=True)
    if built.choice is not None:
        click.echo(format_candidates(built.choice), err=True)
        _note_auc_floor(built.dataset, built.choice.target_auc)
        if not any(c.get("meets_target") for c in built.choice.candidates):
            click.echo("warning: " + built.choice.unmet_message(shipped=True), err=True)
        summary["auto"] = built.choice.summary()
    _warn_new_user_leakage(metrics, searched=built.choice is not None)
    _warn_mostly_blank(metrics, recommender=fitted is not None)
    if as_json:
        emit(summary)
        return
    searched = "".join(f", the auto search {r['seconds']:.2f} s of it" for r in stages
                       if r["stage"] == "auto-search")
    click.echo(f"wrote {out} ({len(bundle_bytes)} bytes) in {seconds:.2f} s{searched}")
    click.echo(f"  leakage I(A;C^): {metrics['leakage_bits']:.6f} bits "
               f"(before the mapping: {metrics['leakage_before_bits']:.6f} bits)")
    where = "raw rows (codebook step)" if "codebook_iterations" in metrics else "clusters"
    click.echo(f"  distortion: {metrics['distortion']:.4f} on {where} (Delta = {metrics['delta']:.4f}); "
               f"measured on data {metrics['measured_distortion']:.4f} <= Delta + r = {metrics['delta_plus_r']:.4f}")
    mode = MODES.get(utility)
    if mode is not None:
        click.echo(mode.report_line(metrics, result.payload["provenance"]))
    click.echo(f"  K = {metrics['clusters']}, n = {metrics['n']}, perfect privacy at Delta = "
               f"{metrics['perfect_privacy_distortion']:.4f}, solver {built.solved.solver}")
    if "codebook_iterations" in metrics:
        click.echo(f"  codebook step: distortion on data {metrics['codebook_start_distortion']:.4f} -> "
                   f"{metrics['measured_distortion']:.4f}, leakage {metrics['codebook_start_leakage_bits']:.6f} -> "
                   f"{metrics['leakage_bits']:.6f} bits in {metrics['codebook_iterations']} rounds "
                   f"(rounding to valid values cost {metrics['codebook_rounding_cost']:.4f})")
    if "robust_leakage_bits" in metrics:
        click.echo("  " + robust_line(metrics))
    eps = summary["max_output_leakage_bits"]
    click.echo("  per-output leakage: " + (summary["max_output_leakage_note"] if eps is None else
                                           f"{eps:.6f} bits (max over outputs and classes of |log2 p(a|c^)/p(a)|)")
               + (f" <= limit {metrics['max_output_leakage_limit_bits']:g}"
                  if "max_output_leakage_limit_bits" in metrics else ""))
    if (exposure := exposure_line(summary)) is not None:
        click.echo("  " + exposure)
    if "holdout_leakage_bits" in metrics:
        click.echo(f"  new users ({metrics['holdout_folds']}-fold cross-fitted): leakage "
                   f"{metrics['holdout_leakage_bits']:.6f} bits [{metrics['holdout_leakage_low_bits']:.6f}, "
                   f"{metrics['holdout_leakage_high_bits']:.6f}] (in-sample {metrics['leakage_bits']:.6f}), "
                   f"distortion {metrics['holdout_distortion']:.4f}")
    if columns is not None:
        click.echo(column_lines(metrics, columns.names))


def column_lines(metrics: dict, names) -> str:
    """Each private column's leakage alone, one line each (a joint bundle's build report and
    ``privmap inspect``): in-sample, before the mapping, and cross-fitted with its interval."""
    lines = []
    for name in names:
        figure = {f: metrics.get(column_key(f, name)) for f in COLUMN_FIGURES}
        line = (f"  column {name!r} alone: I(A_i;C^) {figure['leakage_bits']:.6f} bits (before the mapping "
                f"{figure['leakage_before_bits']:.6f})")
        if figure["holdout_leakage_bits"] is not None:
            line += (f", new users {figure['holdout_leakage_bits']:.6f} [{figure['holdout_leakage_low_bits']:.6f}, "
                     f"{figure['holdout_leakage_high_bits']:.6f}]")
        lines.append(line)
    return "\n".join(lines)


def robust_line(figures: dict) -> str:
    """One line for the robust figures (the build's report, ``privmap inspect``)."""
    epsilon = figures.get("robust_max_output_leakage_bits")
    return (f"certified over the {100 * figures['robust_confidence']:g}% confidence set of priors: "
            f"leakage <= {figures['robust_leakage_bits']:.6f} bits, per-output epsilon "
            + (f"<= {epsilon:.4f} bits" if epsilon is not None else "unbounded (a posterior may reach 0)"))


#: Column names a note on inferred domains lists per domain (the schema --schema-out writes has all).
NOTE_NAMES = 8


def _notes(schema, fitted, dropped_rows: int) -> None:
    """What the build inferred or left out, on stderr: the rating domain (recommender: ``fitted``,
    its :class:`~privmap.offline.mechanisms.recommender.RatingModel`) or the column domains, and
    rows with every public cell missing."""
    if fitted is not None and fitted.inferred:
        click.echo(f"note: the rating domain was inferred from the data: [{fitted.lo:g}, {fitted.hi:g}]; "
                   "devices refuse ratings outside it and release inside it (declare it with --domain LO:HI)",
                   err=True)
    inferred = [c for c in schema if "domain" in c.inferred] if fitted is None else []
    if inferred:
        click.echo(f"note: {len(inferred)} column domain(s) inferred from the data; devices refuse values "
                   "outside them (declare with --domain or --schema; --schema-out saves this schema):", err=True)
        groups: dict = {}
        for c in inferred:
            groups.setdefault(f"{'integer' if c.integer else 'real'} [{c.min}, {c.max}]", []).append(c.name)
        for domain, names in groups.items():
            shown = ", ".join(names[:NOTE_NAMES]) + (f" and {len(names) - NOTE_NAMES} more" if len(names) > NOTE_NAMES
                                                      else "")
            click.echo(f"  {domain}: {shown}", err=True)
    if dropped_rows:
        click.echo(f"note: {dropped_rows} row(s) with every public cell missing left out", err=True)


#: A declared new-user leakage at least this many times the in-sample one (and above it by
#: :data:`OVERFIT_MIN_GAP_BITS`) is flagged: the prior was fitted to the training users more
#: closely than it describes anyone else, and fewer clusters would serve new users better.
OVERFIT_RATIO = 3.0
OVERFIT_MIN_GAP_BITS = 1e-3


def _warn_new_user_leakage(metrics: dict, *, searched: bool = False) -> None:
    """Say on stderr when the cross-fitted leakage is several times the in-sample one, with the
    advice that fits the build: a warning, fewer clusters or the ``auto`` search, for a build at a
    given K; a note for one the search chose (``searched``: it judged every candidate by that very
    figure), that the declared figure is the new users' and what narrows the gap."""
    held, fitted = metrics.get("holdout_leakage_bits"), metrics["leakage_bits"]
    if held is None or held - fitted < OVERFIT_MIN_GAP_BITS or held < OVERFIT_RATIO * fitted:
        return
    advice = ("the search held the new users' figure (the one declared) to its target; more users per cluster, "
              "or a stricter target, would narrow the gap" if searched else
              f"K = {metrics['clusters']} is too many clusters for {metrics['n']} users "
              "(try fewer, or --clusters auto with a target)")
    click.echo(f"{'note' if searched else 'warning'}: new users leak {held:.6f} bits, "
               f"{held / max(fitted, 1e-12):.1f} times the in-sample {fitted:.6f}: {advice}", err=True)


def _note_auc_floor(dataset, target_auc: float | None) -> None:
    """With an AUC target, say on stderr what the users allow: the upper AUC bound of a varied
    release that tells nothing (:func:`privmap.offline.mechanisms.quantized.chance_auc_high`; a
    build whose users cannot go under the target refuses before its search)."""
    import numpy as np
    if target_auc is None:
        return
    counts = np.bincount(dataset.private, minlength=len(dataset.classes))
    if counts.min() == 0:
        return
    click.echo(f"note: {int(counts.sum()):,} users in {len(counts)} classes (the smallest {int(counts.min()):,}): "
               f"a varied release that tells an attacker nothing is bounded by AUC <= "
               f"{quantized.chance_auc_high(counts):.4f}, under the target {target_auc:g}", err=True)


#: A rows build on data with more than this fraction of its public cells blank is told of the
#: recommender mode: such data is usually ratings, whose blanks mean "not rated".
MOSTLY_BLANK = 0.5


def _warn_mostly_blank(metrics: dict, *, recommender: bool) -> None:
    """Say on stderr when a rows build's data is mostly blank cells, and what fits such data."""
    blank = metrics.get("missing_cell_fraction", 0.0)
    if recommender or blank <= MOSTLY_BLANK:
        return
    click.echo(f"warning: {100 * blank:.0f} % of the public cells are blank: if they are unrated items, "
               "--utility recommender releases latent taste as full rows (this build releases rows with their "
               "blanks mapped as missing answers)", err=True)


def _seconds_by_stage(records: list[dict]) -> dict[str, float]:
    """Wall seconds per stage name, from :meth:`StageTimer.records` (a name seen twice is summed)."""
    seconds: dict[str, float] = {}
    for r in records:
        seconds[r["stage"]] = round(seconds.get(r["stage"], 0.0) + r["seconds"], 3)
    return seconds

#: ``privmap build DATA ...`` and ``privmap build quantized``: quantized, or (``--mechanism exact``) exact.
quantized_command = _command("quantized", quantized.SHORT_HELP, quantized.BRIEF, quantized.DOC)
#: ``privmap build exact``: categorical tuples and their erasures, without the quantized mechanism's options.
exact_command = _command("exact", exact.SHORT_HELP, exact.BRIEF, exact.DOC, fixed={
    "mechanism": exact.ExactOptions.mechanism, **dict.fromkeys(exact.LEFT_OUT, _DEFAULT)})
