"""The ``max-correlation`` mechanism's build: public categorical CSV -> P_X -> channel -> payload.

No private column is read: the operator knows only P_X (seed 002, case (b)). Inputs and outputs
are the observed public tuples, the metric is ``hamming`` (number of differing cells), the
channel minimises rho_m(X;Y)^2 within the budget (:mod:`._design`), and the table is rounded to
integers with the usual distortion repair. Every declared figure (rho_m^2, the S* bounds,
distortion) is recomputed from the integer table. The payload carries ``p_x`` instead of
``private`` and ``prior`` (docs/bundle-format.md, "max-correlation").
"""
from __future__ import annotations

import csv
import hashlib
import pathlib
from dataclasses import dataclass

import numpy as np

from ..._errors import BuildError, DatasetError
from ...data import MIN_ROWS, check_unique, column_indexes, data_rows, pairwise, read_csv
from ...solvers import compress
from .._categorical import categorical_alphabet
from .._header import _tool_version, payload_header
from .._result import Result
from ._design import (
    VERIFIED_RELATIVE_GAP,
    design_max_correlation,
    rho_m_squared,
    s_star_lower_bound,
    s_star_upper_bound,
)
from ._options import MaxCorrelationOptions

__all__ = ["MaxCorrelationRecord", "build", "read_public", "MAX_INPUTS"]

#: Most distinct public tuples the design accepts (and the device's limit, device/kinds/max_correlation.py).
MAX_INPUTS = 64


@dataclass(frozen=True)
class MaxCorrelationRecord:
    """What :func:`build` computed besides the payload (its :attr:`Result.detail`).

    The public columns, P_X, the Hamming distances between tuples and the shipped channel.
    """

    features: tuple[str, ...]
    p_x: np.ndarray
    distortion: np.ndarray
    w: np.ndarray


def read_public(path, public=None, exclude=None) -> tuple[tuple[str, ...], np.ndarray, str]:
    """Categorical public columns of a CSV without labels.

    Returns ``(features, cells, sha256)``: names (d,), str cells (n, d), the file's hex sha256.
    ``public`` selects columns (default: all but ``exclude``). Raises :class:`DatasetError` for
    an unreadable/oversized file, unknown column, ragged or empty cell (by line), too few rows.
    """
    path = pathlib.Path(path)
    raw, reader, header = read_csv(path)
    check_unique(header, path)
    names = list(public) if public else [h for h in header if h != exclude]
    if not names:
        raise DatasetError(f"{path}: no public columns")
    at = column_indexes(names, header, path, "public ")
    rows = []
    try:
        for line, row in data_rows(reader, path, header):
            cells = [row[i].strip() for i in at]
            if not all(cells):
                raise DatasetError(f"{path}, line {line}: empty public cell")
            rows.append(cells)
    except csv.Error as exc:
        raise DatasetError(f"{path}, line {reader.line_num}: {exc}") from exc
    if len(rows) < MIN_ROWS:
        raise DatasetError(f"{path}: {len(rows)} data rows, need at least {MIN_ROWS}")
    return tuple(names), np.array(rows, dtype=object), hashlib.sha256(raw).hexdigest()


def build(source, options: MaxCorrelationOptions) -> Result:
    """Design a max-correlation channel from the public columns of a CSV; the unsigned payload.

    Parameters
    ----------
    source : path
        The CSV (no labels are read: ``options.private``, if given, is a column left out).
    options : MaxCorrelationOptions

    Returns
    -------
    Result
        ``mechanism`` "max-correlation", the payload, and a :class:`MaxCorrelationRecord` as ``detail``.

    Raises
    ------
    BuildError
        Bad data, too many distinct tuples, or a design that fails (SolverError).
    """
    features, public, sha = read_public(source, options.public, exclude=options.private)
    specs, tuples, cells, labels = categorical_alphabet(features, public)
    k = len(cells)
    if k > MAX_INPUTS:
        raise BuildError(f"{k} distinct public tuples; max-correlation designs at most {MAX_INPUTS} "
                         "(coarsen the categories)")
    p_x = np.bincount(labels, minlength=k).astype(float) / labels.size
    d = pairwise(np.array(cells, dtype=float), np.array(cells, dtype=float), "hamming")
    designed = design_max_correlation(p_x, d, options.delta, starts=options.starts, seed=options.seed)
    table = compress(designed.w, p_x[None, :], d, options.delta, bits=options.bits)
    w = table.probabilities().toarray()
    rho2 = rho_m_squared(p_x, w)
    upper = s_star_upper_bound(p_x, w)
    lower = max(rho2, s_star_lower_bound(p_x, w, seed=options.seed))
    verified = upper <= rho2 * (1 + VERIFIED_RELATIVE_GAP) + 1e-15
    index, weight = table.rows()
    metrics = {
        "rho_m_squared": rho2,
        "rho_m_squared_solved": designed.rho_m_squared,
        "s_star_upper_bound": upper,
        "s_star_lower_bound": lower,
        "s_star_verified": int(verified),
        "distortion": table.distortion,
        "delta": float(options.delta),
        "clusters": k,
        "outputs": k,
        "n": int(labels.size),
        "starts": designed.starts,
        "feasible_starts": designed.feasible_starts,
        "repaired_units": table.repaired_units,
    }
    if options.information_budget is not None:
        metrics["information_budget_bits"] = float(options.information_budget)
        metrics["leakage_bound_bits"] = float(options.information_budget) * upper
    payload = {
        **payload_header(options, "max-correlation"),
        "metric": "hamming",
        "features": specs,
        "inputs": cells,
        "outputs": [list(c) for c in cells],
        "table": {"bits": table.bits, "index": index, "weight": weight},
        "p_x": p_x.tolist(),
        "metrics": metrics,
        "provenance": {
            "tool_version": _tool_version(),
            "seed": options.seed,
            "data_sha256": sha,
            "algorithm": "min rho_m^2 s.t. E d <= D, multi-start SLSQP (seed 002, case (b))",
        },
    }
    return Result("max-correlation", payload, MaxCorrelationRecord(features=features, p_x=p_x, distortion=d, w=w))
