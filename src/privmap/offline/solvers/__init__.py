"""Stage 2 of a build: solve program (19) and round its table to integers.

Shared pieces, private modules here: ``_solve`` (:func:`solve`, the entry point choosing a
solver), ``_problem`` (instance checks), ``_result`` (:class:`SolveResult`), ``_negligible``
(merging outputs of negligible mass), ``_compress`` (integer rows summing to 2^B), ``_progress``
(a narrowing gap as a progress fraction), ``_row_schur`` (the rows' Schur complement both
interior points factorise, in mixed precision).

The solvers, one sub-package per family, each with its own face:

- :mod:`.fast`: privmap's certified Newton solver on the smoothed dual (:func:`solve_fast`),
  as phase functions over one explicit state;
- :mod:`.interior`: interior points on every pair (primal-dual, with a log barrier behind it) whose
  cost grows linearly with the private classes (:func:`solve_interior`), the start of a cold solve
  with many classes; on large alphabets by column generation over the outputs, from the few a
  build offers;
- :mod:`.reference`: the cvxpy + Clarabel conic reference (:func:`solve_cvxpy`);
- :mod:`.perfect`: perfect privacy, the least distortion Delta0 and a table reaching it (a
  linear program by certified column generation, transport problems for two classes);
- :mod:`.output_limit`: program (19) under a per-output leakage limit, with its feasibility LP;
- :mod:`.robust`: confidence sets of priors and the robust program certified over them.
"""
from ._compress import DEFAULT_BITS, CompressedTable, compress
from ._result import SolveResult
from ._solve import SOLVERS, solve, starts_from_conic, starts_from_interior
from .fast import solve_fast
from .interior import solve_interior
from .output_limit import least_distortion, smallest_feasible_epsilon, solve_for_shipping, solve_output_limited
from .perfect import (
    perfect_privacy_distortion,
    perfect_privacy_lp,
    perfect_privacy_solution,
    perfect_privacy_table,
)
from .reference import solve_cvxpy
from .robust import (
    DEFAULT_CONFIDENCE,
    ConfidenceSet,
    certified_leakage_bits,
    certified_max_output_leakage_bits,
    confidence_set,
    counts_from_prior,
    l1_radius,
    robust_figures_of_table,
    solve_robust,
)

__all__ = ["solve", "SOLVERS", "starts_from_conic", "starts_from_interior",
           "SolveResult",
           "solve_fast", "solve_interior", "solve_cvxpy",
           "perfect_privacy_distortion", "perfect_privacy_table", "perfect_privacy_lp",
           "perfect_privacy_solution",
           "compress", "CompressedTable", "DEFAULT_BITS",
           "solve_output_limited", "solve_for_shipping", "least_distortion", "smallest_feasible_epsilon",
           "confidence_set", "ConfidenceSet", "l1_radius", "DEFAULT_CONFIDENCE",
           "certified_leakage_bits", "certified_max_output_leakage_bits", "solve_robust",
           "counts_from_prior", "robust_figures_of_table"]
