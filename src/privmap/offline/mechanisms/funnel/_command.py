"""``privmap build-funnel`` (seed 003) and ``privmap build-max-correlation`` (seed 002).

Each command takes only its mechanism's options besides the ones every build shares
(:mod:`._options`); the bundle is signed, loaded back with the device runtime and written
atomically, as for the other mechanisms. ``describe_seed_payload`` is what ``privmap inspect``
shows of such bundles.
"""
from __future__ import annotations

import pathlib
import time

import click

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


@click.command("build-funnel")
@click.argument("data", metavar="DATA.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("--private", required=True, metavar="COL", help="Private attribute column S.")
@click.option("--public", metavar="COLS", help="Comma-separated public columns X (default: all others).")
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
def build_funnel(data, private, public, disclosure, disclosure_fraction, smoothing, seed, metric, key, out,
                 passphrase_file, header, as_json):
    """Build a privacy-funnel bundle (seed 003) from categorical DATA.csv.

    Merges the public tuples X greedily into groups Y, keeping the disclosure
    I(X;Y) >= R and lowering the leakage I(S;Y) about the private S (log-loss
    distortion). Give exactly one of --disclosure and --disclosure-fraction.

    \b
    Example:
      privmap build-funnel adult.csv --private income_sex --disclosure-fraction 0.5 \\
          --key keys/private.pem --out funnel.bundle
    """
    from ..mechanisms.funnel._build import FunnelOptions, build_funnel as run
    options = FunnelOptions(private=private, public=columns(public), disclosure=disclosure,
                            disclosure_fraction=disclosure_fraction, smoothing=smoothing, seed=seed, **header)
    private_key = load_key(key, passphrase_file)
    started = time.perf_counter()
    payload = run(data, options).payload
    _finish("funnel", payload, private_key, out, started, as_json,
            ("leakage_before_bits", "leakage_bits", "disclosure_bits", "disclosure_floor_bits", "entropy_x_bits",
             "clusters", "outputs", "n"))


@click.command("build-max-correlation")
@click.argument("data", metavar="DATA.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("--delta", type=float, required=True, metavar="D", help="Budget D: expected changed cells (hamming).")
@click.option("--public", metavar="COLS", help="Comma-separated public columns X (default: all but --private).")
@click.option("--private", metavar="COL", help="A column to leave out of X (never read: the design uses P_X alone).")
@click.option("--metric", type=click.Choice(["hamming"]), default="hamming", show_default=True,
              help="Distortion metric (changed cells).")
@click.option("--information-budget", type=click.FloatRange(min=0), default=None, metavar="BITS",
              help="Assumed bound Delta >= I(S;X) in bits; the bundle then declares the leakage bound "
                   "Delta x S*_upper.")
@click.option("--prior-only", is_flag=True, help="Design from P_X alone (always so; accepted for clarity).")
@click.option("--bits", type=click.IntRange(1, 32), default=None,
              help="Table weights sum to 2^BITS per row [default: 24; rho_m^2 is sensitive to the rounding of "
                   "rarely released outputs].")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Random seed.")
@bundle_options
@header_options
@json_option
@guard
def build_max_correlation(data, delta, public, private, metric, information_budget, prior_only, bits, seed, key,
                          out, passphrase_file, header, as_json):
    """Build a max-correlation bundle (seed 002) from the public tuples of DATA.csv.

    Minimises rho_m(X;Y)^2 subject to E d(X, Y) <= D from the marginal P_X
    alone: no private labels are read, and I(S;Y) <= S* x I(S;X) holds for
    every private S (S* <= the declared upper bound).

    \b
    Example:
      privmap build-max-correlation census.csv --public sex,age --delta 0.3 \\
          --key keys/private.pem --out maxcorr.bundle
    """
    from ..mechanisms.maxcorr._build import MAXCORR_BITS, MaxCorrOptions
    from ..mechanisms.maxcorr._build import build_max_correlation as run
    options = MaxCorrOptions(delta=delta, public=columns(public), private=private, metric=metric,
                             information_budget=information_budget, bits=bits or MAXCORR_BITS, seed=seed,
                             **header)
    private_key = load_key(key, passphrase_file)
    started = time.perf_counter()
    payload = run(data, options).payload
    _finish("max-correlation", payload, private_key, out, started, as_json,
            ("rho_m_squared", "s_star_upper_bound", "s_star_lower_bound", "s_star_verified", "distortion", "delta",
             "clusters", "n") + (("leakage_bound_bits",) if information_budget is not None else ()))


def _finish(mechanism, payload, private_key, out, started, as_json, shown) -> None:
    """Sign, check and write ``payload``; print the summary (``shown`` metrics) as text or JSON."""
    bundle_bytes = sign_check_write(payload, private_key, out)
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
