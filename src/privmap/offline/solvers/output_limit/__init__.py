"""Program (19) under a per-output leakage limit, with its feasibility linear program.

Private modules: ``_program`` (:func:`solve_output_limited`, :func:`least_distortion`,
:func:`smallest_feasible_epsilon`, :func:`solve_for_shipping`), and ``_columns``, which solves it
on a working set of pairs grown by pricing.
"""
from ._program import least_distortion, smallest_feasible_epsilon, solve_for_shipping, solve_output_limited

__all__ = ["solve_output_limited", "solve_for_shipping", "least_distortion", "smallest_feasible_epsilon"]
