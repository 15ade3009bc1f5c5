"""Perfect privacy: the least distortion Delta0 at which I(A; C_hat) = 0, and a table reaching it.

A linear program in the table (the docstring of ``_linear_program``), solved by certified column
generation, with two private classes by transport problems (``_transport``) and with three or more
its first master seeded by a primal-dual interior point (``_interior``). Private modules: ``_linear_program``
(:func:`perfect_privacy_distortion`, :func:`perfect_privacy_table`, :func:`perfect_privacy_lp`,
:func:`perfect_privacy_solution`), ``_transport``, ``_interior``.
"""
from ._linear_program import (
    perfect_privacy_distortion,
    perfect_privacy_lp,
    perfect_privacy_solution,
    perfect_privacy_table,
)

__all__ = ["perfect_privacy_distortion", "perfect_privacy_table", "perfect_privacy_lp",
           "perfect_privacy_solution"]
