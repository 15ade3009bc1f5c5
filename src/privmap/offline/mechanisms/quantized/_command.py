"""``privmap build quantized``, also ``privmap build DATA ...``: seed 000's quantized mechanism.

The command takes it from the command line to a signed bundle and its report, with the modes and
mechanisms its ``--utility`` and ``--mechanism`` choose, handed in by the registry.

The command is :func:`command_with`: the modes (:class:`Mode`: the recommender's and ranking's
``MODE``) and the other table mechanisms it builds instead (:class:`Alternative`: the exact
one's ``ALTERNATIVE``) are passed in, so this slice imports none of them (they stand on it). Its
body reads options -> run -> report: :func:`quantized_options` (and a mode's or an alternative's
around or instead of them), the table engine's :func:`~privmap.offline.mechanisms.table.run` and
:func:`~privmap.offline.mechanisms.table.report`, with what only this command tells (the ``auto``
search's candidates) handed to the report.
"""
from __future__ import annotations

import functools
import math
import pathlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import click

from privmap.device.constants import MAX_RANK

from ..._errors import BuildError
from ...commandline import AutoOr, data_options
from ...data import declare, read_schema_file
from ..table import (
    IN_CORE_BYTES,
    TABLE_OPTIONS,
    OutOfCore,
    Placement,
    TableOption,
    Told,
    needs_private,
    private_columns,
    report,
    run,
    table_command,
    table_keywords,
)
from ._autotune import format_candidates
from ._build import build, build_partitioned, check_out_of_core
from ._enough import chance_auc_high
from ._options import Auto, QuantizedOptions

__all__ = ["command_with", "Mode", "Alternative", "quantized_options", "parse_target_leakage", "SHORT_HELP", "BRIEF",
           "DOC"]


@dataclass(frozen=True)
class Mode:
    """A ``--utility`` mode of the command: a model between a user's row and the table's space.

    The points in that space are mapped with the quantized mechanism's options.

    Parameters
    ----------
    name : str
        ``--utility NAME``, the payload's ``mechanism``.
    help : str
        Its part of ``--utility``'s full help (``NAME: what it releases``).
    options : callable
        ``options(mapping, *, factors, factor_reg)``: its options around the quantized ``mapping``
        (``--factors`` None: its default rank; ``--factor-reg`` a penalty or ``"auto"``).
    build : callable
        ``build(dataset, options, *, progress) -> Result``, in memory.
    build_partitioned : callable
        ``build_partitioned(src, options, client, *, kmeans, progress, dask_progress, scratch,
        in_core_bytes) -> Result``, out of core (its temporary points in ``scratch``).
    report_line : callable
        ``report_line(metrics, provenance) -> str``: the build report's line on its model.
    refused_mapping : str
        Why it maps with the quantized mechanism only (an alternative refuses it with this).
    """

    name: str
    help: str
    options: Callable
    build: Callable
    build_partitioned: Callable
    report_line: Callable[[dict, dict], str]
    refused_mapping: str


@dataclass(frozen=True)
class Alternative:
    """Another table mechanism the command builds instead (``--mechanism NAME``).

    Parameters
    ----------
    name : str
        ``--mechanism NAME``, the payload's ``mechanism``.
    help : str
        Its part of ``--mechanism``'s full help (``NAME: its alphabet``).
    options : callable
        ``options(*, auto, class_blind, mode, metric, declared, prior, smoothing, table)``: its
        options from the command's arguments (``auto``: whether ``auto`` clusters or smoothing
        were asked for; ``mode``: the ``--utility`` mode, or None; ``table``: the table options'
        keywords, :func:`table_keywords`), refusing what only the quantized mechanism has.
    build : callable
        ``build(dataset, options, *, progress) -> Result``, in memory (it has no build out of core).
    """

    name: str
    help: str
    options: Callable
    build: Callable


#: ``privmap build --help``'s line on ``privmap build quantized``.
SHORT_HELP = "Seed 000's mapping on k-means representatives."
#: The head of ``privmap build --help`` (``{command}``: the command's name as typed).
BRIEF = (
    "\b\n"
    "Build a seed-000 bundle from labelled DATA (CSV, or Parquet parts). Example:\n"
    "  {command} ratings.csv --private gender --clusters 64 \\\n"
    "      --delta-fraction 0.5 --key keys/private.pem --out ratings.bundle")
