"""The ``funnel`` mechanism's build: labelled categorical CSV -> greedy partition -> payload.

The release is deterministic: each observed public tuple (input) maps to its group with
weight 2^B (B = 1), so the device does an exact lookup and its usual leakage recomputation on
the bundled prior p(s, x) gives I(S;Y). A group is released as the cells of its first member
(lowest input index); the bundle, which is public, lists every input with its group, so the
analyst reads a released row as "one of the group's members". The metric is ``log-loss``:
distortion H(X|Y) = H(X) - I(X;Y), the budget H(X) - R.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._information import leakage_bits, max_output_leakage_bits, mutual_information_bits
from ...data import Dataset, joint_prior, load_dataset
from .._categorical import categorical_alphabet
from .._header import _tool_version, payload_header
from .._result import Result
from ._model import FunnelResult, entropy_bits, greedy_funnel
from ._options import FunnelOptions

__all__ = ["FunnelRecord", "build", "funnel_prior"]


@dataclass(frozen=True)
class FunnelRecord:
    """What :func:`build` computed besides the payload (its :attr:`Result.detail`).

    The rows, the prior p(s, x), the greedy run and the disclosure floor R in bits.
    """

    dataset: Dataset
    p_sx: np.ndarray
    result: FunnelResult
    r_bits: float


def funnel_prior(dataset: Dataset, smoothing: float = 0.0):
    """(specs, cells, labels, p_sx) of a categorical dataset; p_sx has shape (|S|, K)."""
    specs, _, cells, labels = categorical_alphabet(dataset.features, dataset.public)
    p_sx = joint_prior(dataset.private, labels, len(dataset.classes), len(cells), smoothing=smoothing)
    return specs, cells, labels, p_sx


def build(source, options: FunnelOptions) -> Result:
    """Run the greedy funnel (Algorithm 1) on labelled categorical rows; the unsigned payload.

    Parameters
    ----------
    source : Dataset or path
        The rows (categorical), or a CSV to read them from (``options.private`` and
        ``options.public`` name the columns).
    options : FunnelOptions

    Returns
    -------
    Result
        ``mechanism`` "funnel", the payload, and a :class:`FunnelRecord` as ``detail``.

    Raises
    ------
    BuildError
        Bad data (DatasetError) or R > H(X).
    """
    dataset = (source if isinstance(source, Dataset)
               else load_dataset(source, private=options.private, public=options.public, categorical=True))
    specs, cells, _, p_sx = funnel_prior(dataset, options.smoothing)
    h_x = entropy_bits(p_sx.sum(axis=0))
    if options.disclosure is not None:
        r_bits = options.disclosure
    else:
        assert options.disclosure_fraction is not None     # FunnelOptions holds exactly one of the two
        r_bits = options.disclosure_fraction * h_x
    result = greedy_funnel(p_sx, r_bits)
    k_in, k_out = len(cells), len(result.groups)
    q = np.zeros((k_in, k_out))
    q[np.arange(k_in), result.labels] = 1.0
    leak = leakage_bits(p_sx, q)  # from the released table, as the device recomputes it
    disclosure = entropy_bits(p_sx.sum(axis=0) @ q)
    metrics = {
        "leakage_bits": leak,
        "disclosure_bits": disclosure,
        "disclosure_floor_bits": float(r_bits),
        "entropy_x_bits": h_x,
        "leakage_before_bits": mutual_information_bits(p_sx),
        "distortion": max(h_x - disclosure, 0.0),
        "delta": max(h_x - float(r_bits), 0.0),
        "r": 0.0,
        "delta_plus_r": max(h_x - float(r_bits), 0.0),
        "clusters": k_in,
        "outputs": k_out,
        "n": dataset.n,
        "perfect_privacy_distortion": h_x,
        "merges": len(result.merges),
    }
    eps = max_output_leakage_bits(p_sx, q)       # per-output leakage, declared when finite (metrics hold numbers)
    if math.isfinite(eps):
        metrics["max_output_leakage_bits"] = eps
    payload = {
        **payload_header(options, "funnel"),
        "metric": "log-loss",
        "features": specs,
        "private": {"name": dataset.private_name, "classes": list(dataset.classes)},
        "inputs": cells,
        "outputs": [cells[group[0]] for group in result.groups],
        "table": {"bits": 1, "index": [[int(g)] for g in result.labels], "weight": [[2]] * k_in},
        "prior": p_sx.tolist(),
        "metrics": metrics,
        "provenance": {
            "tool_version": _tool_version(),
            "seed": options.seed,
            "data_sha256": dataset.sha256,
            "algorithm": "greedy privacy funnel (seed 003, Algorithm 1)",
            "smoothing": repr(options.smoothing),
            "disclosure_fraction": repr(options.disclosure_fraction) if options.disclosure_fraction is not None
            else "",
        },
    }
    return Result("funnel", payload, FunnelRecord(dataset=dataset, p_sx=p_sx, result=result, r_bits=float(r_bits)))
