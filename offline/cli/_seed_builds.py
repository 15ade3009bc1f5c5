"""``privmap build`` for the funnel (seed 003) and max-correlation (seed 002) mechanisms.

Called by the ``build`` command in ``_main`` when ``--mechanism`` is ``funnel`` or
``max-correlation``; the bundle is signed, loaded back with the device runtime and written
atomically, as for the other mechanisms.
"""
from __future__ import annotations

import time

import click

from .._errors import BuildError
from ._common import atomic_write, emit


def build_seed_mechanism(*, data, private, public, mechanism, metric, delta, delta_fraction, disclosure,
                         disclosure_fraction, information_budget, key, passphrase_file, out, seed, bits,
                         smoothing, bundle_version, issued_at, valid_days, device_class, as_json) -> None:
    """Build, sign, check and write a funnel or max-correlation bundle; print a summary.

    Raises
    ------
    BuildError
        Options that do not fit the mechanism, bad data, or a bundle the device would refuse.
    """
    from ..bundle._keys import load_private_key
    from ..bundle._write import check_bundle, encode_payload, sign_bundle
    from ._passphrase import read_passphrase
    if smoothing == "auto":
        raise BuildError(f"--smoothing auto applies to the quantized mechanism, not {mechanism}")
    cols = tuple(c.strip() for c in public.split(",")) if public else None
    started = time.perf_counter()
    if mechanism == "funnel":
        from ..mechanisms.funnel._build import FunnelOptions, build_funnel
        if private is None:
            raise BuildError("the funnel mechanism needs --private COL")
        if metric not in (None, "log-loss") or delta is not None or delta_fraction is not None:
            raise BuildError("the funnel mechanism takes --disclosure or --disclosure-fraction "
                             "(log-loss), not --metric/--delta/--delta-fraction")
        options = FunnelOptions(private=private, public=cols, disclosure=disclosure,
                                disclosure_fraction=disclosure_fraction, smoothing=smoothing, seed=seed,
                                bundle_version=bundle_version, issued_at=issued_at, valid_days=valid_days,
                                device_class=device_class)
        private_key = load_private_key(key, password=read_passphrase(passphrase_file))
        payload = build_funnel(data, options).payload
        shown = ("leakage_before_bits", "leakage_bits", "disclosure_bits", "disclosure_floor_bits",
                 "entropy_x_bits", "clusters", "outputs", "n")
    else:
        from ..mechanisms.maxcorr._build import (
            MAXCORR_BITS,
            MaxCorrOptions,
            build_max_correlation,
        )
        if delta is None or delta_fraction is not None or disclosure is not None or disclosure_fraction is not None:
            raise BuildError("the max-correlation mechanism takes --delta D (expected changed cells)")
        options = MaxCorrOptions(delta=delta, public=cols, private=private, metric=metric or "hamming",
                                 information_budget=information_budget, bits=bits or MAXCORR_BITS, seed=seed,
                                 bundle_version=bundle_version, issued_at=issued_at, valid_days=valid_days,
                                 device_class=device_class)
        private_key = load_private_key(key, password=read_passphrase(passphrase_file))
        payload = build_max_correlation(data, options).payload
        shown = ("rho_m_squared", "s_star_upper_bound", "s_star_lower_bound", "s_star_verified", "distortion",
                 "delta", "clusters", "n") + (("leakage_bound_bits",) if information_budget is not None else ())
    bundle_bytes = sign_bundle(encode_payload(payload), private_key)
    check_bundle(bundle_bytes, private_key.public_key(), now=payload["issued_at"])
    atomic_write(out, bundle_bytes)
    seconds = time.perf_counter() - started
    metrics = payload["metrics"]
    summary = {"out": str(out), "bytes": len(bundle_bytes), "build_seconds": round(seconds, 3),
               "mechanism": mechanism, **{k: metrics[k] for k in shown}}
    if as_json:
        emit(summary)
        return
    click.echo(f"wrote {out} ({len(bundle_bytes)} bytes) in {seconds:.2f} s, {mechanism} mechanism")
    if mechanism == "funnel":
        click.echo(f"  leakage I(S;Y): {metrics['leakage_bits']:.6f} bits (I(S;X) = "
                   f"{metrics['leakage_before_bits']:.6f}); disclosure I(X;Y): {metrics['disclosure_bits']:.6f} "
                   f">= R = {metrics['disclosure_floor_bits']:.6f} bits (H(X) = {metrics['entropy_x_bits']:.6f})")
        click.echo(f"  {metrics['clusters']} public tuples merged into {metrics['outputs']} groups, n = {metrics['n']}")
    else:
        state = "verified (S* = rho_m^2)" if metrics["s_star_verified"] else "NOT verified: S* <= the upper bound"
        click.echo(f"  rho_m^2 = {metrics['rho_m_squared']:.6f}; S* in [{metrics['s_star_lower_bound']:.6f}, "
                   f"{metrics['s_star_upper_bound']:.6f}] ({state})")
        click.echo(f"  guarantee: I(S;Y) <= {metrics['s_star_upper_bound']:.6f} x I(S;X) for any private S; "
                   f"distortion {metrics['distortion']:.4f} <= D = {metrics['delta']:.4f} changed cells")


def describe_seed_payload(payload: dict) -> dict:
    """``privmap inspect`` fields of a funnel or max-correlation payload: the usual ones plus
    ``disclosure_bits`` (funnel) or ``rho_m_squared`` and the S* bound (max-correlation, which
    has no private attribute: ``private`` is None, ``leakage_bits`` absent)."""
    metrics = payload["metrics"]
    index = payload["table"]["index"]
    info = {
        "version": payload["version"], "issued_at": payload["issued_at"], "expires": payload["expires"],
        "mechanism": payload["mechanism"], "metric": payload["metric"],
        "features": [f["name"] for f in payload["features"]],
        "private": payload["private"]["name"] if "private" in payload else None,
        "classes": payload["private"]["classes"] if "private" in payload else [],
        "inputs": len(payload["inputs"]), "outputs": len(payload["outputs"]), "bits": payload["table"]["bits"],
        "nonzero_per_row": sum(len(r) for r in index) / max(len(index), 1),
        "distortion": metrics["distortion"], "delta": metrics["delta"], "clusters": metrics["clusters"],
        "metrics": dict(metrics), "provenance": dict(payload["provenance"]),
        # neither mechanism cross-fits a new-user estimate: declared absent, not left out
        "holdout_leakage_bits": None, "holdout_leakage_interval_bits": None,
    }
    if payload["mechanism"] == "funnel":
        info["leakage_bits"] = metrics["leakage_bits"]
        info["disclosure_bits"] = metrics["disclosure_bits"]
        groups: dict[int, list] = {}
        for c, row in enumerate(index):
            groups.setdefault(row[0], []).append(c)
        info["groups"] = [groups[j] for j in sorted(groups)]
    else:
        for key in ("rho_m_squared", "s_star_upper_bound", "s_star_lower_bound", "s_star_verified"):
            info[key] = metrics.get(key)
    return info
