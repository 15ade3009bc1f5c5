"""``privmap build nullspace`` (also ``privmap build-nullspace``).

The options from the command line, the cleaning directions, the signed bundle, and a report
(text, or ``--json``).
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
    guard,
    header_options,
    json_option,
    signed_build,
)
from .._real_report import describe_real, real_lines, report_real, verify_real
from ._build import build
from ._options import NullspaceOptions

__all__ = ["nullspace", "describe", "print_description", "verify_facts"]

#: ``--help``: the options by section, one line each (``--help-all`` gives the full help).
SECTIONS = (
    Section("Data", (
        ("desired", "Desired predictor's targets, comma-separated."),
        ("confidential", "Confidential targets, comma-separated."),
    )),
    Section("Mapping", (
        ("epsilon", "Per-row budget on the desired predictor's change."),
    )),
    BUNDLE_SECTION,
)


@click.command("nullspace", cls=SectionedCommand, sections=SECTIONS,
               short_help="Null-space cleaning for linear predictors.", brief=(
                   "Build a null-space cleaning bundle (seed 001) from real-valued DATA.csv: each released "
                   "row moved along directions that hide the confidential prediction while the desired one "
                   "changes by at most --epsilon.\n\n"
                   "\b\nExample:\n"
                   "  {command} anes96.csv --desired educ --confidential PID \\\n"
                   "      --epsilon 0.5 --key keys/private.pem --out nullspace.bundle"))
@click.argument("data", metavar="DATA.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("--desired", required=True, type=Columns(required=True), metavar="COLS",
              help="Comma-separated targets of the desired predictor.")
@click.option("--confidential", required=True, type=Columns(required=True), metavar="COLS",
              help="Comma-separated confidential targets.")
@click.option("--epsilon", type=click.FloatRange(min=0), required=True, metavar="E",
              help="Per-row budget ||A_d^T (x - x~)||^2 on the desired predictor's change.")
@bundle_options
@header_options
@json_option
@guard
def nullspace(data, desired, confidential, epsilon, key, out, passphrase_file, header, as_json):
    """Build a null-space cleaning bundle (seed 001) from real-valued DATA.csv.

    Fits linear predictors of the desired and confidential targets and moves
    each released row along directions that hide the confidential prediction
    while the desired one changes by at most --epsilon.

    \b
    Example:
      privmap build nullspace anes96.csv --desired educ --confidential PID --epsilon 0.5 \\
          --key keys/private.pem --out nullspace.bundle
    """  # noqa: D301 - click's no-rewrap marker \b must stay a backspace, which a raw string would not make
    options = NullspaceOptions(desired=desired, confidential=confidential, epsilon=epsilon, **header)
    signed = signed_build(lambda: build(data, options), key=key, passphrase_file=passphrase_file, out=out)
    report_real(signed, describe(signed.result.payload), print_description, as_json=as_json)


def describe(payload: dict) -> dict:
    """The build summary and ``privmap inspect`` facts of a nullspace payload."""
    params = payload["parameters"]
    return describe_real(payload, epsilon=params["epsilon"], desired=params["desired"],
                         confidential=params["confidential"], directions=len(params["directions"]),
                         lambda_d=params["lambda_d"])


def print_description(info: dict) -> None:
    """The human-readable lines of :func:`describe`'s dict."""
    for line in real_lines(info):
        click.echo(line)
    click.echo(f"  desired {info['desired']}, confidential {info['confidential']}; "
               f"{info['directions']} directions, epsilon = {info['epsilon']:g} per sample")


def verify_facts(loaded) -> dict:
    """The ``privmap verify --json`` facts of a loaded nullspace bundle."""
    return verify_real(loaded, epsilon=loaded.epsilon, directions=len(loaded.directions))
