"""``privmap build gaussian`` (also ``privmap build-gaussian``).

The options from the command line, the greedy, the signed bundle, and a report (text, or
``--json``).
"""
from __future__ import annotations

import math
import pathlib
import sys

import click

from ...commandline import (
    BUNDLE_SECTION,
    Columns,
    Section,
    SectionedCommand,
    bundle_options,
    guard,
    header_options,
    json_option,
    signed_build,
)
from .._real_report import describe_real, real_lines, report_real, verify_real
from ._build import build
from ._options import GaussianOptions

__all__ = ["gaussian", "describe", "print_description", "verify_facts"]

#: ``--help``: the options by section, one line each (``--help-all`` gives the full help).
SECTIONS = (
    Section("Data", (
        ("private", "Private columns X_p, comma-separated (required)."),
        ("utility", "Utility columns X_u, comma-separated (required)."),
    )),
    Section("Mapping", (
        ("delta", "Utility-loss cap, in nats (required)."),
        ("gamma", "Least privacy gain per utility loss (default: 0.0)."),
        ("fisher", "Measure utility by Fisher information."),
    )),
    BUNDLE_SECTION,
)


@click.command("gaussian", cls=SectionedCommand, sections=SECTIONS,
               short_help="Greedy Gaussian noise on real-valued columns.", brief=(
                   "Build a greedy Gaussian-noise bundle (seed 004) from real-valued DATA.csv: noise added "
                   "to each released column (all but the private and utility ones) while the utility loss "
                   "stays within --delta nats.\n\n"
                   "\b\nExample:\n"
                   "  {command} anes96.csv --private PID --utility educ \\\n"
                   "      --delta 0.1 --key keys/private.pem --out gaussian.bundle"))
@click.argument("data", metavar="DATA.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("--private", required=True, type=Columns(required=True), metavar="COLS",
              help="Comma-separated private columns X_p (not released).")
@click.option("--utility", required=True, type=Columns(required=True), metavar="COLS",
              help="Comma-separated utility columns X_u (not released).")
@click.option("--delta", type=float, required=True, metavar="NATS",
              help="Utility-loss cap I(X_u;X) - I(X_u;Y) in nats.")
@click.option("--gamma", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Least ratio of privacy gain to utility loss for each noise step.")
@click.option("--fisher", is_flag=True, help="Measure utility by Fisher information (one utility column).")
@bundle_options
@header_options
@json_option
@guard
def gaussian(data, private, utility, delta, gamma, fisher, key, out, passphrase_file, header, as_json):
    """Build a greedy Gaussian-noise bundle (seed 004) from real-valued DATA.csv.

    Adds independent Gaussian noise to each released column, greedily, while
    the privacy gain per unit of utility loss is at least --gamma and the
    utility loss stays within --delta nats (a Gaussian model of the columns).

    \b
    Example:
      privmap build gaussian anes96.csv --private PID --utility educ --delta 0.1 \\
          --key keys/private.pem --out gaussian.bundle
    """  # noqa: D301 - click's no-rewrap marker \b must stay a backspace, which a raw string would not make
    options = GaussianOptions(private=private, utility=utility, delta=delta, gamma=gamma, fisher=fisher, **header)
    signed = signed_build(lambda: _build_with_bar(data, options), key=key, passphrase_file=passphrase_file, out=out)
    report_real(signed, describe(signed.result.payload), print_description, as_json=as_json)


def _build_with_bar(data, options: GaussianOptions):
    """:func:`build`, its progress drawn on stderr."""
    with click.progressbar(length=1000, label="greedy noise", file=sys.stderr, show_eta=False) as bar:
        return build(data, options, progress=lambda f: bar.update(int(f * 1000) - bar.pos))


def describe(payload: dict) -> dict:
    """The build summary and ``privmap inspect`` facts of a gaussian payload."""
    metrics, params = payload["metrics"], payload["parameters"]
    return describe_real(payload, private=params["private"], utility=params["utility"], sigma2=params["sigma2"],
                         delta=params["delta"], gamma=params["gamma"], utility_measure=params["utility_measure"],
                         leakage_bits=metrics["leakage_bits"], leakage_before_bits=metrics["leakage_before_bits"],
                         utility_loss_nats=metrics["utility_loss_nats"])


def print_description(info: dict) -> None:
    """The human-readable lines of :func:`describe`'s dict."""
    sigma = ", ".join(f"{math.sqrt(s):.4g}" for s in info["sigma2"])
    for line in real_lines(info):
        click.echo(line)
    click.echo(f"  private {info['private']}, utility {info['utility']}; noise sd ({sigma})")
    click.echo(f"  I(X_p;Y) = {info['leakage_bits']:.6f} bits (before: {info['leakage_before_bits']:.6f}); "
               f"utility loss {info['utility_loss_nats']:.6f} nats <= delta = {info['delta']:g}, "
               f"gamma = {info['gamma']:g} ({info['utility_measure']})")


def verify_facts(loaded) -> dict:
    """The ``privmap verify --json`` facts of a loaded gaussian bundle."""
    return verify_real(loaded, leakage_bits=loaded.metrics["leakage_bits"],
                       recomputed_leakage_bits=loaded.recomputed_leakage_bits,
                       utility_loss_nats=loaded.metrics["utility_loss_nats"])
