"""Plumbing shared by the CLI command modules: one-line failures, JSON output, atomic writes."""
from __future__ import annotations

import functools
import json
import math
import os
import pathlib
import tempfile

import click
from privmap.device import PrivmapDeviceError

from .._errors import BuildError


class Fail(click.ClickException):
    """One-line failure: ``error: message`` on stderr and exit status 1."""

    def show(self, file=None):
        click.echo(f"error: {self.format_message()}", err=True)


def guard(fn):
    """Turn the project's typed errors (and I/O or value errors) into one-line CLI failures."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (BuildError, PrivmapDeviceError) as exc:
            raise Fail(str(exc)) from exc
        except OSError as exc:
            raise Fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")) from exc
        except ValueError as exc:
            raise Fail(str(exc)) from exc
    return wrapper


def _clean(obj):
    """Strict-JSON version of ``obj``: numpy scalars to Python, tuples to lists, NaN/inf to None."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and getattr(obj, "ndim", None) == 0:  # numpy scalar
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def emit(obj: dict) -> None:
    """Print ``obj`` as one JSON object on stdout."""
    click.echo(json.dumps(_clean(obj), indent=2, sort_keys=True, allow_nan=False))


def atomic_write(path: pathlib.Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and os.replace.

    The file gets the usual permissions (0666 less the umask), not mkstemp's 0600:
    bundles and sanitized CSVs are meant to be shared. On any error nothing is left.
    """
    path = pathlib.Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise
