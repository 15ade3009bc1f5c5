"""Interior points for program (19) with many private classes (:func:`solve_interior`).

Their answers are accurate and uncertified, like the conic reference's; :func:`privmap.offline.solvers.solve`
has the fast solver's polish prove them. Private modules: ``_program`` (the instance's arrays and
what both points share), ``_primal_dual`` (Mehrotra's predictor-corrector, the first tried),
``_barrier`` (the log barrier, where that fails), ``_columns`` (column generation over the
outputs: each left-out output priced by its best codebook), ``_solve`` (the choice between them,
on every output or by column generation); their docstrings give the methods, costs and limits.
"""
from ._program import MAX_ENTRIES
from ._solve import solve_interior

__all__ = ["solve_interior", "MAX_ENTRIES"]
