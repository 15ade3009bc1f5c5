"""Program (19) under a per-output leakage limit, with its feasibility linear program.

Private modules: ``_program`` (:func:`solve_output_limited`, :func:`least_distortion`,
:func:`smallest_feasible_epsilon`, :func:`solve_for_shipping`), and ``_columns``, which solves it
on a working set of pairs grown by pricing. The programs over every pair that the working-set
solves are checked against, :func:`dense_limited` and :func:`dense_least_table`, are on this face
too; the shipping loop's choice of outputs to close (``outputs_to_close``, with ``SLIVER_UNITS``)
stays in ``_program``.
"""
from ._program import (
    dense_least_table,
    dense_limited,
    least_distortion,
    smallest_feasible_epsilon,
    solve_for_shipping,
    solve_output_limited,
)

__all__ = ["solve_output_limited", "solve_for_shipping", "least_distortion", "smallest_feasible_epsilon",
           "dense_limited", "dense_least_table"]
