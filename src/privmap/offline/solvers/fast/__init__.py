"""privmap's certified solver of program (19): Newton's method on the smoothed dual, with pricing.

:func:`solve_fast` solves an instance and proves its answer within ``tol_bits`` (the method is in
the docstring of ``_solver``). It is a driver (:func:`run`) over phase functions that each take
one explicit state (:class:`FastState`, made by :func:`set_up`, with its thresholds in
:class:`Settings`) and update it, so each phase can be called, and tested, alone:

- the start (:func:`start`): cheapest outputs, trivial answers, starting duals and candidates;
- the smoothed dual and its Newton step (:func:`evaluate`, :func:`primal`, :func:`gradient`,
  :func:`factor` with the matrices it factorises, :func:`woodbury` with :func:`exact_product`,
  :func:`ascend`);
- the pricing (:func:`pricing_pass`, :func:`set_candidates`, :func:`start_candidates`,
  :func:`guards`, :func:`most_violated`): candidate lists and the passes over all pairs;
- the certification (:func:`lower_bound`, :func:`mixed_leakage`, :func:`finish`): the proven
  bound, the returned table and its gap;
- the path (:func:`begin_path`, :func:`path_step`, :func:`follow_path`, :func:`polish_answer`,
  :func:`warm_duals`): down the temperature to a certificate, cold, warm or polished.

Private modules: ``_solver`` (:func:`solve_fast`), ``_state``, ``_path``, ``_newton``,
``_pricing``, ``_certify``, one per phase.
"""
from ._certify import finish, lower_bound, mixed_leakage
from ._newton import (
    ascend,
    assemble,
    block_jacobi,
    codebook,
    dense_matrix,
    diagonal_blocks,
    evaluate,
    exact_product,
    factor,
    gradient,
    hessian_operator,
    newton_system,
    primal,
    product_matrix,
    strong_pairs,
    uses_woodbury,
    woodbury,
)
from ._path import begin_path, follow_path, path_step, polish_answer, run, start, warm_duals
from ._pricing import guards, most_violated, pricing_pass, set_candidates, start_candidates
from ._solver import solve_fast
from ._state import FastState, Settings, set_up

__all__ = ["solve_fast", "FastState", "Settings", "set_up", "run", "start",
           "evaluate", "codebook", "primal", "gradient", "factor", "newton_system", "ascend", "dense_matrix",
           "assemble", "product_matrix", "diagonal_blocks", "block_jacobi", "hessian_operator",
           "strong_pairs", "woodbury", "exact_product", "uses_woodbury",
           "pricing_pass", "set_candidates", "start_candidates", "guards", "most_violated",
           "lower_bound", "mixed_leakage", "finish",
           "begin_path", "path_step", "follow_path", "polish_answer", "warm_duals"]