#: The command's full help (its docstring).
DOC = """Build a seed-000 bundle (quantized, or exact) from labelled data DATA.

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
--scheduler). Other mechanisms: privmap build funnel, max-correlation,
gaussian, nullspace (privmap build --help lists them).
"""


#: This command's own options, besides :data:`~privmap.offline.mechanisms.table.TABLE_OPTIONS`
#: (``mechanism`` and ``utility`` are made from the alternatives and modes handed in).
OPTIONS = MappingProxyType({
    "factors": TableOption(click.option(
        "--factors", type=click.IntRange(1, MAX_RANK), default=None, metavar="RANK",
        help="--utility recommender: rank of the latent-factor model [default: 10]; --utility ranking: rank of the "
             "score space [default: 32]."),
        "Model rank (recommender: 10, ranking: 32)."),
    "factor_reg": TableOption(click.option(
        "--factor-reg", type=AutoOr(float, 1e-9), default="auto", show_default=True, metavar="REG|auto",
        help="--utility recommender: ridge penalty of the factor model and the device's fold-in, or 'auto' (least "
             "RMSE on 10% of the training ratings held back)."),
        "recommender: fold-in penalty, or auto (default)."),
    "metric": TableOption(click.option(
        "--metric", type=click.Choice(["l2", "l1", "hamming", "erasures"]), default=None,
        help="Distortion metric [default: l2 for quantized, erasures for exact]."),
        "Distortion metric (default: l2; exact: erasures)."),
    "clusters": TableOption(click.option(
        "--clusters", "-k", type=AutoOr(int, 1), metavar="K|auto",
        help="Number of clusters K (quantized), or 'auto': of K = 4, 8, ... up to what the data supports (32 training "
             "rows per cluster, 4 with --prior posteriors), the least held-out distortion whose new-user leakage meets "
             "the target (--target-leakage / --target-auc, default 1% of H(A)); the candidates are printed."),
        "Clusters K, or auto: the best K meeting a target."),
    "domains": TableOption(data_options, "Declared domain, all columns or COL (repeatable)."),
    "missing_token": TableOption(None, "Text coding a missing answer, besides a blank."),     # data_options' too
    "schema_file": TableOption(click.option(
        "--schema", "schema_file", type=click.Path(dir_okay=False, path_type=pathlib.Path),
        help="JSON schema file: per column type (integer|real), min, max, missing (bool), missing_token."),
        "Column types, domains, missing tokens (JSON)."),
    "schema_out": TableOption(click.option(
        "--schema-out", type=click.Path(dir_okay=False, path_type=pathlib.Path),
        help="Write the resolved schema (declared + inferred) here as JSON, to edit and pass to --schema."),
        "Write the resolved schema here (JSON), to edit."),
    "missing": TableOption(click.option(
        "--missing", type=click.Choice(["mask", "impute"]), default="mask", show_default=True,
        help="Missing answers (blank cells): mask = distances over observed cells; impute = column training median, "
             "recorded in the bundle."),
        "Blank cells skipped or imputed (default: mask)."),
    "prior": TableOption(click.option(
        "--prior", "prior", type=click.Choice(["counts", "posteriors"]), default=None,
        help="How p(a, c) is estimated: counts per cluster, or a logistic regression's cross-fitted posteriors summed "
             "per cluster (steadier with few users per cluster; lets --clusters auto try more clusters; users' points "
             "in memory, see --in-core-limit) [default: posteriors with --utility recommender or ranking, else "
             "counts]."),
        "p(a,c) from counts or classifier posteriors."),
    "target_leakage": TableOption(click.option(
        "--target-leakage", "target_leakage", multiple=True, metavar="BITS",
        help="With 'auto': the new-user (cross-fitted) leakage to stay under; the least held-out distortion within it "
             "wins, and the bundle declares that very figure [default: 0.01 x H(A)]. BITS applies to the (joint) "
             "private attribute, COL=BITS to one private column alone; repeatable or comma-separated, every target "
             "given is met."),
        "auto: new-user leakage BITS (or COL=BITS)."),
    "target_auc": TableOption(click.option(
        "--target-auc", type=click.FloatRange(0.0, 1.0), default=None, metavar="AUC",
        help="With 'auto': the out-of-sample attacker ROC AUC to stay under, met by the strongest of three attackers "
             "trained on each fold's releases and scored on the held-out rows' (the Bayes attacker over the release "
             "alphabet, gradient boosting, logistic regression), by its 95% upper confidence bound; combines with "
             "--target-leakage."),
        "auto: held-out attacker AUC to stay under."),
    "allow_unmet": TableOption(click.option(
        "--allow-unmet", is_flag=True,
        help="With 'auto': when no candidate meets the target, build the one nearest it by the target's own measure "
             "(default: fail, writing no bundle)."),
        "auto: if no candidate meets it, build the nearest."),
    "no_codebook": TableOption(click.option(
        "--no-codebook", is_flag=True,
        help="Release the k-means representatives as they are (skip the codebook step that moves each released row "
             "to the metric's optimum and re-solves)."),
        "Release the k-means representatives unmoved."),
    "class_blind": TableOption(click.option(
        "--class-blind/--no-class-blind", "class_blind", default=None,
        help="Form the clusters with the private classes' mean differences projected out, so that they split users "
             "by what the classes share (l2, rows without blanks, points in memory; the device's lookup is "
             "unchanged) [default: off; with --utility recommender or ranking and --clusters auto, both are searched "
             "and the least held-out distortion wins]."),
        "Cluster blind to the classes' mean differences."),
    # Partitioned (out-of-core) build on Dask: needs the scale extra.
    "workers": TableOption(click.option(
        "--workers", metavar="N", type=click.IntRange(min=1), default=None,
        help="Partitioned build on a local Dask cluster of N worker processes [default: 2]."),
        "Out of core: local Dask cluster of N workers."),
    "scheduler": TableOption(click.option(
        "--scheduler", metavar="ADDRESS", default=None,
        help="Partitioned build on the existing Dask cluster at ADDRESS (e.g. tcp://10.0.0.5:8786)."),
        "Out of core: existing Dask cluster at ADDRESS."),
    "kmeans": TableOption(click.option(
        "--kmeans", type=click.Choice(["minibatch", "dask-ml", "in-memory"]), default="minibatch", show_default=True,
        help="Partitioned build's k-means out of core: mini-batch over partitions, dask-ml's scalable k-means, or the "
             "in-memory build's k-means on all rows gathered (small data)."),
        "Out of core k-means: minibatch|dask-ml|in-memory."),
    "in_core_limit": TableOption(click.option(
        "--in-core-limit", "in_core_limit", type=click.IntRange(min=0), default=IN_CORE_BYTES >> 20, show_default=True,
        metavar="MIB",
        help="Partitioned build: the users' points (the rows, or the factor or score points the workers fold in; 8 "
             "bytes a coordinate) are mapped in memory, with every option of a one-file build, while they take at "
             "most MIB; beyond, out of core (--clusters K, --prior counts, neither --robust nor --class-blind). 0: "
             "always out of core."),
        "Map points up to MIB in memory (default: 1024)."),
})
#: The command's parameters, in the order ``--help-all`` lists them.
PARAMETERS = ("private", "public", "mechanism", "utility", "factors", "factor_reg", "metric", "clusters",
              "delta", "delta_fraction", "seed", "domains", "missing_token", "schema_file", "schema_out", "missing",
              "solver", "bits", "smoothing", "prior", "target_leakage", "target_auc", "allow_unmet", "no_codebook",
              "class_blind", "robust", "holdout_folds", "max_output_leakage", "workers", "scheduler", "kmeans",
              "in_core_limit")
