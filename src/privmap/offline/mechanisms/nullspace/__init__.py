"""Seed 001: null-space cleaning of real-valued rows for linear predictors, one slice.

Its options, build, evaluation view and command.

Its face: :class:`NullspaceOptions`, :func:`build` (a real-valued CSV -> a
:class:`~privmap.offline.mechanisms.Result` whose ``detail`` is the model's ``NullspaceDirections``),
the cleaning (:func:`clean`; the directions, ``fit_linear`` and ``nullspace_directions``, are in
``_model``), the evaluation view
(:func:`evaluate_release`, :func:`nullspace_experiment`, and its attacker, :func:`attack_scores`),
and ``command`` (``privmap build nullspace``) with the facts ``privmap inspect`` and ``verify``
show of such a bundle (:func:`describe`, :func:`print_description`, :func:`verify_facts`).

Private modules: ``_options``, ``_model`` (the directions and the cleaning), ``_build`` (its
payload), ``_view``, ``_command``.
"""
from .._real_attacks import attack_scores
from ._build import build
from ._command import describe, print_description, verify_facts
from ._command import nullspace as command
from ._model import clean
from ._options import NullspaceOptions
from ._view import evaluate_release, nullspace_experiment

__all__ = ["NullspaceOptions", "build", "command", "describe", "print_description", "verify_facts", "clean",
           "evaluate_release", "nullspace_experiment", "attack_scores"]
