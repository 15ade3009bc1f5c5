"""CLI pieces for the real-valued kinds: ``privmap build-gaussian`` (seed 004) and ``privmap
build-nullspace`` (seed 001), and the ``inspect`` / ``verify`` / ``evaluate`` descriptions of such
bundles. The released columns are all those the command does not name."""
from __future__ import annotations

import math
import pathlib
import sys
import time

import click

from .._errors import BuildError
from ..commandline import (
    bundle_options,
    columns,
    emit,
    guard,
    header_options,
    json_option,
    load_key,
    sign_check_write,
)

REAL_MECHANISMS = ("nullspace", "gaussian")


def _required_columns(text, option):
    names = columns(text)
    if not names:
        raise click.UsageError(f"{option} needs COLS (comma-separated)")
    return names


@click.command("build-gaussian")
@click.argument("data", metavar="DATA.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("--private", required=True, metavar="COLS", help="Comma-separated private columns X_p (not released).")
@click.option("--utility", required=True, metavar="COLS", help="Comma-separated utility columns X_u (not released).")
@click.option("--delta", type=float, required=True, metavar="NATS",
              help="Utility-loss cap I(X_u;X) - I(X_u;Y) in nats.")
@click.option("--gamma", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Least ratio of privacy gain to utility loss for each noise step.")
@click.option("--fisher", is_flag=True, help="Measure utility by Fisher information (one utility column).")
@bundle_options
@header_options
@json_option
@guard
def build_gaussian(data, private, utility, delta, gamma, fisher, key, out, passphrase_file, header, as_json):
    """Build a greedy Gaussian-noise bundle (seed 004) from real-valued DATA.csv.

    Adds independent Gaussian noise to each released column, greedily, while
    the privacy gain per unit of utility loss is at least --gamma and the
    utility loss stays within --delta nats (a Gaussian model of the columns).

    \b
    Example:
      privmap build-gaussian anes96.csv --private PID --utility educ --delta 0.1 \\
          --key keys/private.pem --out gaussian.bundle
    """
    from ..mechanisms import HeaderOptions
    from ..mechanisms.realvalued._build import build_gaussian as run
    if not (math.isfinite(delta) and delta >= 0):
        raise BuildError("--delta must be a finite number >= 0 (nats)")
    private_key = load_key(key, passphrase_file)
    started = time.perf_counter()
    with click.progressbar(length=1000, label="greedy noise", file=sys.stderr, show_eta=False) as bar:
        built = run(data, _required_columns(private, "--private"), _required_columns(utility, "--utility"),
                    delta, gamma, fisher=fisher,
                    header=HeaderOptions(**header),
                    progress=lambda f: bar.update(int(f * 1000) - bar.pos))
    _finish(built, private_key, out, started, as_json)


@click.command("build-nullspace")
@click.argument("data", metavar="DATA.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("--desired", required=True, metavar="COLS", help="Comma-separated targets of the desired predictor.")
@click.option("--confidential", required=True, metavar="COLS", help="Comma-separated confidential targets.")
@click.option("--epsilon", type=click.FloatRange(min=0), required=True, metavar="E",
              help="Per-row budget ||A_d^T (x - x~)||^2 on the desired predictor's change.")
@bundle_options
@header_options
@json_option
@guard
def build_nullspace(data, desired, confidential, epsilon, key, out, passphrase_file, header, as_json):
    """Build a null-space cleaning bundle (seed 001) from real-valued DATA.csv.

    Fits linear predictors of the desired and confidential targets and moves
    each released row along directions that hide the confidential prediction
    while the desired one changes by at most --epsilon.

    \b
    Example:
      privmap build-nullspace anes96.csv --desired educ --confidential PID --epsilon 0.5 \\
          --key keys/private.pem --out nullspace.bundle
    """
    from ..mechanisms import HeaderOptions
    from ..mechanisms.realvalued._build import build_nullspace as run
    private_key = load_key(key, passphrase_file)
    started = time.perf_counter()
    built = run(data, _required_columns(desired, "--desired"), _required_columns(confidential, "--confidential"),
                epsilon, HeaderOptions(**header))
    _finish(built, private_key, out, started, as_json)


def _finish(built, private_key, out, started, as_json) -> None:
    bundle_bytes = sign_check_write(built.payload, private_key, out)
    summary = {"out": str(out), "bytes": len(bundle_bytes), "build_seconds": round(time.perf_counter() - started, 3),
               **describe_real(built.payload)}
    if as_json:
        emit(summary)
        return
    click.echo(f"wrote {out} ({len(bundle_bytes)} bytes)")
    print_real(summary)


def describe_real(payload: dict) -> dict:
    """The inspect/build summary of a real-valued payload."""
    metrics, params = payload["metrics"], payload["parameters"]
    info = {"version": payload["version"], "issued_at": payload["issued_at"], "expires": payload["expires"],
            "mechanism": payload["mechanism"], "features": list(payload["features"]),
            "metrics": dict(metrics), "provenance": dict(payload["provenance"])}
    if payload["mechanism"] == "nullspace":
        info.update(epsilon=params["epsilon"], desired=params["desired"], confidential=params["confidential"],
                    directions=len(params["directions"]), lambda_d=params["lambda_d"])
    else:
        info.update(private=params["private"], utility=params["utility"], sigma2=params["sigma2"],
                    delta=params["delta"], gamma=params["gamma"], utility_measure=params["utility_measure"],
                    leakage_bits=metrics["leakage_bits"], leakage_before_bits=metrics["leakage_before_bits"],
                    utility_loss_nats=metrics["utility_loss_nats"])
    return info


def print_real(info: dict) -> None:
    """Human-readable lines of :func:`describe_real`'s dict."""
    click.echo(f"  version {info['version']}, {info['mechanism']} mechanism, "
               f"expires {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(info['expires']))}")
    click.echo(f"  releases {len(info['features'])} columns: {', '.join(info['features'])}")
    if info["mechanism"] == "nullspace":
        click.echo(f"  desired {info['desired']}, confidential {info['confidential']}; "
                   f"{info['directions']} directions, epsilon = {info['epsilon']:g} per sample")
    else:
        sigma = ", ".join(f"{math.sqrt(s):.4g}" for s in info["sigma2"])
        click.echo(f"  private {info['private']}, utility {info['utility']}; noise sd ({sigma})")
        click.echo(f"  I(X_p;Y) = {info['leakage_bits']:.6f} bits (before: {info['leakage_before_bits']:.6f}); "
                   f"utility loss {info['utility_loss_nats']:.6f} nats <= delta = {info['delta']:g}, "
                   f"gamma = {info['gamma']:g} ({info['utility_measure']})")


def verify_real(loaded) -> dict:
    """The ``verify --json`` facts of a loaded real-valued bundle."""
    info = {"ok": True, "sha256": loaded.sha256, "key_id": loaded.key_id, "version": loaded.version,
            "expires": loaded.expires, "mechanism": loaded.mechanism}
    if loaded.mechanism == "gaussian":
        info.update(leakage_bits=loaded.metrics["leakage_bits"],
                    recomputed_leakage_bits=loaded.recomputed_leakage_bits,
                    utility_loss_nats=loaded.metrics["utility_loss_nats"])
    else:
        info.update(epsilon=loaded.epsilon, directions=len(loaded.directions))
    return info


def evaluate_real(payload, bundle, data, target, verified, seed, test_fraction, as_json) -> None:
    """``privmap evaluate`` for a real-valued bundle's ``payload``: attack ``target`` on DATA's held-out rows."""
    from ..evaluation._realvalued import evaluate_payload
    result = {"bundle": str(bundle), "data": str(data), "signature_verified": verified,
              **evaluate_payload(payload, data, target, seed=seed, test_fraction=test_fraction)}
    if as_json:
        emit(result)
        return
    click.echo(f"{bundle} on {data}" + ("" if verified else " (signature NOT verified: no --trusted key)"))
    click.echo(f"  attacker on {target!r} ({result['measure']}, held-out {test_fraction:.0%}): raw {result['raw']:.4f}, "
               f"fixed predictor on released {result['fixed']:.4f}, retrained on released {result['retrained']:.4f}")
    if "declared_leakage_bits" in result:
        click.echo(f"  Gaussian model: I(X_p;Y) {result['declared_leakage_bits']:.4f} bits "
                   f"(before {result['declared_leakage_before_bits']:.4f})")
