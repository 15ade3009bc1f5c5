"""The options every ``privmap build*`` command shares, defined once, and the signing step they end with.

- :func:`bundle_options`: ``--key``, ``--passphrase-file``, ``--out`` (where the signed bundle goes);
- :func:`header_options`: ``--bundle-version``, ``--issued-at``, ``--valid-days``, ``--device-class``
  (the header every payload starts with), given to the command as one ``header`` mapping of
  :class:`~privmap.offline.mechanisms._header.HeaderOptions`' fields;
- :func:`json_option`: ``--json`` (one JSON object on stdout);
- :func:`data_options`: ``--domain`` and ``--missing-token``, what ``build`` and ``curve`` read of a
  CSV's numeric columns;
- :data:`BUNDLE_SECTION`: the one-line help of the bundle and header options and ``--json``, for a
  :class:`~privmap.offline.commandline.SectionedCommand`'s table.
"""
from __future__ import annotations

import functools
import pathlib

import click

from .._errors import BuildError
from ..data import parse_domains
from ._help import Section
from ._passphrase import passphrase_option

__all__ = ["bundle_options", "header_options", "json_option", "data_options", "HEADER_FIELDS",
           "BUNDLE_SECTION"]

#: The header options' parameter names, which are also :class:`~privmap.offline.mechanisms._header.HeaderOptions`' fields.
HEADER_FIELDS = ("bundle_version", "issued_at", "valid_days", "device_class")


def _apply(fn, decorators):
    for decorator in reversed(decorators):
        fn = decorator(fn)
    return fn


def bundle_options(fn):
    """``--key KEY`` (required), ``--passphrase-file F`` and ``--out FILE`` (required)."""
    return _apply(fn, [
        click.option("--key", required=True, type=click.Path(dir_okay=False, path_type=pathlib.Path),
                     help="Operator's private key (PEM, from `privmap keygen`)."),
        click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=pathlib.Path),
                     help="Bundle file to write (atomically)."),
        passphrase_option,
    ])


def header_options(fn):
    """``--bundle-version``, ``--issued-at``, ``--valid-days`` and ``--device-class`` as one argument.

    They are given to ``fn`` as one keyword argument ``header``: a dict of :data:`HEADER_FIELDS` to
    pass on to a mechanism's options (``Options(..., **header)``).
    """

    @functools.wraps(fn)
    def with_header(*args, **kwargs):
        return fn(*args, header={name: kwargs.pop(name) for name in HEADER_FIELDS}, **kwargs)

    return _apply(with_header, [
        click.option("--bundle-version", type=click.IntRange(1, 2 ** 63 - 1), default=1, show_default=True,
                     help="Monotonic bundle version (devices refuse versions below their minimum)."),
        click.option("--issued-at", type=int, default=None,
                     help="Creation time, unix seconds [default: SOURCE_DATE_EPOCH, else now]."),
        click.option("--valid-days", type=click.FloatRange(min=0, min_open=True), default=365, show_default=True,
                     help="Days until the bundle expires."),
        click.option("--device-class", default="generic", show_default=True, metavar="NAME",
                     help="Device class the bundle is for (1-64 printable ASCII, no spaces); devices "
                          "configured with a class refuse bundles for any other."),
    ])


def json_option(fn):
    """``--json``: the build summary as one JSON object on stdout."""
    return click.option("--json", "as_json", is_flag=True, help="Print the build summary as JSON.")(fn)


def _check_domains(ctx, param, values):
    """``--domain``'s values as given, once their syntax is checked.

    A malformed one is a usage error (exit 2), as any bad option value.
    """
    try:
        parse_domains(values)
    except BuildError as exc:
        raise click.BadParameter(str(exc).removeprefix("--domain").lstrip(": "), ctx, param) from None
    return values


def data_options(fn):
    """``--domain [COL=]LO:HI`` (repeatable, as ``domains``) and ``--missing-token TOKEN``."""
    return _apply(fn, [
        click.option("--domain", "domains", multiple=True, metavar="[COL=]LO:HI", callback=_check_domains,
                     help="Declared closed domain: LO:HI for every public column, COL=LO:HI for one (repeatable; "
                          "the most specific wins). Undeclared domains are inferred from the data."),
        click.option("--missing-token", metavar="TOKEN", default=None,
                     help="Text that codes a missing answer in every public column besides a blank cell (e.g. 0 "
                          "or NA; a number must lie outside the column's domain); a bundle records it in its "
                          "schema."),
    ])


#: The one-line help of :func:`bundle_options`, :func:`header_options` and :func:`json_option`, under one heading.
BUNDLE_SECTION = Section("Bundle", (
    ("key", "Operator's private key (PEM; required)."),
    ("passphrase_file", "File whose first line is the key's passphrase."),
    ("out", "Bundle file to write (required)."),
    ("bundle_version", "Bundle version; devices refuse older (default: 1)."),
    ("issued_at", "Creation time, unix s (default: now)."),
    ("valid_days", "Days until it expires (default: 365)."),
    ("device_class", "Device class it is for (default: generic)."),
    ("as_json", "Print the build summary as JSON."),
))
