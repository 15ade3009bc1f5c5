"""The ``privmap`` command line (click). ``main`` is the console entry point.

Private modules, one per command family: ``_main`` (the group and seed 000's ``build``),
``_seed_builds`` (``build-funnel``, ``build-max-correlation``), ``_real`` (``build-gaussian``,
``build-nullspace``), ``_forward`` (the old ``build --mechanism NAME`` forms forwarded to their
commands), ``_verify`` (verify, inspect), ``_sanitize`` (with ``_batch``), ``_eval`` (evaluate and
curve), ``_keyring`` (keygen, keyring, cosign), ``_state``, ``_scale`` (the out-of-core build).
The kit the commands are written with (one-line failures, JSON output, the options every build
shares, trusted keys, the help renderer) is :mod:`privmap.offline.commandline`.
"""
from ._main import main

__all__ = ["main"]
