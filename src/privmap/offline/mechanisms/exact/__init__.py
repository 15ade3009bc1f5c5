"""Seed 000's exact mechanism (Algorithm 1, Census): small categorical tuples and their erasures.

Its face: :class:`ExactOptions` (with the guarantees it shares with the quantized mechanism,
on :mod:`privmap.offline.mechanisms`' face) and :func:`build`
(a categorical :class:`~privmap.offline.data.Dataset` -> :class:`~privmap.offline.mechanisms.Result`).
The pipeline, the erasure alphabet and its evaluation view are seed 000's table engine's, in
:mod:`privmap.offline.mechanisms.table`.

Private modules: ``_options`` (:class:`ExactOptions`), ``_build`` (:func:`build`), ``_command``
(its part of ``privmap build exact``: options from the arguments, its help).
"""
from ._build import build
from ._command import BRIEF, DOC, LEFT_OUT, SHORT_HELP, command_options
from ._options import ExactOptions

__all__ = ["ExactOptions", "build", "command_options", "SHORT_HELP", "BRIEF", "DOC", "LEFT_OUT"]
