"""Stage 2 of a build: solve program (19) and round its table to integers.

Private modules: ``_solve`` (the entry point choosing a solver), ``_fast_solver`` (privmap's
certified Newton solver on the smoothed dual, :func:`solve_fast`), in four parts: ``_fast_newton``
(the dual Newton core: the smoothed dual at a fixed temperature and candidate set, its Newton
step), ``_fast_path`` (the path following down the temperature, cold or warm started),
``_fast_certify`` (the proven lower bound, the returned table and its gap) and ``_fast_pricing``
(candidate outputs per row and the passes over all pairs), over ``_fast_instance`` (the data they
share); ``_cvxpy_solver`` (the Clarabel reference),
``_perfect`` (the perfect-privacy linear program, by certified column generation),
``_negligible`` (merging outputs of negligible mass), ``_problem`` (instance checks), ``_result``
(:class:`SolveResult`), ``_compress`` (integer rows summing to 2^B), ``_output_limit`` (program (19)
under a per-output leakage limit, with its feasibility LP; ``_output_limit_columns`` solves it on a
working set of pairs grown by pricing).
"""
from ._compress import DEFAULT_BITS, CompressedTable, compress
from ._output_limit import least_distortion, smallest_feasible_epsilon, solve_output_limited
from ._perfect import (
           perfect_privacy_distortion,
           perfect_privacy_solution,
           perfect_privacy_table,
)
from ._result import SolveResult
from ._solve import SOLVERS, solve

__all__ = ["solve", "SOLVERS", "SolveResult", "perfect_privacy_distortion", "perfect_privacy_table",
           "perfect_privacy_solution",
           "compress", "CompressedTable", "DEFAULT_BITS",
           "solve_output_limited", "least_distortion", "smallest_feasible_epsilon"]
