"""A primal interior point for program (19) with many private classes (:func:`solve_interior`).

Its answer is accurate and uncertified, like the conic reference's; :func:`privmap.offline.solvers.solve`
has the fast solver's polish prove it. The method, its costs and its limits are in the docstring
of the private module ``_barrier``.
"""
from ._barrier import MAX_ENTRIES, solve_interior

__all__ = ["solve_interior", "MAX_ENTRIES"]
