"""``privmap verify`` and ``privmap inspect``: a bundle checked as a device would, and what it contains.

``verify`` loads the bundle with the device runtime (signatures before anything is decoded) and
recomputes its declared figures; ``inspect`` shows the payload, checked or not.
"""
from __future__ import annotations

import math
import pathlib
import time

import click

from privmap.device import read_bundle_file

from .._joint import by_column, payload_columns
from ..commandline import emit, guard, trust_options, trusted_keyring
from ..measures import exposure_line, payload_exposure
from ..mechanisms import MECHANISMS, column_lines, robust_line


@click.command()
@click.argument("bundle", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@trust_options(required=True)
@click.option("--min-version", type=click.IntRange(min=1), default=1, show_default=True,
              help="Refuse bundles older than this version.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guard
def verify(bundle, trusted, keyrings, min_version, as_json):
    """Check BUNDLE exactly as a device would, and recompute its leakage.

    Size, envelope, Ed25519 signatures by trusted keys (before the payload is
    decoded; with --keyring, by as many distinct keys as its threshold), format,
    issue date and expiry, version, every array, and the declared leakage
    against the leakage recomputed from the bundled prior and integer table.
    Exits 1 with the reason if any check fails.
    """
    from privmap.device.kinds import recompute_leakage_bits
    from privmap.device.trust import schema_sha256
    loaded = read_bundle_file(bundle, trusted_keyring(trusted, keyrings), min_version=min_version)
    record = MECHANISMS[loaded.mechanism]
    if not record.private:  # max-correlation: no prior; rho_m^2 was recomputed on load
        from privmap.device.kinds.max_correlation import rho_m_squared_pure
        info = {"ok": True, "sha256": loaded.sha256, "key_id": loaded.key_id, "version": loaded.version,
                "expires": loaded.expires, "rho_m_squared": loaded.metrics["rho_m_squared"],
                "recomputed_rho_m_squared": rho_m_squared_pure(loaded.p_x, loaded.index, loaded.weight, loaded.bits),
                "s_star_upper_bound": loaded.metrics["s_star_upper_bound"],
                "distortion": loaded.metrics["distortion"], "delta": loaded.metrics["delta"]}
        if as_json:
            emit(info)
            return
        click.echo(f"OK: {bundle} verified (sha256 {loaded.sha256[:16]}..., key {loaded.key_id[:16]}...)")
        click.echo(f"  declared rho_m^2 {info['rho_m_squared']:.6f}, recomputed {info['recomputed_rho_m_squared']:.6f}")
        return
    if record.report is not None:
        info = record.report.verify_facts(loaded)
        if as_json:
            emit(info)
        else:
            click.echo(f"OK: {bundle} verified (sha256 {loaded.sha256[:16]}..., key {loaded.key_id[:16]}...)")
        return
    recomputed = recompute_leakage_bits(loaded)
    info = {"ok": True, "sha256": loaded.sha256, "key_id": loaded.key_id, "version": loaded.version,
            "schema_sha256": schema_sha256(loaded.features),  # for devices' Binding
            "expires": loaded.expires, "leakage_bits": loaded.metrics["leakage_bits"],
            "recomputed_leakage_bits": recomputed, "distortion": loaded.metrics["distortion"],
            "delta": loaded.metrics["delta"], "clusters": loaded.metrics["clusters"]}
    if "disclosure_bits" in loaded.metrics:
        info["disclosure_bits"] = loaded.metrics["disclosure_bits"]
    if as_json:
        emit(info)
        return
    click.echo(f"OK: {bundle} verified (sha256 {loaded.sha256[:16]}..., key {loaded.key_id[:16]}...)")
    click.echo(f"  declared leakage {info['leakage_bits']:.6f} bits, recomputed {recomputed:.6f} bits")


@click.command()
@click.argument("bundle", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@trust_options(required=False)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guard
def inspect(bundle, trusted, keyrings, as_json):
    """Show what BUNDLE contains: mechanism, sizes, metrics, provenance, signatures.

    Without --trusted or --keyring the signatures are not checked and the
    output says so. Reads single-signature (format 1) and k-of-n (format 2)
    bundles.
    """
    from ..bundle import listed_signatures, payload_output_leakage, read_bytes, read_unverified
    keyring = trusted_keyring(trusted, keyrings, required=False)
    data = read_bytes(bundle) if keyring is None else read_bundle_file(bundle, keyring).data
    payload, _ = read_unverified(data)
    envelope_format, signers = listed_signatures(data)
    verified = keyring is not None
    kind = MECHANISMS[payload["mechanism"]].report
    info = {"signature_verified": verified, "envelope_format": envelope_format, "signatures": signers,
            **(kind.describe(payload) if kind else _describe(payload))}
    info["max_output_leakage_bits"], info["max_output_leakage_note"] = payload_output_leakage(payload)
    if as_json:
        emit(info)
        return
    click.echo(f"{bundle}: signature {'verified' if verified else 'NOT VERIFIED (no --trusted or --keyring given)'}")
    click.echo(f"  envelope format {envelope_format}, {len(signers)} signature(s) listed: "
               + ", ".join(f"{key_id[:16]}..." for key_id in signers))
    (kind.print_description if kind else _print_description)(info)


def _describe(payload: dict) -> dict:
    metrics = payload["metrics"]
    if MECHANISMS[payload["mechanism"]].view is None:  # the funnel's, max-correlation's
        return _describe_categorical(payload)
    return {
        "version": payload["version"], "issued_at": payload["issued_at"], "expires": payload["expires"],
        "mechanism": payload["mechanism"], "metric": payload["metric"],
        "features": [f["name"] for f in payload["features"]],
        "domains": {f["name"]: {k: f[k] for k in ("min", "max", "integer", "missing", "fill", "missing_token")}
                    for f in payload["features"] if f["kind"] == "numeric"},
        "private": payload["private"]["name"], "classes": payload["private"]["classes"],
        "inputs": len(payload["inputs"]), "outputs": len(payload["outputs"]), "bits": payload["table"]["bits"],
        "nonzero_per_row": sum(len(r) for r in payload["table"]["index"]) / max(len(payload["table"]["index"]), 1),
        "leakage_bits": metrics["leakage_bits"], "distortion": metrics["distortion"], "delta": metrics["delta"],
        "clusters": metrics["clusters"], "metrics": dict(metrics), "provenance": dict(payload["provenance"]),
        "holdout_leakage_bits": metrics.get("holdout_leakage_bits"),
        "holdout_leakage_interval_bits": ([metrics["holdout_leakage_low_bits"], metrics["holdout_leakage_high_bits"]]
                                          if "holdout_leakage_low_bits" in metrics else None),
        **_attacker_description(metrics),
        "holdout_exposed_2x": metrics.get("holdout_exposed_2x"), "holdout_exposed_4x": metrics.get("holdout_exposed_4x"),
        **payload_exposure(payload),
        **_column_description(payload),
        **_robust_description(payload),
        **({"rating_columns": list(payload["model"]["columns"]),
            "rating_domain": {k: payload["model"][k] for k in ("min", "max", "integer", "missing_token")}}
           if payload.get("model") is not None else {}),
    }


def _attacker_description(metrics: dict) -> dict:
    """The strongest attacker the cross-fitting met (``--clusters auto`` builds; None otherwise).

    Its fields: ``holdout_attacker_auc``, its upper bound ``holdout_attacker_auc_high`` and
    ``holdout_attacker``, its name (:mod:`privmap.offline._strongest`; None for a bundle that
    declares the logistic attacker's alone).
    """
    from .._strongest import strongest_name
    return {"holdout_attacker_auc": metrics.get("holdout_attacker_auc"),
            "holdout_attacker_auc_high": metrics.get("holdout_attacker_auc_high"),
            "holdout_attacker": strongest_name(metrics)}


def _column_description(payload: dict) -> dict:
    """What each private column leaks alone.

    The fields: ``private_columns`` (their names), and ``leakage_bits_by_column``,
    ``holdout_leakage_bits_by_column`` (and the interval's
    ``holdout_leakage_interval_bits_by_column``), column name -> bits. A joint bundle declares
    them per column (``leakage_bits[COL]``, docs/bundle-format.md); a one-column bundle's one
    column is its private attribute, so its figures are the bundle's own (None where the bundle
    has none, as the cross-fitted one without folds).
    """
    metrics = payload["metrics"]
    columns = payload_columns(payload)
    if columns is None:
        name = payload["private"]["name"]
        held = metrics.get("holdout_leakage_bits")
        return {"private_columns": [name], "leakage_bits_by_column": {name: metrics["leakage_bits"]},
                "holdout_leakage_bits_by_column": None if held is None else {name: held},
                "holdout_leakage_interval_bits_by_column": (
                    {name: [metrics["holdout_leakage_low_bits"], metrics["holdout_leakage_high_bits"]]}
                    if "holdout_leakage_low_bits" in metrics else None)}
    low = by_column(metrics, "holdout_leakage_low_bits", columns.names) or {}
    high = by_column(metrics, "holdout_leakage_high_bits", columns.names) or {}
    return {"private_columns": list(columns.names),
            "leakage_bits_by_column": by_column(metrics, "leakage_bits", columns.names),
            "holdout_leakage_bits_by_column": by_column(metrics, "holdout_leakage_bits", columns.names),
            "holdout_leakage_interval_bits_by_column": {c: [low[c], high[c]] for c in low if c in high} or None}


def _describe_categorical(payload: dict) -> dict:
    """``privmap inspect`` fields of a funnel or max-correlation payload.

    The usual ones plus ``disclosure_bits`` (funnel) or ``rho_m_squared`` and the S* bound
    (max-correlation, which has no private attribute: ``private`` is None, ``leakage_bits`` absent).
    """
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
        "holdout_exposed_2x": None, "holdout_exposed_4x": None, **payload_exposure(payload),
    }
    if MECHANISMS[payload["mechanism"]].disclosure:
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


def _robust_description(payload: dict) -> dict:
    """The robust figures: as declared, else computed, else None.

    As declared (``--robust``), else computed from the payload's prior and table at the default
    confidence when the prior is an unsmoothed empirical one (its counts are prior x n), else None;
    ``robust_source`` says which (docs/guarantees.md).
    """
    keys = ("robust_leakage_bits", "robust_confidence", "robust_max_output_leakage_bits")
    metrics = payload["metrics"]
    if "robust_leakage_bits" in metrics:
        return {**{k: metrics.get(k) for k in keys}, "robust_source": "declared"}
    figures = None
    if payload.get("prior") is not None and payload.get("table") is not None:
        from ..bundle import payload_table
        from ..solvers import DEFAULT_CONFIDENCE, robust_figures_of_table
        q = payload_table(payload).toarray()
        figures = robust_figures_of_table(payload["prior"], q, int(metrics.get("n", 0)), DEFAULT_CONFIDENCE)
    if figures is None:
        return {**{k: None for k in keys}, "robust_source": None}
    return {**{k: figures.get(k) for k in keys}, "robust_source": "computed at the default confidence"}


def _print_description(info: dict) -> None:
    click.echo(f"  version {info['version']}, {info['mechanism']} mechanism, metric {info['metric']}, "
               f"expires {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(info['expires']))}")
    if "rating_columns" in info:
        domain = info["rating_domain"]
        click.echo(f"  private {info['private']!r} in {info['classes']}; {len(info['rating_columns'])} rating columns "
                   f"in [{domain['min']}, {domain['max']}] "
                   + str(MECHANISMS[info["mechanism"]].model_space).format(len(info["features"])))
    else:
        click.echo(f"  private {info['private']!r} in {info['classes']}; {len(info['features'])} public features")
    click.echo(f"  K_in = {info['inputs']}, K_out = {info['outputs']}, B = {info['bits']}, "
               f"{info['nonzero_per_row']:.2f} nonzero entries per row")
    if "rho_m_squared" in info:
        click.echo(f"  rho_m^2 {info['rho_m_squared']:.6f}, S* <= {info['s_star_upper_bound']:.6f} "
                   f"({'verified' if info['s_star_verified'] else 'S* = rho_m^2 NOT verified'}), "
                   f"distortion {info['distortion']:.4f} (D = {info['delta']:.4f})")
        return
    click.echo(f"  leakage {info['leakage_bits']:.6f} bits, distortion {info['distortion']:.4f} "
               f"(Delta = {info['delta']:.4f})" + (f", disclosure {info['disclosure_bits']:.6f} bits"
                                                   if "disclosure_bits" in info else ""))
    if info.get("robust_leakage_bits") is not None:
        click.echo(f"  {robust_line(info)} ({info['robust_source']})")
    eps = info.get("max_output_leakage_bits")
    click.echo("  per-output leakage: " + ("-" if eps is None else f"{eps:.6f} bits")
               + f"; {info.get('max_output_leakage_note', '')}")
    if info["holdout_leakage_bits"] is not None:
        low, high = info["holdout_leakage_interval_bits"] or (math.nan, math.nan)
        click.echo(f"  new users (cross-fitted): leakage {info['holdout_leakage_bits']:.6f} bits "
                   f"[{low:.6f}, {high:.6f}]"
                   + (f", strongest attacker AUC {info['holdout_attacker_auc']:.4f} (upper "
                      f"{info['holdout_attacker_auc_high']:.4f}, {info['holdout_attacker'] or 'logistic'})"
                      if info.get("holdout_attacker_auc") is not None else ""))
    if (exposure := exposure_line(info)) is not None:
        click.echo("  " + exposure)
    if len(info.get("private_columns") or ()) > 1:
        click.echo(column_lines(info["metrics"], info["private_columns"]))
