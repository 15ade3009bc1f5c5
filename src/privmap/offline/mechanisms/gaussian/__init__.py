"""Seed 004: greedy Gaussian noise on real-valued rows, one slice.

Its options, build, evaluation view and command.

Its face: :class:`GaussianOptions`, :func:`build` (a real-valued CSV -> a
:class:`~privmap.offline.mechanisms.Result` whose ``detail`` is the model's ``GreedyResult``), the
model (:class:`GaussianModel`, :func:`greedy_noise`), the evaluation view
(:func:`evaluate_release`), and ``command`` (``privmap build gaussian``) with the facts ``privmap
inspect`` and ``verify`` show of such a bundle (:func:`describe`, :func:`print_description`,
:func:`verify_facts`).

Private modules: ``_options``, ``_model`` (the Gaussian model and the greedy), ``_build`` (its
payload), ``_view``, ``_command``.
"""
from ._build import build
from ._command import describe, print_description, verify_facts
from ._command import gaussian as command
from ._model import GaussianModel, greedy_noise
from ._options import GaussianOptions
from ._view import evaluate_release

__all__ = ["GaussianOptions", "build", "command", "describe", "print_description",
           "verify_facts", "GaussianModel", "greedy_noise", "evaluate_release"]
