"""``privmap sanitize``: release rows of a CSV as one device per row (or one device with state) would."""
from __future__ import annotations

import pathlib
import time

import click
from privmap.device import read_bundle_file

from .._errors import BuildError
from ._common import atomic_write, emit, guard, trust_options, trusted_keyring


@click.command()
@click.argument("bundle", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.argument("infile", metavar="IN.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.argument("outfile", metavar="OUT.csv", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@trust_options(required=True)
@click.option("--min-version", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--rejects", type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Write refused rows here as CSV: line number and reason (never the raw values).")
@click.option("--skip-invalid", is_flag=True,
              help="Exit 0 even when rows were refused (they are still left out and counted).")
@click.option("--state", "state_dir", type=click.Path(file_okay=False, path_type=pathlib.Path),
              help="Device state directory (created if absent): installs BUNDLE there, refuses a "
                   "lower version than one used before, and releases one permanent draw per input.")
@click.option("--stamp", is_flag=True, help="Add bundle_sha256 and bundle_version columns to OUT.csv.")
@click.option("--device-class", metavar="NAME",
              help="Act as a device of this class: refuse a bundle built for another class.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@guard
def sanitize(bundle, infile, outfile, trusted, keyrings, min_version, rejects, skip_invalid, state_dir, stamp,
             device_class, as_json):
    """Release sanitized rows of IN.csv into OUT.csv, as one device per row would.

    IN.csv has a header naming the bundle's public features (any order); the
    private column, if present, is ignored and never written. A blank cell is a
    missing answer (handled as the bundle declares). OUT.csv holds the public
    columns only, in the bundle's order, one row per valid input row, in input
    order; erased cells are empty.

    A row the device refuses (wrong length, not a number, outside the declared
    domain, every cell missing) is left out and nothing is released for it; the
    others are still released. Then the command exits 1 with the count of
    refused rows, unless --skip-invalid. --rejects FILE lists the refused line
    numbers and reasons; no raw value of a refused row is written anywhere.

    Without --state every call draws afresh, so asking the same rows again
    releases new draws (an observer averaging them learns more). With
    --state DIR the CLI acts as one device: running it twice on the same
    input gives identical released rows, and once a bundle of version v has
    been used with DIR a lower version is refused (nothing is written).

    Trust either PEM keys (--trusted, any one signature) or a keyring
    document (--keyring, its threshold of distinct signatures; with --state
    the device state is opened with that keyring's current keys). A bundle
    issued more than a day after the clock is refused, with or without --state.
    """
    from privmap.device import Binding, check_binding

    from ._batch import rejects_csv, sanitize_csv
    binding = Binding(device_class=device_class) if device_class else None
    keyring = trusted_keyring(trusted, keyrings)
    if state_dir is not None:
        from ._state import stateful_release
        loaded, release = stateful_release(state_dir, bundle, keyring, min_version, binding)
    else:  # issued_at beyond the clock by more than MAX_CLOCK_SKEW is refused here as with --state
        loaded = read_bundle_file(bundle, keyring, min_version=min_version)
        check_binding(loaded, binding)
        release = loaded.sanitize
    started = time.perf_counter()
    result = sanitize_csv(loaded, infile, release=release, stamp=stamp)
    elapsed = time.perf_counter() - started
    atomic_write(outfile, result.released.encode("utf-8"))
    if rejects is not None:
        atomic_write(rejects, rejects_csv(result.refused).encode("utf-8"))
    count = result.rows - len(result.refused)
    summary = {"rows": count, "refused": len(result.refused), "read": result.rows, "out": str(outfile),
               "rejects": str(rejects) if rejects is not None else None, "bundle_sha256": loaded.sha256,
               "bundle_version": loaded.version, "seconds": round(elapsed, 4),
               "microseconds_per_row": round(1e6 * elapsed / max(result.rows, 1), 1)}
    if as_json:
        emit(summary)
    else:
        click.echo(f"released {count} rows to {outfile} with bundle {loaded.sha256[:16]}... "
                   f"({summary['microseconds_per_row']} us/row)")
    if result.refused and not skip_invalid:
        first = result.refused[0]
        where = f"see {rejects}" if rejects is not None else f"first at line {first[0]}: {first[1]}"
        raise BuildError(f"{len(result.refused)} of {result.rows} rows refused and left out ({where}); "
                         "use --skip-invalid to accept that")
