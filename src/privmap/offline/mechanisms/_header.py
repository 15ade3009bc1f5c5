"""The bundle header every mechanism writes: its options, their checks and the header fields.

Every payload starts with the same fields (docs/bundle-format.md): ``type``,
``schema_version``, ``version``, ``issued_at``, ``expires``, ``device_class`` and
``mechanism``. The options that decide them (``bundle_version``, ``issued_at``, ``valid_days``,
``device_class``) are :class:`HeaderOptions`: every mechanism's options class
(``QuantizedOptions`` and ``ExactOptions`` through ``Seed000Options``, ``FunnelOptions``,
``MaxCorrelationOptions``, ...) extends it and calls :func:`check_header` among its own checks.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata

from privmap.device.constants import SCHEMA_VERSION

from .._errors import BuildError

__all__ = ["DEFAULT_DEVICE_CLASS", "DEFAULT_VALID_DAYS", "HeaderOptions", "check_header", "payload_header"]

#: Device class a bundle is built for unless ``--device-class`` names one (devices configured with
#: a class refuse bundles for any other).
DEFAULT_DEVICE_CLASS = "generic"
#: Default validity of a bundle, in days.
DEFAULT_VALID_DAYS = 365


def check_header(options) -> None:
    """Check the header fields of a mechanism's options.

    The options are anything with ``bundle_version`` and ``valid_days``.

    Raises
    ------
    BuildError
        A bundle version outside 1..2^63-1 or a validity of 0 days or less.
    """
    if not 1 <= options.bundle_version < 2 ** 63:
        raise BuildError(f"bundle version must be in 1..2^63-1, got {options.bundle_version}")
    if not options.valid_days > 0:
        raise BuildError(f"valid days must be > 0, got {options.valid_days}")


@dataclass(frozen=True)
class HeaderOptions:
    """Bundle header choices.

    ``bundle_version`` (>= 1), ``issued_at`` (unix seconds; None takes SOURCE_DATE_EPOCH, else the
    clock), ``valid_days`` (> 0) and ``device_class``.

    Raises :class:`BuildError` at construction (:func:`check_header`; a subclass that defines its
    own ``__post_init__`` calls it there).
    """

    bundle_version: int = 1
    issued_at: int | None = None
    valid_days: float = DEFAULT_VALID_DAYS
    device_class: str = DEFAULT_DEVICE_CLASS

    def __post_init__(self):
        check_header(self)


def payload_header(options, mechanism: str) -> dict:
    """The header fields of a payload, in the specification's order.

    Parameters
    ----------
    options
        Anything with ``bundle_version``, ``issued_at``, ``valid_days`` and ``device_class``
        (checked by :func:`check_header`).
    mechanism : str
        The payload's ``mechanism``.

    Returns
    -------
    dict
        ``type``, ``schema_version``, ``version``, ``issued_at`` and ``expires`` (unix seconds),
        ``device_class``, ``mechanism``.

    Raises
    ------
    BuildError
        SOURCE_DATE_EPOCH set to something that is not an integer.
    """
    issued_at = _issued_at(options)
    return {
        "type": "privmap/bundle",
        "schema_version": SCHEMA_VERSION,
        "version": options.bundle_version,
        "issued_at": issued_at,
        "expires": issued_at + int(round(options.valid_days * 86400)),
        "device_class": options.device_class,
        "mechanism": mechanism,
    }


def _issued_at(options) -> int:
    """``options.issued_at``, else SOURCE_DATE_EPOCH (reproducible builds), else the clock."""
    if options.issued_at is not None:
        return int(options.issued_at)
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        try:
            return int(epoch)
        except ValueError:
            raise BuildError(f"SOURCE_DATE_EPOCH must be an integer, got {epoch!r}") from None
    import time
    return int(time.time())


def _tool_version() -> str:
    """The installed privmap version (provenance), ``"unknown"`` when not installed."""
    try:
        return metadata.version("privmap")
    except metadata.PackageNotFoundError:
        return "unknown"
