"""The conic reference solver of program (19): cvxpy with Clarabel, accurate and uncertified.

:func:`solve_cvxpy` solves an instance (the model and its settings are in the docstring of
``_conic``). The output-limited program (:mod:`..output_limit`) adds its constraints to the same
model: :func:`forbidden_pairs` (the pairs fixed at zero), :func:`conic_model` (the cvxpy
problem), :func:`clarabel` (Clarabel's attempts, in turn) and :func:`summary` (a solution's
iterations, residuals and gap, in words). Private module: ``_conic``.
"""
from ._conic import clarabel, conic_model, forbidden_pairs, solve_cvxpy, summary

__all__ = ["solve_cvxpy", "forbidden_pairs", "conic_model", "clarabel", "summary"]
