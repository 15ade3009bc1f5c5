"""privmap's certified solver of program (19): Newton's method on the smoothed dual, with pricing.

:func:`solve_fast` solves an instance and proves its answer within ``tol_bits`` (the method is in
the docstring of ``_solver``). Private modules: ``_solver`` (:func:`solve_fast`), ``_path`` (the
path following down the temperature, cold, warm or polished start), ``_newton`` (the smoothed
dual and its Newton step), ``_pricing`` (candidate lists and the passes over all pairs),
``_certify`` (the proven lower bound, the returned table and its gap), over ``_state`` (the
instance they share).
"""
from ._solver import solve_fast

__all__ = ["solve_fast"]
