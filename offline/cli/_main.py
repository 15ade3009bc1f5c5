"""The ``privmap`` command line (click): keygen, build, verify, inspect, sanitize, evaluate, curve.

Every failure prints one line ``error: ...`` on stderr and exits non-zero
(1 for bad input or a refused bundle, 2 for usage errors); nothing half-written
is left behind. ``--json`` prints one JSON object on stdout for scripts;
progress goes to stderr.
"""
from __future__ import annotations

import csv
import io
import math
import pathlib
import sys
import time

import click
from privmap.device import Keyring, PrivmapDeviceError, read_bundle_file

from .._errors import BuildError
from ._common import atomic_write, emit, guard
from ._scale import run_partitioned, wants_partitioned


def _keyring(paths) -> Keyring:
    return Keyring.from_pem_files(*paths)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="privmap")
def main():
    """privmap: privacy-preserving mappings against inference attacks.

    An operator learns a mapping offline from users who share both their public
    data (ratings) and a private attribute (gender, party, income), signs it into
    a bundle, and ships it to devices; a device releases sanitized ratings that
    leak at most the bundle's declared I(A; released) bits about the attribute.

    \b
    Typical session:
      privmap keygen keys/
      privmap build data.csv --private gender --clusters 64 --delta-fraction 0.5 \\
          --key keys/private.pem --out tables/demo.bundle
      privmap verify tables/demo.bundle --trusted keys/public.pem
      privmap sanitize tables/demo.bundle --trusted keys/public.pem users.csv released.csv
      privmap evaluate tables/demo.bundle data.csv --private gender
    """


@main.command()
@click.argument("keydir", type=click.Path(file_okay=False, path_type=pathlib.Path))
@guard
def keygen(keydir):
    """Create an Ed25519 signing key pair in KEYDIR.

    Writes KEYDIR/private.pem (mode 0600; keep it on the build machine) and
    KEYDIR/public.pem (ship it to devices as their trusted key). Existing keys
    are never overwritten.
    """
    from ..bundle._keys import generate_keypair
    generate_keypair(keydir)
    click.echo(f"wrote {keydir / 'private.pem'} (mode 0600) and {keydir / 'public.pem'}")


@main.command()
@click.argument("data", metavar="DATA", type=click.Path(path_type=pathlib.Path))
@click.option("--private", "private", required=True, metavar="COL", help="Private attribute column.")
@click.option("--public", "public", metavar="COLS", help="Comma-separated public columns (default: all others).")
@click.option("--mechanism", type=click.Choice(["quantized", "exact"]), default="quantized", show_default=True,
              help="quantized: k-means representatives (Algorithm 2); exact: categorical tuples (Algorithm 1).")
@click.option("--metric", type=click.Choice(["l2", "l1", "hamming", "erasures"]), default=None,
              help="Distortion metric [default: l2 for quantized, erasures for exact].")
@click.option("--clusters", "-k", type=click.IntRange(min=1), help="Number of clusters K (quantized).")
@click.option("--delta", type=float, help="Distortion budget Delta, in the metric's unit.")
@click.option("--delta-fraction", type=float,
              help="Delta as a fraction of the perfect-privacy distortion (1.0 = zero leakage).")