#: ``privmap build --help``: its options by section, one line each (``--help-all`` gives the full help).
SECTIONS = (
    ("Data", ("private", "public", "domains", "schema_file", "schema_out", "missing_token", "missing", "workers",
              "scheduler", "kmeans", "in_core_limit")),
    ("Mapping", ("mechanism", "utility", "factors", "factor_reg", "metric", "clusters", "delta", "delta_fraction",
                 "seed", "no_codebook", "class_blind", "smoothing", "prior", "solver", "bits")),
    ("Guarantees", ("holdout_folds", "target_leakage", "target_auc", "allow_unmet", "robust", "max_output_leakage")),
)


def _choices(modes: Sequence[Mode], alternatives: Sequence[Alternative]) -> dict[str, TableOption]:
    """``--mechanism`` (this one, or an alternative) and ``--utility`` (rows, or a mode)."""
    return {
        "mechanism": TableOption(click.option(
            "--mechanism", type=click.Choice([QuantizedOptions.mechanism, *(a.name for a in alternatives)]),
            default=QuantizedOptions.mechanism, show_default=True,
            help="; ".join(["quantized: k-means representatives of numeric rows (Algorithm 2)",
                            *(a.help for a in alternatives)])
            + ". Other mechanisms have their own commands (privmap build funnel, max-correlation, gaussian, "
              "nullspace)."),
            "quantized (k-means) or exact (default: quantized)."),
        "utility": TableOption(click.option(
            "--utility", type=click.Choice(["rows", *(m.name for m in modes)]), default="rows", show_default=True,
            help="; ".join(["rows: release a representative of the public rows (seed 000 as written)",
                            *(m.help for m in modes)]) + "."),
            "rows, recommender (ratings), ranking (top-N)."),
    }


