"""The kit a table build command is written with, and the report it ends with.

It holds the options every table build takes, each defined once with its line of ``--help``;
the command made from a slice's body; the arguments every table build reads alike
(``--private``, the guarantees); and :func:`report`: the bundle signed (checked as a device would
load it) and written, with the resolved schema, notes and warnings on stderr, and the summary as
text or one ``--json`` object.

A table mechanism's ``_command`` adds its own options to :data:`TABLE_OPTIONS` and lists them
all in its order; its body reads options -> :func:`~._run.run` -> :func:`report`, and what it
tells beyond what every table build's report says it hands in as :class:`Told`. This module names
no mechanism (and, its name ending in ``_command``, writes the command's own output to stdout:
:func:`privmap.offline.commandline.reserved_stdout`). :func:`robust_line` and
:func:`column_lines` are also ``privmap inspect``'s.
"""
from __future__ import annotations

import json
import math
import pathlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, cast

import click

from ... import _routed
from ..._errors import BuildError
from ..._files import atomic_write
from ..._joint import COLUMN_FIGURES, by_column, column_key, payload_columns, split_private
from ..._strongest import strongest_name
from ...bundle import payload_output_leakage
from ...commandline import (
    BUNDLE_SECTION,
    AutoOr,
    Columns,
    Section,
    SectionedCommand,
    bundle_options,
    emit,
    guard,
    header_options,
    json_option,
    sign_checked,
)
from ...data import schema_json
from ...measures import exposure_line, payload_exposure
from .._result import Result
from .._seed000 import CrossFitting, OutputLimit, RobustCertificate
from ._pipeline import Build
from ._run import Ran

__all__ = ["TableOption", "TABLE_OPTIONS", "TABLE_SECTIONS", "sections", "table_command", "private_columns",
           "needs_private", "table_keywords", "Told", "report", "robust_line", "column_lines"]


@dataclass(frozen=True)
class TableOption:
    """One option of a table build command: its click parameter and its line of ``--help``.

    ``parameter`` is a click decorator, or None for an option that another option's decorator
    adds; ``line`` is the one-line help ``--help`` shows (``--help-all`` shows the parameter's
    own).
    """

    parameter: Callable | None
    line: str


#: DATA, every table build's argument (before its options; ``--help`` shows it in the usage).
DATA = click.argument("data", metavar="DATA", type=click.Path(path_type=pathlib.Path))
#: The options every table build takes, by parameter name, in the order ``--help-all`` lists them.
TABLE_OPTIONS: Mapping[str, TableOption] = MappingProxyType({
    "private": TableOption(click.option(
        "--private", "private", metavar="COL",
        help="Private attribute column; several, comma-separated, are protected as their joint attribute (each tuple "
             "of their values one class), and the bundle declares the leakage of the joint and of each column alone."),
        "Private column, or COL1,COL2: their joint."),
    "public": TableOption(click.option("--public", "public", type=Columns(), metavar="COLS",
                                       help="Comma-separated public columns (default: all others)."),
                          "Public columns, comma-separated (default: others)."),
    "delta": TableOption(click.option("--delta", type=float, help="Distortion budget Delta, in the metric's unit."),
                         "Distortion budget Delta, in the metric's unit."),
    "delta_fraction": TableOption(click.option(
        "--delta-fraction", type=float,
        help="Delta as a fraction of the perfect-privacy distortion (1.0 = zero leakage). With --clusters auto and "
             "neither this nor --delta, the fraction is searched with K."),
        "Delta / perfect privacy's (auto: searched)."),
    "seed": TableOption(click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                                     help="Seed of k-means."),
                        "Seed of k-means (default: 0)."),
    "solver": TableOption(click.option("--solver", type=click.Choice(["fast", "cvxpy"]), default="fast",
                                       show_default=True,
                                       help="fast: privmap's certified solver; cvxpy: Clarabel reference."),
                          "Certified fast solver or cvxpy (default: fast)."),
    "bits": TableOption(click.option("--bits", type=click.IntRange(1, 32), default=16, show_default=True,
                                     help="Table weights sum to 2^BITS per row."),
                        "Table rows sum to 2^BITS (default: 16)."),
    "smoothing": TableOption(click.option(
        "--smoothing", type=AutoOr(float, 0), default="0.0", show_default=True, metavar="S|auto",
        help="Additive smoothing of the prior's counts, or 'auto' (chosen with the clusters, as above)."),
        "Prior count smoothing, or auto (default: 0.0)."),
    "robust": TableOption(click.option(
        "--robust", "robust", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
        metavar="CONFIDENCE",
        help="Certify the leakage over a confidence set of priors (per-cluster L1 balls holding the population's "
             "posteriors with this probability, e.g. 0.95), choose the table of least certified worst case, and "
             "declare robust_leakage_bits (docs/guarantees.md)."),
        "Certify the leakage over a set of priors."),
    "holdout_folds": TableOption(click.option(
        "--holdout-folds", type=click.IntRange(min=0, max=20), default=5, show_default=True,
        help="Folds of the cross-fitted (new-user) leakage estimate written into the bundle; 0 = skip."),
        "Folds of the new-user estimate (default: 5)."),
    "max_output_leakage": TableOption(click.option(
        "--max-output-leakage", type=click.FloatRange(min=0, min_open=True), default=None, metavar="EPS",
        help="Per-output limit in bits: every released output c^ keeps |log2 p(a|c^) - log2 p(a)| <= EPS on the "
             "training prior (checked on the shipped integer table). The fast solver's table ships when it meets the "
             "limit, else Clarabel solves under it by column generation (docs/per-output-leakage.md); turns the "
             "codebook step off."),
        "Limit every output's leakage to EPS bits."),
})

