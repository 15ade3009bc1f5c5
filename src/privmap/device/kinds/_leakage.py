"""Pure-Python recomputation of the leakage a bundle's integer table gives on its prior."""
from __future__ import annotations

import math
from typing import Sequence

__all__ = ["table_leakage_bits", "LEAKAGE_RELATIVE_SLACK", "LEAKAGE_ABSOLUTE_SLACK",
           "PAYLOAD_FLOAT_DIGITS", "PAYLOAD_FLOAT_RELATIVE_ERROR"]

#: The builder writes every computed float of a payload (declared figures, the prior, p_x,
#: released cells of real-valued features, real-valued parameters) rounded to this many
#: significant digits, so that BLAS, CPU and library versions do not move the bundle's bytes
#: (docs/bundle-format.md, "Float precision"). The device never rounds; it only has to accept
#: a declared figure that differs from its recomputation by that rounding.
PAYLOAD_FLOAT_DIGITS = 12
#: The largest relative change that rounding makes to one number: half a unit in the last kept
#: digit (5e-12 for 12 digits).
PAYLOAD_FLOAT_RELATIVE_ERROR = 0.5 * 10.0 ** (1 - PAYLOAD_FLOAT_DIGITS)
#: A declared leakage may be below the recomputed one by at most this relative amount ...
#: It covers float round-off and the rounding of payload floats: the declared value and every
#: prior entry are each off by at most PAYLOAD_FLOAT_RELATIVE_ERROR, which moves the recomputed
#: leakage by a few times that (tests/offline/bundle/test_float_precision.py), two orders of
#: magnitude below this slack.
LEAKAGE_RELATIVE_SLACK = 1e-9
#: ... or this absolute amount in bits (whichever is larger), to absorb float round-off.
LEAKAGE_ABSOLUTE_SLACK = 1e-12


def table_leakage_bits(
    prior: Sequence[Sequence[float]],
    index: Sequence[Sequence[int]],
    weight: Sequence[Sequence[int]],
    bits: int,
) -> float:
    """I(A; C_hat) in bits of the integer table on the prior p(a, c).

    ``prior`` has shape ``(|A|, K_in)`` (normalised here by its total); row ``c`` of the table
    gives ``q(index[c][t] | c) = weight[c][t] / 2**bits``. Returns a value >= 0 (round-off clipped).
    """
    total = math.fsum(v for row in prior for v in row)
    if not total > 0:
        raise ValueError("prior has no mass")
    scale = 1.0 / (1 << bits)
    joints = []  # per class: {output index: p(a, c_hat)}
    p_out: dict[int, float] = {}
    for row in prior:
        joint: dict[int, float] = {}
        for c, mass in enumerate(row):
            if mass == 0:
                continue
            p_ac = mass / total
            for j, w in zip(index[c], weight[c]):
                joint[j] = joint.get(j, 0.0) + p_ac * (w * scale)
        joints.append(joint)
        for j, v in joint.items():
            p_out[j] = p_out.get(j, 0.0) + v
    value = 0.0
    terms = []
    for joint in joints:
        p_a = math.fsum(joint.values())
        for j, v in joint.items():
            if v > 0:
                terms.append(v * math.log2(v / (p_a * p_out[j])))
    value = math.fsum(terms)
    return max(value, 0.0)