def command_with(*, modes: Sequence[Mode] = (), alternatives: Sequence[Alternative] = ()) -> click.Command:
    """``privmap build quantized``, with the modes and alternatives it is handed.

    Its ``--utility`` chooses among rows and ``modes``, its ``--mechanism`` among the quantized
    mechanism and ``alternatives``.
    """
    by_mode = {m.name: m for m in modes}
    by_name = {a.name: a for a in alternatives}

    def quantized(data, *, private, public, mechanism, utility, key, passphrase_file, out, schema_out, as_json, workers,
                  scheduler, kmeans, in_core_limit, **arguments):
        private = private_columns(private, public)
        mode, alternative = by_mode.get(utility), by_name.get(mechanism)
        options = _options(mechanism, alternative, mode, private=private, **arguments)
        ran = run(data, options, *_builds(alternative, mode, scratch=out.resolve().parent), private=private,
                  public=public, key=key, passphrase_file=passphrase_file,
                  placement=Placement(workers, scheduler, kmeans, in_core_limit))
        report(ran, out=out, schema_out=schema_out, as_json=as_json, utility=utility,
               told=Told(search=_tell_search, warn=_warn_mostly_blank, line=mode.report_line if mode else None))

    options = {**TABLE_OPTIONS, **OPTIONS, **_choices(modes, alternatives)}
    return table_command(QuantizedOptions.mechanism, quantized, parameters=PARAMETERS, options=options,
                         titled=SECTIONS, short_help=SHORT_HELP, brief=BRIEF, doc=DOC)


def _options(mechanism: str, alternative: Alternative | None, mode: Mode | None, *, private, domains, schema_file,
             missing_token, target_leakage, target_auc, clusters, smoothing, allow_unmet, factors, factor_reg, metric,
             prior, class_blind, no_codebook, missing, holdout_folds, robust, max_output_leakage, **table):
    """The options the arguments ask for, each checking its own rules at construction.

    They are :class:`QuantizedOptions`, a ``mode``'s around them, or the ``alternative``'s.

    Raises
    ------
    BuildError
        No private column; an argument the asked-for mechanism has no option for (``--missing-token``
        with an alternative, ``--allow-unmet`` without a search, and what the alternative refuses);
        anything the options refuse. (A partitioned build's own refusals come with its source.)
    """
    declared = (declare(read_schema_file(schema_file) if schema_file else None, domains, missing_token)
                if (schema_file or domains or missing_token is not None) else None)
    if missing_token is not None and alternative is not None:
        raise BuildError(f"--missing-token applies to the quantized mechanism's numeric columns, not {mechanism}")
    needs_private(private, mechanism)
    joint_target, column_targets = parse_target_leakage(target_leakage)
    auto = clusters == "auto" or smoothing == "auto"
    if allow_unmet and not auto:
        raise BuildError("--allow-unmet applies to a search for a target (--clusters auto or --smoothing auto)")
    table = table_keywords(holdout_folds=holdout_folds, robust=robust, max_output_leakage=max_output_leakage, **table)
    if alternative is not None:
        return alternative.options(auto=auto, class_blind=class_blind, mode=mode, metric=metric, declared=declared,
                                   prior=prior, smoothing=smoothing, table=table)
    mapping = quantized_options(
        metric=metric, clusters=clusters, smoothing=smoothing, prior=prior, modal=mode is not None,
        no_codebook=no_codebook, max_output_leakage=max_output_leakage, missing=missing, declared=declared,
        class_blind=class_blind, auto=auto, joint_target=joint_target, target_auc=target_auc,
        column_targets=column_targets, allow_unmet=allow_unmet, table=table)
    return mapping if mode is None else mode.options(mapping, factors=factors, factor_reg=factor_reg)