#: ``--help``'s sections of a command of :data:`TABLE_OPTIONS` alone: (title, parameter names).
TABLE_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Data", ("private", "public")),
    ("Mapping", ("delta", "delta_fraction", "seed", "smoothing", "solver", "bits")),
    ("Guarantees", ("holdout_folds", "robust", "max_output_leakage")),
)


def sections(titled: Iterable[tuple[str, Sequence[str]]], options: Mapping[str, TableOption]) -> tuple[Section, ...]:
    """``--help``'s sections, each (title, parameter names) of ``titled``, then the bundle's.

    Each option's line is read from ``options``; the bundle's section is
    :data:`~privmap.offline.commandline.BUNDLE_SECTION`.
    """
    return (*(Section(title, tuple((name, options[name].line) for name in names)) for title, names in titled),
            BUNDLE_SECTION)


def table_command(name: str, body: Callable, *, parameters: Sequence[str], options: Mapping[str, TableOption],
                  titled: Iterable[tuple[str, Sequence[str]]], short_help: str, brief: str,
                  doc: str) -> click.Command:
    """The build command ``name``, with ``body`` as what it does.

    ``body`` is called with DATA, the ``parameters`` (names in ``options``, in the order
    ``--help-all`` lists them), the bundle's options, the header's (one keyword ``header``) and
    ``--json`` (``as_json``), its failures one line each; ``--help`` shows ``brief`` and the
    sections ``titled``, ``--help-all`` the full help ``doc``.
    """
    command = body
    decorators = [options[n].parameter for n in parameters if options[n].parameter is not None]
    for decorator in reversed([DATA, *decorators, bundle_options, header_options, json_option, guard]):
        command = decorator(command)
    return click.command(name, cls=SectionedCommand, help=doc, short_help=short_help, brief=brief,
                         sections=sections(titled, options))(command)


