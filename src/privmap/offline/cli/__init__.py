"""The ``privmap`` command line (click). ``main`` is the console entry point.

Private modules, one per command family: ``_main`` (the group, and ``privmap build``: the group of
the mechanisms' commands, written in their folders under :mod:`privmap.offline.mechanisms`),
``_forward`` (the old ``build --mechanism NAME`` forms forwarded to their commands), ``_verify``
(verify, inspect), ``_sanitize`` (with ``_batch``), ``_eval`` (evaluate and curve), ``_keyring`` (keygen, keyring,
cosign), ``_state``. What a command asks of each mechanism it serves, it reads from the
mechanisms' registry (:data:`privmap.offline.mechanisms.MECHANISMS`). The kit the commands are
written with (one-line failures, JSON output, the options every build shares, trusted keys, the
help renderer) is :mod:`privmap.offline.commandline`.
"""
from ._main import main

__all__ = ["main"]
