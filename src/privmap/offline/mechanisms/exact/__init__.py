"""Seed 000's exact mechanism (Algorithm 1, Census): small categorical tuples and their erasures.

Its face: :class:`ExactOptions` (with the guarantees it shares with the quantized mechanism,
on :mod:`privmap.offline.mechanisms`' face) and :func:`build`
(a categorical :class:`~privmap.offline.data.Dataset` -> :class:`~privmap.offline.mechanisms.Result`).
The pipeline, the erasure alphabet and its evaluation view are seed 000's table engine's, in
:mod:`privmap.offline.mechanisms.table`.

Private modules: ``_options`` (:class:`ExactOptions`), ``_build`` (:func:`build`), ``_command``
(``privmap build exact``, :data:`command`, and :data:`ALTERNATIVE`, the quantized command's
``--mechanism exact``).
"""
from ._build import build
from ._command import ALTERNATIVE, command
from ._options import ExactOptions

__all__ = ["ExactOptions", "build", "command", "ALTERNATIVE"]
