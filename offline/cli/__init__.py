"""The ``privmap`` command line (click). ``main`` is the console entry point.

Private modules: ``_main`` (the group and the keygen/build/verify/inspect/sanitize commands),
``_eval`` (evaluate and curve), ``_common`` (one-line failures, JSON output, atomic writes).
"""
from ._main import main

__all__ = ["main"]
