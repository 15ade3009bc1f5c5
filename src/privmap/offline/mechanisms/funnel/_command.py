"""``privmap build funnel`` (also ``privmap build-funnel``).

The funnel's options from the command line, its build, the signed bundle, and a report (text,
or ``--json``).
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
from ._options import FunnelOptions

__all__ = ["funnel"]

#: ``--help``: the options by section, one line each (``--help-all`` gives the full help).
SECTIONS = (
    Section("Data", (
        ("private", "Private attribute column S (required)."),
        ("public", "Public columns X, comma-separated (default: others)."),
    )),
    Section("Mapping", (
        ("disclosure", "Disclosure floor R = I(X;Y), in bits."),
        ("disclosure_fraction", "R as a fraction of H(X), from 0 to 1."),
        ("smoothing", "Prior count smoothing (default: 0.0)."),
        ("seed", "Random seed (default: 0)."),
    )),
    BUNDLE_SECTION,
)
#: The declared figures a build reports.
SHOWN = ("leakage_before_bits", "leakage_bits", "disclosure_bits", "disclosure_floor_bits", "entropy_x_bits",
         "clusters", "outputs", "n")


@click.command("funnel", cls=SectionedCommand, sections=SECTIONS,
               short_help="Greedy privacy funnel on categorical tuples.", brief=(
                   "Build a privacy-funnel bundle (seed 003) from categorical DATA.csv: public tuples "
                   "merged greedily into groups Y while the disclosure I(X;Y) stays >= R. Give exactly one "
                   "of --disclosure and --disclosure-fraction.\n\n"
                   "\b\nExample:\n"
                   "  {command} adult.csv --private income_sex \\\n"
                   "      --disclosure-fraction 0.5 --key keys/private.pem --out funnel.bundle"))
@click.argument("data", metavar="DATA.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("--private", required=True, metavar="COL", help="Private attribute column S.")
@click.option("--public", type=Columns(), metavar="COLS",
              help="Comma-separated public columns X (default: all others).")
@click.option("--disclosure", type=float, help="Disclosure floor R = I(X;Y) in bits.")
@click.option("--disclosure-fraction", type=click.FloatRange(0, 1),
              help="R as a fraction of H(X) (1.0 = release X, 0 = merge everything).")
@click.option("--smoothing", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Additive smoothing of the prior's counts.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Random seed.")
@click.option("--metric", type=click.Choice(["log-loss"]), default="log-loss", hidden=True)
@bundle_options
@header_options
@json_option
@guard
def funnel(data, private, public, disclosure, disclosure_fraction, smoothing, seed, metric, key, out, passphrase_file,
           header, as_json):
    """Build a privacy-funnel bundle (seed 003) from categorical DATA.csv.

    Merges the public tuples X greedily into groups Y, keeping the disclosure
    I(X;Y) >= R and lowering the leakage I(S;Y) about the private S (log-loss
    distortion). Give exactly one of --disclosure and --disclosure-fraction.

    \b
    Example:
      privmap build funnel adult.csv --private income_sex --disclosure-fraction 0.5 \\
          --key keys/private.pem --out funnel.bundle
    """  # noqa: D301 - click's no-rewrap marker \b must stay a backspace, which a raw string would not make
    options = FunnelOptions(private=private, public=public, disclosure=disclosure,
                            disclosure_fraction=disclosure_fraction, smoothing=smoothing, seed=seed, **header)
    signed = signed_build(lambda: build(data, options), key=key, passphrase_file=passphrase_file, out=out)
    metrics = signed.result.metrics
    if as_json:
        emit({**signed.summary(), "mechanism": "funnel", **{k: metrics[k] for k in SHOWN}})
        return
    click.echo(f"wrote {out} ({len(signed.bundle_bytes)} bytes) in {signed.seconds:.2f} s, funnel mechanism")
    click.echo(f"  leakage I(S;Y): {metrics['leakage_bits']:.6f} bits (I(S;X) = "
               f"{metrics['leakage_before_bits']:.6f}); disclosure I(X;Y): {metrics['disclosure_bits']:.6f} "
               f">= R = {metrics['disclosure_floor_bits']:.6f} bits (H(X) = {metrics['entropy_x_bits']:.6f})")
    click.echo(f"  {metrics['clusters']} public tuples merged into {metrics['outputs']} groups, n = {metrics['n']}")
