"""The solver tests' known answer (DESIGN.md): the binary symmetric channel.

S ~ Bern(1/2), X = S xor Bern(p), Hamming distortion on X. The least I(S; X^) over mappings with
E d(X, X^) <= D is 1 - h2(p * (1 - D) + (1 - p) * D) bits (for D below 1/2): flip X with
probability D.
"""
import math

import numpy as np

#: Budgets (p, D) at which the solvers are held to the closed form.
CASES = [(0.1, 0.05), (0.1, 0.2), (0.25, 0.1), (0.0, 0.3), (0.3, 0.45)]


def bsc(p):
    """p(s, x), shape (2, 2), and the Hamming distortion on X, shape (2, 2)."""
    return np.array([[(1 - p) / 2, p / 2], [p / 2, (1 - p) / 2]]), np.array([[0.0, 1.0], [1.0, 0.0]])


def bsc_leakage_bits(p, D):
    """The least I(S; X^) in bits at budget D (0 <= D < 1/2)."""
    x = p * (1 - D) + (1 - p) * D
    return 1.0 - (0.0 if x in (0.0, 1.0) else -x * math.log2(x) - (1 - x) * math.log2(1 - x))
