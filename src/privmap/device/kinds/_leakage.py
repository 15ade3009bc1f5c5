"""Pure-Python recomputation of the leakage a bundle's integer table gives on its prior."""
from __future__ import annotations

import math
from collections.abc import Sequence

from ..constants import LEAKAGE_ABSOLUTE_SLACK, LEAKAGE_RELATIVE_SLACK
from ..errors import MetricsError

__all__ = ["table_leakage_bits", "check_declared_leakage"]


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


def check_declared_leakage(declared: float, computed: float) -> None:
    """The check of a declared leakage against the recomputed one.

    Raise :class:`MetricsError` if ``declared`` is below ``computed`` (bits) beyond round-off
    slack (:data:`~privmap.device.constants.LEAKAGE_RELATIVE_SLACK` of it, at least
    :data:`~privmap.device.constants.LEAKAGE_ABSOLUTE_SLACK`).
    """
    slack = max(LEAKAGE_RELATIVE_SLACK * abs(computed), LEAKAGE_ABSOLUTE_SLACK)
    if declared < computed - slack:
        raise MetricsError(
            f"declared leakage_bits {declared!r} is below the table's leakage {computed!r}")