@click.option("--key", required=True, type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Operator's private key (PEM, from `privmap keygen`).")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Bundle file to write (atomically).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of k-means.")
@click.option("--solver", type=click.Choice(["fast", "cvxpy"]), default="fast", show_default=True,
              help="fast: privmap's certified solver; cvxpy: Clarabel reference.")
@click.option("--bits", type=click.IntRange(1, 32), default=16, show_default=True,
              help="Table weights sum to 2^BITS per row.")
@click.option("--smoothing", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Additive smoothing of the prior's counts.")
@click.option("--bundle-version", type=click.IntRange(1, 2 ** 63 - 1), default=1, show_default=True,
              help="Monotonic bundle version (devices refuse versions below their minimum).")
@click.option("--issued-at", type=int, default=None,
              help="Creation time, unix seconds [default: SOURCE_DATE_EPOCH, else now].")
@click.option("--valid-days", type=click.FloatRange(min=0, min_open=True), default=365, show_default=True,
              help="Days until the bundle expires.")
@click.option("--json", "as_json", is_flag=True, help="Print the build summary as JSON.")
# Partitioned (out-of-core) build on Dask: needs the scale extra.
@click.option("--workers", metavar="N", type=click.IntRange(min=1), default=None,
              help="Partitioned build on a local Dask cluster of N worker processes [default: 2].")
@click.option("--scheduler", metavar="ADDRESS", default=None,
              help="Partitioned build on the existing Dask cluster at ADDRESS (e.g. tcp://10.0.0.5:8786).")
@click.option("--kmeans", type=click.Choice(["minibatch", "dask-ml", "in-memory"]), default="minibatch",
              show_default=True, help="Partitioned build's k-means: mini-batch over partitions, dask-ml's "
              "scalable k-means, or the in-memory build's k-means on all rows gathered (small data).")
@guard
def build(data, private, public, mechanism, metric, clusters, delta, delta_fraction, key, out, seed, solver,
          bits, smoothing, bundle_version, issued_at, valid_days, as_json, workers, scheduler, kmeans):
    """Build, sign and write a bundle from labelled data DATA.

    Estimates p(a, c), quantizes (K clusters), solves min I(A; C^) s.t.
    E d(C, C^) <= Delta, compresses the table to integers and signs the bundle.
    The bundle is loaded back with the device runtime before it is written.

    \b
    DATA is a CSV file (read into memory, up to 1 GiB), or, for millions of
    users, a directory or glob of CSV or Parquet files, built out of core on
    Dask partition by partition (quantized mechanism, l2 metric):
      privmap build 'ratings/*.parquet' --private party --clusters 1024 \\
          --delta-fraction 0.5 --key keys/private.pem --out big.bundle --workers 4
    A lone CSV file goes the partitioned way too when --workers or
    --scheduler is given.
    """
    from ..bundle._keys import load_private_key
    from ..bundle._write import check_bundle, encode_payload, sign_bundle
    from ..mechanisms._pipeline import BuildOptions
    from ..mechanisms._pipeline import build as run_build

    options = BuildOptions(
        private=private, public=tuple(c.strip() for c in public.split(",")) if public else None,
        mechanism=mechanism, metric=metric or ("erasures" if mechanism == "exact" else "l2"),
        clusters=clusters, delta=delta, delta_fraction=delta_fraction, seed=seed, solver=solver,
        bits=bits, smoothing=smoothing, bundle_version=bundle_version, issued_at=issued_at,
        valid_days=valid_days)
    private_key = load_private_key(key)
    started = time.perf_counter()
    stages = _StageClock()
    if wants_partitioned(data, workers, scheduler):
        result = run_partitioned(data, options, workers=workers, scheduler=scheduler, kmeans=kmeans,
                                 progress=stages)
    else:
        with click.progressbar(length=1000, label="build", file=sys.stderr, show_eta=False) as bar:
            def progress(stage, fraction):
                stages(stage, fraction)
                bar.label = f"build: {stage:<15}"
                bar.update(int(fraction * 1000) - bar.pos)
            result = run_build(data, options, progress=progress)
    payload_bytes = encode_payload(result.payload)
    bundle_bytes = sign_bundle(payload_bytes, private_key)
    check_bundle(bundle_bytes, private_key.public_key(), now=result.payload["issued_at"])
    atomic_write(out, bundle_bytes)
    seconds = time.perf_counter() - started
    metrics = result.payload["metrics"]
    summary = {"out": str(out), "bytes": len(bundle_bytes), "build_seconds": round(seconds, 3),
               **{k: metrics[k] for k in ("leakage_before_bits", "leakage_bits", "distortion", "delta", "r",
                                          "delta_plus_r", "clusters", "n", "perfect_privacy_distortion",
                                          "measured_distortion", "leakage_change_bits")},
               "solver": result.solved.solver, "stage_seconds": stages.seconds,
               "quantization_distortion": metrics["quantization_distortion"]}
    if math.isfinite(result.solved.gap_bits):
        summary["solver_gap_bits"] = result.solved.gap_bits
    if as_json:
        emit(summary)
        return
    click.echo(f"wrote {out} ({len(bundle_bytes)} bytes) in {seconds:.2f} s")
    click.echo(f"  leakage I(A;C^): {metrics['leakage_bits']:.6f} bits "
               f"(before the mapping: {metrics['leakage_before_bits']:.6f} bits)")
    click.echo(f"  distortion: {metrics['distortion']:.4f} on clusters (Delta = {metrics['delta']:.4f}); "
               f"measured on data {metrics['measured_distortion']:.4f} <= Delta + r = {metrics['delta_plus_r']:.4f}")
    click.echo(f"  K = {metrics['clusters']}, n = {metrics['n']}, perfect privacy at Delta = "
               f"{metrics['perfect_privacy_distortion']:.4f}, solver {result.solved.solver}")


class _StageClock:
    """A build's progress callback that records the wall seconds spent in each stage."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self._stage, self._since = None, time.perf_counter()

    def __call__(self, stage: str, fraction: float) -> None:
        now = time.perf_counter()
        if self._stage is not None:
            self.seconds[self._stage] = round(self.seconds.get(self._stage, 0.0) + now - self._since, 3)
        self._stage, self._since = stage, now


def _describe(payload: dict) -> dict:
    metrics = payload["metrics"]
    return {
        "version": payload["version"], "issued_at": payload["issued_at"], "expires": payload["expires"],
        "mechanism": payload["mechanism"], "metric": payload["metric"],
        "features": [f["name"] for f in payload["features"]],
        "private": payload["private"]["name"], "classes": payload["private"]["classes"],
        "inputs": len(payload["inputs"]), "outputs": len(payload["outputs"]), "bits": payload["table"]["bits"],
        "nonzero_per_row": sum(len(r) for r in payload["table"]["index"]) / max(len(payload["table"]["index"]), 1),
        "leakage_bits": metrics["leakage_bits"], "distortion": metrics["distortion"], "delta": metrics["delta"],
        "clusters": metrics["clusters"], "metrics": dict(metrics), "provenance": dict(payload["provenance"]),
    }


def _print_description(info: dict) -> None:
    click.echo(f"  version {info['version']}, {info['mechanism']} mechanism, metric {info['metric']}, "
               f"expires {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(info['expires']))}")
    click.echo(f"  private {info['private']!r} in {info['classes']}; {len(info['features'])} public features")
    click.echo(f"  K_in = {info['inputs']}, K_out = {info['outputs']}, B = {info['bits']}, "
               f"{info['nonzero_per_row']:.2f} nonzero entries per row")
    click.echo(f"  leakage {info['leakage_bits']:.6f} bits, distortion {info['distortion']:.4f} "
               f"(Delta = {info['delta']:.4f})")


@main.command()
@click.argument("bundle", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("--trusted", required=True, multiple=True, type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Trusted public key (PEM); repeat for several.")
@click.option("--min-version", type=click.IntRange(min=1), default=1, show_default=True,
              help="Refuse bundles older than this version.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guard
def verify(bundle, trusted, min_version, as_json):
    """Check BUNDLE exactly as a device would, and recompute its leakage.

    Size, envelope, Ed25519 signature by a trusted key (before the payload is
    decoded), format, expiry, version, every array, and the declared leakage
    against the leakage recomputed from the bundled prior and integer table.
    Exits 1 with the reason if any check fails.
    """
    from privmap.device import recompute_leakage_bits
    loaded = read_bundle_file(bundle, _keyring(trusted), min_version=min_version)
    recomputed = recompute_leakage_bits(loaded)
    info = {"ok": True, "sha256": loaded.sha256, "key_id": loaded.key_id, "version": loaded.version,
            "expires": loaded.expires, "leakage_bits": loaded.metrics["leakage_bits"],
            "recomputed_leakage_bits": recomputed, "distortion": loaded.metrics["distortion"],
            "delta": loaded.metrics["delta"], "clusters": loaded.metrics["clusters"]}
    if as_json:
        emit(info)
        return
    click.echo(f"OK: {bundle} verified (sha256 {loaded.sha256[:16]}..., key {loaded.key_id[:16]}...)")
    click.echo(f"  declared leakage {info['leakage_bits']:.6f} bits, recomputed {recomputed:.6f} bits")


@main.command()
@click.argument("bundle", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("--trusted", multiple=True, type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Verify with this public key first (otherwise the contents are shown UNVERIFIED).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guard
def inspect(bundle, trusted, as_json):
    """Show what BUNDLE contains: mechanism, sizes, metrics, provenance.

    Without --trusted the signature is not checked and the output says so.
    """
    from ..bundle._inspect import read_bytes, read_unverified
    if trusted:
        loaded = read_bundle_file(bundle, _keyring(trusted))
        payload, _ = read_unverified(loaded.data)
        verified = True
    else:
        payload, _ = read_unverified(read_bytes(bundle))
        verified = False
    info = {"signature_verified": verified, **_describe(payload)}
    if as_json:
        emit(info)
        return
    click.echo(f"{bundle}: signature {'verified' if verified else 'NOT VERIFIED (no --trusted key given)'}")
    _print_description(info)


@main.command()
@click.argument("bundle", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.argument("infile", metavar="IN.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.argument("outfile", metavar="OUT.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.option("--trusted", required=True, multiple=True, type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Trusted public key (PEM); repeat for several.")
@click.option("--min-version", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@guard
def sanitize(bundle, infile, outfile, trusted, min_version, as_json):
    """Release sanitized rows of IN.csv into OUT.csv, as a device would.

    IN.csv has a header naming the bundle's public features (any order); the
    private column, if present, is ignored and never written. OUT.csv holds the
    public columns only, in the bundle's order; erased cells are empty. If any
    row is invalid nothing is written.
    """
    loaded = read_bundle_file(bundle, _keyring(trusted), min_version=min_version)
    names = [f.name for f in loaded.features]
    with infile.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        header = [h.strip() for h in next(reader, [])]
        missing = [n for n in names if n not in header]
        if missing:
            raise BuildError(f"{infile}: missing public column(s) {', '.join(missing)}")
        extra = [h for h in header if h not in names and h != loaded.private_name]
        if extra:
            raise BuildError(f"{infile}: unknown column(s) {', '.join(extra)}; remove them "
                             f"(only the bundle's features and {loaded.private_name!r} are accepted)")
        at = [header.index(n) for n in names]
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(names)
        count = 0
        started = time.perf_counter()
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise BuildError(f"{infile}, line {reader.line_num}: {len(row)} cells, header has {len(header)}")
            try:
                released = loaded.sanitize([row[i].strip() for i in at])
            except PrivmapDeviceError as exc:
                raise BuildError(f"{infile}, line {reader.line_num}: {exc}") from None
            writer.writerow(["" if v is None else v for v in released])
            count += 1
    elapsed = time.perf_counter() - started
    atomic_write(outfile, out.getvalue().encode("utf-8"))
    summary = {"rows": count, "out": str(outfile), "bundle_sha256": loaded.sha256, "bundle_version": loaded.version,
               "seconds": round(elapsed, 4), "microseconds_per_row": round(1e6 * elapsed / max(count, 1), 1)}
    if as_json:
        emit(summary)
    else:
        click.echo(f"released {count} rows to {outfile} with bundle {loaded.sha256[:16]}... "
                   f"({summary['microseconds_per_row']} us/row)")


def _register_evaluation_commands() -> None:
    try:
        from ._eval import curve, evaluate
    except ImportError:  # the evaluation suite is not in this build
        return
    main.add_command(evaluate)
    main.add_command(curve)


_register_evaluation_commands()
