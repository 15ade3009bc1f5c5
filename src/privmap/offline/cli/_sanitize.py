"""``privmap sanitize``: release rows of a CSV as one device per row (or one device with state) would."""
from __future__ import annotations

import contextlib
import os
import pathlib
import time

import click

from privmap.device import read_bundle_file

from .._errors import BuildError
from .._files import atomic_output
from ..commandline import emit, guard, trust_options, trusted_keyring


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
@click.option("--id", "id_column", metavar="COL",
              help="Carry the row key column COL through unmapped, as OUT.csv's first column.")
@click.option("--max-line-length", type=click.IntRange(min=1), default=None, metavar="CHARS",
              help="Refuse a longer line of IN.csv as one row.  [default: 1048576]")
@click.option("--state", "state_dir", type=click.Path(file_okay=False, path_type=pathlib.Path),
              help="Device state directory (created if absent): installs BUNDLE, releases one permanent "
                   "draw per input.")
@click.option("--counter", type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="With --state: bind DIR to a monotonic counter kept in FILE.")
@click.option("--lock-wait", type=click.FloatRange(min=0, max=86400), default=None, metavar="SECONDS",
              help="With --state: seconds to wait for DIR's lock.  [default: 5]")
@click.option("--stamp", is_flag=True, help="Add bundle_sha256 and bundle_version columns to OUT.csv.")
@click.option("--device-class", metavar="NAME",
              help="Act as a device of this class: refuse a bundle built for another class.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@guard
def sanitize(bundle, infile, outfile, trusted, keyrings, min_version, rejects, skip_invalid, id_column,
             max_line_length, state_dir, counter, lock_wait, stamp, device_class, as_json):
    """Release sanitized rows of IN.csv into OUT.csv, as one device per row would.

    IN.csv has a header naming the bundle's public features (any order); the
    private column(s), if present, are never written. A blank cell is a missing
    answer. OUT.csv holds the public columns in the bundle's order (after the
    --id column), one row per valid input row, in input order.

    A refused row (wrong length, not a number, out of domain, every cell
    missing, a line over --max-line-length) is left out, its line and reason
    listed in --rejects (no raw value; its --id may be), and the command exits 1
    unless --skip-invalid. Rows stream to temporary files renamed at the end:
    memory stays flat and nothing half-written is visible. OUT.csv and
    --rejects may not be IN.csv, BUNDLE, each other or inside DIR.

    Without --state every call draws afresh. With --state DIR (yours, mode
    0700) the CLI acts as one device: the same input gives the same released
    rows, and a version lower than one used before is refused.

    Trust PEM keys (--trusted, any one signature) or a keyring document
    (--keyring, its threshold of distinct signatures).
    """
    from privmap.device import Binding
    from privmap.device.trust import check_binding

    from ._batch import MAX_LINE_CHARS, sanitize_csv
    if state_dir is None and (counter is not None or lock_wait is not None):
        raise click.UsageError("--counter and --lock-wait need --state DIR")
    check_outputs(bundle, infile, outfile, rejects, state_dir, counter)
    binding = Binding(device_class=device_class) if device_class else None
    keyring = trusted_keyring(trusted, keyrings)
    if state_dir is not None:
        from ._state import DEFAULT_LOCK_WAIT, file_counter, stateful_release
        loaded, release = stateful_release(state_dir, bundle, keyring, min_version, binding,
                                           counter=file_counter(counter, state_dir),
                                           lock_wait=DEFAULT_LOCK_WAIT if lock_wait is None else lock_wait)
    else:  # issued_at beyond the clock by more than MAX_CLOCK_SKEW is refused here as with --state
        loaded = read_bundle_file(bundle, keyring, min_version=min_version)
        check_binding(loaded, binding)
        release = loaded.sanitize
    started = time.perf_counter()
    with atomic_output(outfile) as out, \
            (atomic_output(rejects) if rejects is not None else contextlib.nullcontext()) as refused:
        result = sanitize_csv(loaded, infile, out, release=release, stamp=stamp, rejects=refused,
                              id_column=id_column,
                              max_line=MAX_LINE_CHARS if max_line_length is None else max_line_length)
    elapsed = time.perf_counter() - started
    summary = {"rows": result.released, "refused": result.refused, "read": result.rows, "out": str(outfile),
               "rejects": str(rejects) if rejects is not None else None, "bundle_sha256": loaded.sha256,
               "bundle_version": loaded.version, "seconds": round(elapsed, 4),
               "microseconds_per_row": round(1e6 * elapsed / max(result.rows, 1), 1)}
    if as_json:
        emit(summary)
    else:
        click.echo(f"released {result.released} rows to {outfile} with bundle {loaded.sha256[:16]}... "
                   f"({summary['microseconds_per_row']} us/row)")
    if result.refused and not skip_invalid:
        first = result.first_refused
        where = f"see {rejects}" if rejects is not None else f"first at line {first[0]}: {first[1]}"
        raise BuildError(f"{result.refused} of {result.rows} rows refused and left out ({where}); "
                         "use --skip-invalid to accept that")


def _same(a: pathlib.Path, b: pathlib.Path) -> bool:
    """Whether ``a`` and ``b`` name one file.

    They do when they are the same path once links are resolved, or (both existing) the same inode.
    """
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_outputs(bundle: pathlib.Path, infile: pathlib.Path, outfile: pathlib.Path, rejects: pathlib.Path | None,
                  state_dir: pathlib.Path | None, counter: pathlib.Path | None = None) -> None:
    """Refuse output paths that would destroy an input; checked before anything is opened or written.

    Refused: OUT.csv or ``rejects`` inside the state directory (its secret or state file replaced by
    a CSV is a device gone for good), on IN.csv, BUNDLE or the counter file, or the two on one file.

    Raises
    ------
    BuildError
        Naming the option and the file it would have overwritten.
    """
    from ._state import inside
    outputs = [("OUT.csv", outfile)] + ([("--rejects", rejects)] if rejects is not None else [])
    for what, path in outputs:
        if state_dir is not None and inside(path, state_dir):
            raise BuildError(f"{what} {path} is inside the state directory {state_dir}: writing there could "
                             "replace the device's secret or state for good; write it elsewhere")
        for name, source in (("IN.csv", infile), ("BUNDLE", bundle), ("--counter", counter)):
            if source is not None and _same(path, source):
                raise BuildError(f"{what} {path} is {name} itself; write it elsewhere")
    if rejects is not None and _same(outfile, rejects):
        raise BuildError(f"OUT.csv and --rejects are one file ({outfile}); give two")