def _builds(alternative: Alternative | None, mode: Mode | None, *, scratch: pathlib.Path) -> tuple[Callable,
                                                                                               OutOfCore | None]:
    """The builds of the options asked for, in memory and out of core.

    An alternative has no build out of core; a mode's temporary points go to ``scratch``.
    """
    if alternative is not None:
        return alternative.build, None
    if mode is not None:
        return mode.build, OutOfCore(functools.partial(mode.build_partitioned, scratch=scratch), check_out_of_core)
    return build, OutOfCore(build_partitioned, check_out_of_core)


def quantized_options(*, metric, clusters, smoothing, prior, modal: bool, no_codebook: bool, max_output_leakage,
                      missing, declared, class_blind, auto: bool, joint_target, target_auc, column_targets,
                      allow_unmet: bool, table: dict) -> QuantizedOptions:
    """The options the arguments ask of the quantized mechanism.

    ``clusters`` and ``smoothing`` may be ``"auto"`` (``auto``: either is); ``modal``: a model mode
    wraps them, whose mapping defaults to the posteriors prior and searches both codebooks;
    ``table``: the table options' keywords,
    :func:`~privmap.offline.mechanisms.table.table_keywords`); the targets come parsed. A per-output
    limit leaves the codebook step out. Raises BuildError as :class:`QuantizedOptions` and
    :class:`Auto` do.
    """
    return QuantizedOptions(
        metric=metric or "l2", clusters=None if clusters == "auto" else clusters,
        smoothing=None if smoothing == "auto" else smoothing,
        prior=prior or ("posteriors" if modal else "counts"),
        codebook=not no_codebook and max_output_leakage is None, missing=missing, declared=declared,
        class_blind=bool(class_blind),
        auto=Auto(target_leakage_bits=joint_target, target_auc=target_auc, column_targets=column_targets,
                  class_blind=(False, True) if class_blind is None and modal else (),
                  allow_unmet=allow_unmet) if auto else None, **table)


def parse_target_leakage(values) -> tuple[float | None, tuple[tuple[str, float], ...]]:
    """``--target-leakage`` values as the joint's target and the ``(column, bits)`` pairs.

    Each value is ``BITS`` or ``COL=BITS``, several comma-separated.

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


def _tell_search(built) -> dict:
    """The summary's ``auto`` entry, once the search is told on stderr.

    Its candidates, what the users allow of an AUC target, and a warning when no candidate met
    the target.
    """
    click.echo(format_candidates(built.choice), err=True)
    _note_auc_floor(built.dataset, built.choice.target_auc)
    if not any(c.get("meets_target") for c in built.choice.candidates):
        click.echo("warning: " + built.choice.unmet_message(shipped=True), err=True)
    return built.choice.summary()


def _note_auc_floor(dataset, target_auc: float | None) -> None:
    """With an AUC target, say on stderr what the users allow.

    That is the upper AUC bound of a varied release that tells nothing
    (:func:`._enough.chance_auc_high`; a build whose users cannot go under the target refuses
    before its search).
    """
    import numpy as np
    if target_auc is None:
        return
    counts = np.bincount(dataset.private, minlength=len(dataset.classes))
    if counts.min() == 0:
        return
    click.echo(f"note: {int(counts.sum()):,} users in {len(counts)} classes (the smallest {int(counts.min()):,}): "
               f"a varied release that tells an attacker nothing is bounded by AUC <= "
               f"{chance_auc_high(counts):.4f}, under the target {target_auc:g}", err=True)


#: A rows build on data with more than this fraction of its public cells blank is told of the
#: recommender mode: such data is usually ratings, whose blanks mean "not rated".
MOSTLY_BLANK = 0.5


def _warn_mostly_blank(result) -> None:
    """Say on stderr when a rows build's data is mostly blank cells, and what fits such data.

    A build over a model's space, whose detail has its ``fitted`` rating model, is told nothing.
    """
    blank = result.payload["metrics"].get("missing_cell_fraction", 0.0)
    if getattr(result.detail, "fitted", None) is not None or blank <= MOSTLY_BLANK:
        return
    click.echo(f"warning: {100 * blank:.0f} % of the public cells are blank: if they are unrated items, "
               "--utility recommender releases latent taste as full rows (this build releases rows with their "
               "blanks mapped as missing answers)", err=True)

