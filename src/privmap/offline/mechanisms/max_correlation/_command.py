"""``privmap build max-correlation`` (also ``privmap build-max-correlation``).

The options from the command line, the design, the signed bundle, and a report (text, or
``--json``).
"""
from __future__ import annotations

import pathlib

import click

from ...commandline import (
    BUNDLE_SECTION,
    Columns,
    Section,
    SectionedCommand,
    bundle_options,
    emit,
    guard,
    header_options,
    json_option,
    signed_build,
)
from ._build import build
from ._options import MAXCORR_BITS, MaxCorrelationOptions

__all__ = ["max_correlation"]

#: ``--help``: the options by section, one line each (``--help-all`` gives the full help).
SECTIONS = (
    Section("Data", (
        ("public", "Public columns X, comma-separated (default: others)."),
        ("private", "A column left out of X (never read)."),
    )),
    Section("Mapping", (
        ("delta", "Budget D: expected changed cells (required)."),
        ("metric", "Distortion metric (default: hamming)."),
        ("information_budget", "Assumed bound on I(S;X), in bits, to declare."),
        ("prior_only", "Design from P_X alone (always so)."),
        ("bits", "Table rows sum to 2^BITS (default: 24)."),
        ("seed", "Random seed (default: 0)."),
    )),
    BUNDLE_SECTION,
)
#: The declared figures a build reports.
SHOWN = ("rho_m_squared", "s_star_upper_bound", "s_star_lower_bound", "s_star_verified", "distortion", "delta",
         "clusters", "n")


@click.command("max-correlation", cls=SectionedCommand, sections=SECTIONS,
               short_help="Max-correlation design from P_X alone.", brief=(
                   "Build a max-correlation bundle (seed 002) from the public tuples of DATA.csv: the "
                   "channel of least rho_m(X;Y)^2 within a Hamming budget D, designed from P_X alone, so "
                   "I(S;Y) <= S* x I(S;X) for every private S.\n\n"
                   "\b\nExample:\n"
                   "  {command} census.csv --public sex,age \\\n"
                   "      --delta 0.3 --key keys/private.pem --out maxcorr.bundle"))
@click.argument("data", metavar="DATA.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("--delta", type=float, required=True, metavar="D", help="Budget D: expected changed cells (hamming).")
@click.option("--public", type=Columns(), metavar="COLS",
              help="Comma-separated public columns X (default: all but --private).")
@click.option("--private", metavar="COL", help="A column to leave out of X (never read: the design uses P_X alone).")
@click.option("--metric", type=click.Choice(["hamming"]), default="hamming", show_default=True,
              help="Distortion metric (changed cells).")
@click.option("--information-budget", type=click.FloatRange(min=0), default=None, metavar="BITS",
              help="Assumed bound Delta >= I(S;X) in bits; the bundle then declares the leakage bound "
                   "Delta x S*_upper.")
@click.option("--prior-only", is_flag=True, help="Design from P_X alone (always so; accepted for clarity).")
@click.option("--bits", type=click.IntRange(1, 32), default=MAXCORR_BITS, show_default=True,
              help="Table weights sum to 2^BITS per row (finer than the other mechanisms: rho_m^2 is sensitive "
                   "to the rounding of rarely released outputs).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Random seed.")
@bundle_options
@header_options
@json_option
@guard
def max_correlation(data, delta, public, private, metric, information_budget, prior_only, bits, seed, key, out,
                    passphrase_file, header, as_json):
    """Build a max-correlation bundle (seed 002) from the public tuples of DATA.csv.

    Minimises rho_m(X;Y)^2 subject to E d(X, Y) <= D from the marginal P_X
    alone: no private labels are read, and I(S;Y) <= S* x I(S;X) holds for
    every private S (S* <= the declared upper bound).

    \b
    Example:
      privmap build max-correlation census.csv --public sex,age --delta 0.3 \\
          --key keys/private.pem --out maxcorr.bundle
    """  # noqa: D301 - click's no-rewrap marker \b must stay a backspace, which a raw string would not make
    options = MaxCorrelationOptions(delta=delta, public=public, private=private, metric=metric,
                                    information_budget=information_budget, bits=bits, seed=seed, **header)
    signed = signed_build(lambda: build(data, options), key=key, passphrase_file=passphrase_file, out=out)
    metrics = signed.result.metrics
    if as_json:
        shown = SHOWN + (("leakage_bound_bits",) if "leakage_bound_bits" in metrics else ())
        emit({**signed.summary(), "mechanism": "max-correlation", **{k: metrics[k] for k in shown}})
        return
    click.echo(f"wrote {out} ({len(signed.bundle_bytes)} bytes) in {signed.seconds:.2f} s, max-correlation mechanism")
    state = "verified (S* = rho_m^2)" if metrics["s_star_verified"] else "NOT verified: S* <= the upper bound"
    click.echo(f"  rho_m^2 = {metrics['rho_m_squared']:.6f}; S* in [{metrics['s_star_lower_bound']:.6f}, "
               f"{metrics['s_star_upper_bound']:.6f}] ({state})")
    click.echo(f"  guarantee: I(S;Y) <= {metrics['s_star_upper_bound']:.6f} x I(S;X) for any private S; "
               f"distortion {metrics['distortion']:.4f} <= D = {metrics['delta']:.4f} changed cells")
