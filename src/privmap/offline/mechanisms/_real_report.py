"""What a real-valued bundle's report starts with, whatever its kind (gaussian, nullspace).

The build summary and ``privmap inspect`` (:func:`describe_real`, :func:`real_lines`) and
``privmap verify --json`` (:func:`verify_real`); each kind's command adds its own facts and
prints them, and ends with :func:`report_real`.
"""
from __future__ import annotations

import time
from collections.abc import Callable

import click

from ..commandline import Signed, emit

__all__ = ["describe_real", "real_lines", "verify_real", "report_real"]


def describe_real(payload: dict, **facts) -> dict:
    """The header facts of a real-valued payload and the kind's ``facts``.

    Header facts: version, times, mechanism, features, metrics, provenance.
    """
    return {"version": payload["version"], "issued_at": payload["issued_at"], "expires": payload["expires"],
            "mechanism": payload["mechanism"], "features": list(payload["features"]),
            "metrics": dict(payload["metrics"]), "provenance": dict(payload["provenance"]), **facts}


def real_lines(info: dict) -> list[str]:
    """The human-readable lines of :func:`describe_real`'s header facts."""
    return [f"  version {info['version']}, {info['mechanism']} mechanism, "
            f"expires {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(info['expires']))}",
            f"  releases {len(info['features'])} columns: {', '.join(info['features'])}"]


def verify_real(loaded, **facts) -> dict:
    """The ``verify --json`` facts of a loaded real-valued bundle: its identity and the kind's ``facts``."""
    return {"ok": True, "sha256": loaded.sha256, "key_id": loaded.key_id, "version": loaded.version,
            "expires": loaded.expires, "mechanism": loaded.mechanism, **facts}


def report_real(signed: Signed, facts: dict, print_description: Callable[[dict], None], *, as_json: bool) -> None:
    """The end of a real-valued kind's build command: the summary of the ``signed`` bundle.

    With the kind's ``facts`` (its ``describe`` of the payload), as JSON or as the line naming the
    file and the kind's ``print_description`` lines.
    """
    summary = {**signed.summary(), **facts}
    if as_json:
        emit(summary)
        return
    click.echo(f"wrote {signed.out} ({len(signed.bundle_bytes)} bytes)")
    print_description(summary)