def private_columns(private: str | Sequence[str] | None,
                    public: Sequence[str] | None = None) -> str | tuple[str, ...] | None:
    """``--private``'s value as :func:`privmap.offline.data.load_dataset` takes it.

    It is the column name, or the tuple of several (their joint attribute); None when none is given.
    What the names alone decide is checked here, before any row is read.

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


def needs_private(private: object, mechanism: str) -> None:
    """Refuse a build of ``mechanism`` without ``--private`` (``private``: its parsed value).

    Raises
    ------
    BuildError
        ``private`` is empty.
    """
    if not private:
        raise BuildError(f"--mechanism {mechanism} needs --private COL")


def table_keywords(*, delta: float | None, delta_fraction: float | None, seed: int, solver: str, bits: int,
                   holdout_folds: int, robust: float | None,
                   max_output_leakage: float | None, header: dict) -> dict:
    """The keywords of a table mechanism's options that the arguments of :data:`TABLE_OPTIONS` ask for.

    All but ``--smoothing``, which each mechanism reads its own way: the budget, seed, solver and
    precision, the guarantees (None: left out; ``holdout_folds`` 0 leaves cross-fitting out) and the
    header's (``header``). Raises BuildError as each guarantee does.
    """
    return {"delta": delta, "delta_fraction": delta_fraction, "seed": seed, "solver": solver, "bits": bits,
            "cross_fitting": CrossFitting(folds=holdout_folds) if holdout_folds else None,
            "robust": RobustCertificate(confidence=robust) if robust is not None else None,
            "output_limit": OutputLimit(bits=max_output_leakage) if max_output_leakage is not None else None,
            **header}


@dataclass(frozen=True)
class Told:
    """What a table command tells of its build besides what :func:`report` tells of any.

    Parameters
    ----------
    search : callable, optional
        ``search(built) -> dict``, called when the build ran the ``auto`` search
        (``built.choice``): tells its candidates and what they met on stderr, and returns the
        summary's ``auto`` entry.
    warn : callable, optional
        ``warn(result)``: the command's own warnings on stderr, after the new-user one.
    line : callable, optional
        ``line(metrics, provenance) -> str``: the text report's line on a model between a user's
        row and the table's space, after the distortion's.
    """

    search: Callable[[Build], dict] | None = None
    warn: Callable[[Result], None] | None = None
    line: Callable[[dict, dict], str] | None = None


def report(ran: Ran, *, out: pathlib.Path, schema_out: pathlib.Path | None, as_json: bool, utility: str = "rows",
           told: Told = Told()) -> None:
    """Sign, check, write and tell the build ``ran``.

    Sign it (timed as the stage ``encode-sign``), check it as a device would, write the resolved
    schema (to ``schema_out``, unless None) and the bundle (to ``out``), and tell: notes and
    warnings on stderr, the summary as text or one JSON object (``as_json``), with ``utility`` (what
    the release serves) and what the command adds (``told``).
    """
    result, timer, started = ran.result, ran.timer, ran.started
    built = cast(Build, result.detail)                  # a table mechanism's build
    timer("encode-sign", 1.0)
    bundle_bytes = sign_checked(result.payload, ran.private_key)
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
    if built.choice is not None and told.search is not None:
        summary["auto"] = told.search(built)
    _warn_new_user_leakage(metrics, searched=built.choice is not None)
    if told.warn is not None:
        told.warn(result)
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
    if told.line is not None:
        click.echo(told.line(metrics, result.payload["provenance"]))
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


def column_lines(metrics: dict, names: Sequence[str]) -> str:
    """Each private column's leakage alone, one line each.

    In-sample, before the mapping, and cross-fitted with its interval (a joint bundle's build
    report and ``privmap inspect``).
    """
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


def _notes(schema: Any, fitted: Any, dropped_rows: int) -> None:
    """Say on stderr what the build inferred or left out.

    The rating domain (``fitted``, the rating model of a build over a model's space, or None) or
    the column domains, and rows with every public cell missing.
    """
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
    """Say on stderr when the cross-fitted leakage is several times the in-sample one.

    With the advice that fits the build: a warning, fewer clusters or the ``auto`` search, for a
    build at a given K; a note for one the search chose (``searched``: it judged every candidate by
    that very figure), that the declared figure is the new users' and what narrows the gap.
    """
    held, fitted = metrics.get("holdout_leakage_bits"), metrics["leakage_bits"]
    if held is None or held - fitted < OVERFIT_MIN_GAP_BITS or held < OVERFIT_RATIO * fitted:
        return
    advice = ("the search held the new users' figure (the one declared) to its target; more users per cluster, "
              "or a stricter target, would narrow the gap" if searched else
              f"K = {metrics['clusters']} is too many clusters for {metrics['n']} users "
              "(try fewer, or --clusters auto with a target)")
    click.echo(f"{'note' if searched else 'warning'}: new users leak {held:.6f} bits, "
               f"{held / max(fitted, 1e-12):.1f} times the in-sample {fitted:.6f}: {advice}", err=True)



def _seconds_by_stage(records: list[dict]) -> dict[str, float]:
    """Wall seconds per stage name, from :meth:`StageTimer.records` (a name seen twice is summed)."""
    seconds: dict[str, float] = {}
    for r in records:
        seconds[r["stage"]] = round(seconds.get(r["stage"], 0.0) + r["seconds"], 3)
    return seconds
