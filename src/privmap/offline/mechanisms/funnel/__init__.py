"""Seed 003: the greedy privacy funnel, one slice: its options, build, evaluation view and command.

Its face: :class:`FunnelOptions`, :func:`build` (labelled categorical rows -> a
:class:`~privmap.offline.mechanisms.Result` whose ``detail`` is a ``_build.FunnelRecord``), the model
(:func:`greedy_funnel`), the evaluation view (:func:`evaluate_funnel`, the curve of
:func:`funnel_sweep`) and ``command`` (``privmap build funnel``).

Private modules: ``_options``, ``_model`` (the greedy merge of symbols under a disclosure budget),
``_build`` (its table as a bundle payload), ``_view`` (the curve and the evaluation on labelled
rows), ``_command``.
"""
from ._build import build, funnel_prior
from ._command import funnel as command
from ._model import entropy_bits, greedy_funnel
from ._options import FunnelOptions
from ._view import evaluate_funnel, format_funnel_evaluation, funnel_sweep, plot_funnel, write_funnel_csv

__all__ = ["FunnelOptions", "build", "funnel_prior", "command",
           "greedy_funnel", "entropy_bits",
           "funnel_sweep", "write_funnel_csv", "plot_funnel", "evaluate_funnel", "format_funnel_evaluation"]
