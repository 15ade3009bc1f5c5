"""The ``funnel`` kind (seed 003).

Its parse and the pure-Python checks of a deterministic table and I(X;Y); it releases through
the table (:class:`~privmap.device.kinds.table.Bundle`).

The funnel's table is a partition of the inputs: every row has exactly one output with the
whole weight 2**B. Its disclosure I(X;Y) = H(Y) with P_Y(j) = sum of p(s, x) over the inputs x
of group j and all s. The declared ``disclosure_bits`` must agree with it within
``DISCLOSURE_TOLERANCE`` bits (it is the utility the operator was promised, not a privacy
figure; the leakage is checked as for every mechanism with a prior).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..constants import REQUIRED_METRICS
from ..errors import MetricsError, TableError
from ..format import PRIVATE_KEYS, Limits, closed_map, parse_prior, string, unique_strings
from .table import check_figures as check_leakage
from .table import parse_categorical_body, recompute

__all__ = ["MECHANISM", "FUNNEL_METRICS", "parse_body", "check_figures", "check_funnel", "table_disclosure_bits",
           "DISCLOSURE_TOLERANCE"]

MECHANISM = "funnel"
#: Metrics a funnel bundle declares: the table kinds' and its disclosure.
FUNNEL_METRICS = REQUIRED_METRICS + ("disclosure_bits",)
DISCLOSURE_TOLERANCE = 1e-9


def parse_body(obj: dict, limits: Limits) -> dict:
    """The validated fields of a funnel payload after the header.

    Validate a funnel payload after the header: the categorical table fields, its private
    attribute and prior. Raises BundleFormatError or TableError.
    """
    body = parse_categorical_body(obj, limits, FUNNEL_METRICS, "log-loss")
    private = closed_map(obj["private"], PRIVATE_KEYS, "private")
    body.update(private_name=string(private["name"], "private.name", limits),
                classes=unique_strings(private["classes"], "private.classes", 1, limits.max_classes, limits))
    body["prior"] = parse_prior(obj["prior"], len(body["classes"]), len(body["inputs"]))
    return body


def check_figures(body: dict) -> None:
    """The check of a parsed funnel body's declared figures.

    The declared figures of a parsed funnel body: the table deterministic and its disclosure
    (:func:`check_funnel`), then the leakage on the prior. Raises TableError or MetricsError.
    """
    recompute(check_funnel, body)
    check_leakage(body)


def table_disclosure_bits(prior: Sequence[Sequence[float]], index: Iterable[Sequence[int]],
                          n_outputs: int) -> float:
    """H(Y) in bits of a deterministic table (``index[c] == [group]``) on prior p(s, x)."""
    mass = [0.0] * n_outputs
    for c, idx in enumerate(index):
        mass[idx[0]] += math.fsum(row[c] for row in prior)
    total = math.fsum(mass)
    return max(-math.fsum(m / total * math.log2(m / total) for m in mass if m > 0), 0.0)


def check_funnel(body: dict) -> None:
    """The check that a funnel table is deterministic and discloses what it declares.

    Refuse a funnel bundle whose table is not deterministic (TableError) or whose declared
    disclosure disagrees with the table's (MetricsError).
    """
    total = 1 << body["bits"]
    for c, (idx, wt) in enumerate(zip(body["index"], body["weight"])):
        if len(idx) != 1 or wt[0] != total:
            raise TableError(f"funnel table row {c} must map to one output with weight 2**bits")
    computed = table_disclosure_bits(body["prior"], body["index"], len(body["outputs"]))
    declared = body["metrics"]["disclosure_bits"]
    if not abs(declared - computed) <= DISCLOSURE_TOLERANCE:
        raise MetricsError(f"declared disclosure_bits {declared!r} disagrees with the table's {computed!r}")
