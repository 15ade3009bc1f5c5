"""CLI pieces for the real-valued kinds (``--mechanism nullspace`` / ``gaussian``):
the build, and the ``inspect`` / ``verify`` descriptions of such bundles."""
from __future__ import annotations

import math
import sys
import time

import click

from .._errors import BuildError
from ._common import atomic_write, emit

REAL_MECHANISMS = ("nullspace", "gaussian")


def _columns(text, option):
    names = tuple(c.strip() for c in (text or "").split(",") if c.strip())
    if not names:
        raise click.UsageError(f"--mechanism needs {option} COLS (comma-separated)")
    return names


def build_real(data, mechanism, *, private, utility, desired, confidential, epsilon, delta, gamma,
               fisher, key, passphrase_file, out, header, as_json):
    """Build, sign, check with the device runtime and atomically write a real-valued bundle."""
    from ..bundle._keys import load_private_key
    from ..bundle._write import check_bundle, encode_payload, sign_bundle
    from ..mechanisms.realvalued._build import build_gaussian, build_nullspace
    from ._passphrase import read_passphrase
    private_key = load_private_key(key, password=read_passphrase(passphrase_file))
    started = time.perf_counter()
    if mechanism == "nullspace":
        if epsilon is None:
            raise click.UsageError("--mechanism nullspace needs --epsilon E")
        built = build_nullspace(data, _columns(desired, "--desired"), _columns(confidential, "--confidential"),
                                epsilon, header)
    else:
        if delta is None:
            raise click.UsageError("--mechanism gaussian needs --delta D (nats)")
        if not (math.isfinite(delta) and delta >= 0):
            raise BuildError("--delta must be a finite number >= 0 (nats)")
        with click.progressbar(length=1000, label="greedy noise", file=sys.stderr, show_eta=False) as bar:
            built = build_gaussian(data, _columns(private, "--private"), _columns(utility, "--utility"),
                                   delta, gamma, fisher=fisher, header=header,
                                   progress=lambda f: bar.update(int(f * 1000) - bar.pos))
    payload_bytes = encode_payload(built.payload)
    bundle_bytes = sign_bundle(payload_bytes, private_key)
    check_bundle(bundle_bytes, private_key.public_key(), now=built.payload["issued_at"])
    atomic_write(out, bundle_bytes)
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


def check_not_real(mechanism, private):
    """Table mechanisms need --private."""
    if not private:
        raise BuildError(f"--mechanism {mechanism} needs --private COL")


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
