"""The erasure mechanism for small categorical tuples (seed 000, Section VI-A).

Algorithm 1 without quantization: the input alphabet is the set of public tuples
observed in the data, and each released tuple keeps or erases every cell. A
mapping "distorts without lying": it may only erase, never change a kept value.
That restriction is encoded in the distortion matrix of program (19):

    d(b, b_hat) = number of erased cells of b_hat   if b_hat agrees with b on every kept cell
                = +inf                              otherwise (a forbidden transition)

An erased cell is ``None`` (:data:`ERASED`); the CSV writer prints it as an empty
cell. Inputs are sorted tuples of strings; outputs are every erasure pattern of
every observed input, ordered by number of erasures then by their cells (kept
values before erasures, then lexicographic), so the alphabet is deterministic.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse

from ..._errors import BuildError, DatasetError
from ...data import joint_prior

#: The value of an erased cell.
ERASED = None

#: Most distinct public tuples the exact mechanism accepts (the program has
#: K_in * K_out variables and K_out grows as prod(values + 1)).
MAX_INPUTS = 4096


@dataclass(frozen=True)
class ErasureProblem:
    """Program (19) for the erasure mechanism on one dataset.

    Attributes
    ----------
    features : tuple of str
        Names of the public cells.
    inputs : list of tuple of str, length K_in
        Distinct observed public tuples, sorted.
    outputs : list of tuple of (str or None), length K_out
        Every erasure pattern of every input (``None`` = erased).
    distortion : ndarray, shape (K_in, K_out)
        Number of erasures, ``inf`` where the output changes a kept value.
    labels : ndarray of int64, shape (n,)
        Input index of each data row.
    p_ac : ndarray, shape (n_classes, K_in)
        Empirical joint prior of private class and input tuple.
    """

    features: tuple[str, ...]
    inputs: list[tuple[str, ...]]
    outputs: list[tuple[str | None, ...]]
    distortion: np.ndarray
    labels: np.ndarray
    p_ac: np.ndarray


def _tuples(public: ArrayLike) -> list[tuple[str, ...]]:
    rows = np.asarray(public, dtype=object)
    if rows.ndim != 2 or rows.shape[1] < 1:
        raise DatasetError(f"public data must be a table of shape (n, d), got shape {rows.shape}")
    out = []
    for i, row in enumerate(rows):
        cells = tuple(row)
        for j, value in enumerate(cells):
            if not isinstance(value, str) or value == "":
                raise DatasetError(f"row {i}, cell {j}: categorical value must be a non-empty string, got {value!r}")
        out.append(cells)
    return out


def input_alphabet(public: ArrayLike) -> tuple[list[tuple[str, ...]], np.ndarray]:
    """Distinct public tuples (sorted) and the index of each row among them.

    Parameters
    ----------
    public : array-like of str, shape (n, d)

    Returns
    -------
    (inputs, labels)
    """
    rows = _tuples(public)
    inputs = sorted(set(rows))
    if len(inputs) > MAX_INPUTS:
        raise DatasetError(
            f"{len(inputs)} distinct public tuples; the exact mechanism accepts at most {MAX_INPUTS} "
            "(coarsen the categories or use the quantized mechanism)")
    where = {t: i for i, t in enumerate(inputs)}
    return inputs, np.array([where[t] for t in rows], dtype=np.int64)


def categorical_code(features: Sequence[str], tuples: Sequence[tuple[str, ...]]
                     ) -> tuple[list[dict], list[dict[str, int]]]:
    """The bundle's categorical feature specs for observed tuples, and the category index of each value.

    Parameters
    ----------
    features : sequence of str, length d
    tuples : sequence of tuples of str, each of length d

    Returns
    -------
    (specs, code)
        ``{"name", "kind": "categorical", "values"}`` per feature (values sorted), and per feature
        a dict value -> index into its ``values``.
    """
    values = [sorted({t[i] for t in tuples}) for i in range(len(features))]
    code = [{v: k for k, v in enumerate(vs)} for vs in values]
    specs = [{"name": name, "kind": "categorical", "values": vs} for name, vs in zip(features, values)]
    return specs, code


def _output_key(t: tuple[str | None, ...]) -> tuple[int, tuple[tuple[bool, str], ...]]:
    return (sum(v is ERASED for v in t), tuple((v is ERASED, v or "") for v in t))


def output_alphabet(inputs: Sequence[tuple[str, ...]]) -> list[tuple[str | None, ...]]:
    """Every erasure pattern of every input tuple, deduplicated and ordered deterministically."""
    seen: set[tuple[str | None, ...]] = set()
    for t in inputs:
        d = len(t)
        for mask in itertools.product((False, True), repeat=d):
            seen.add(tuple(ERASED if erase else v for v, erase in zip(t, mask)))
    return sorted(seen, key=_output_key)


def erasure_distortion(inputs: Sequence[Sequence[str]] | np.ndarray,
                       outputs: Sequence[Sequence[str | None]] | np.ndarray) -> np.ndarray:
    """Distortion matrix of shape (len(inputs), len(outputs)); ``inf`` forbids changing a kept value."""
    X = np.asarray(inputs, dtype=object)
    Y = np.asarray(outputs, dtype=object)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
        raise ValueError(f"shapes {X.shape} and {Y.shape} do not describe tuples of one width")
    erased = np.array([[v is ERASED for v in y] for y in Y], dtype=bool)      # (m, d)
    D = np.zeros((X.shape[0], Y.shape[0]))
    for j in range(X.shape[1]):
        kept = ~erased[:, j]
        differ = (X[:, j, None] != Y[None, :, j]) & kept[None, :]
        D[differ] = np.inf
    D += erased.sum(axis=1)[None, :]
    return D


def erasure_problem(public: ArrayLike, private: ArrayLike, n_classes: int,
                    features: Sequence[str] | None = None) -> ErasureProblem:
    """Build the erasure instance of program (19) from categorical public data.

    Parameters
    ----------
    public : array-like of str, shape (n, d)
        Categorical public tuples (for instance ``Dataset.public`` loaded with
        ``categorical=True``).
    private : array-like of int, shape (n,)
        Private class codes in [0, n_classes).
    n_classes : int
    features : sequence of str, optional
        Column names (default ``x0, x1, ...``).
    """
    inputs, labels = input_alphabet(public)
    d = len(inputs[0])
    if features is None:
        features = [f"x{j}" for j in range(d)]
    if len(features) != d:
        raise ValueError(f"{len(features)} feature names for tuples of width {d}")
    outputs = output_alphabet(inputs)
    D = erasure_distortion(inputs, outputs)
    p_ac = joint_prior(np.asarray(private), labels, n_classes, len(inputs))
    return ErasureProblem(features=tuple(features), inputs=inputs, outputs=outputs,
                          distortion=D, labels=labels, p_ac=p_ac)


def lookup(inputs: Sequence[tuple[str, ...]], rows: ArrayLike) -> np.ndarray:
    """Index of each row's tuple among ``inputs`` (exact match), ``-1`` when absent."""
    where = {tuple(t): i for i, t in enumerate(inputs)}
    return np.array([where.get(tuple(r), -1) for r in np.asarray(rows, dtype=object)], dtype=np.int64)


def check_only_erases(inputs: Sequence[Sequence[str]], outputs: Sequence[Sequence[str | None]],
                      q: np.ndarray | sparse.spmatrix, *, atol: float = 0.0) -> None:
    """Raise :class:`BuildError` if ``q`` puts mass (> atol) on an output that changes a kept value."""
    D = erasure_distortion(inputs, outputs)
    q = np.asarray(q.toarray() if hasattr(q, "toarray") else q, dtype=float)
    bad = np.argwhere(~np.isfinite(D) & (q > atol))
    if bad.size:
        c, j = bad[0]
        raise BuildError(f"mapping changes a kept value: input {inputs[c]} -> output {outputs[j]} "
                         f"with probability {q[c, j]:.3g}")


def format_cell(value: str | None, erased: str = "-") -> str:
    """A released cell for display: the value, or ``erased`` for an erasure."""
    return erased if value is ERASED else str(value)


def most_probable_mapping(problem: ErasureProblem, q: np.ndarray | sparse.spmatrix, classes: Sequence[str], *, top: int = 8,
                          neutral: float = 0.1) -> list[dict]:
    """The most probable released tuple of the ``top`` most frequent inputs (seed 000, Fig. 5).

    Each row is tagged with the private class it leans to: the class whose
    posterior p(a | b) exceeds its base rate p(a) by the most, or ``"N"``
    (neutral) when no posterior differs from its base rate by more than ``neutral``.

    Returns
    -------
    list of dict with keys ``input`` (tuple), ``share`` (p(b)), ``posterior``
    (list p(a | b)), ``tag``, ``output`` (tuple, None = erased), ``probability``
    (q(output | input)).
    """
    q = np.asarray(q.toarray() if hasattr(q, "toarray") else q, dtype=float)
    p_c = problem.p_ac.sum(axis=0)
    p_a = problem.p_ac.sum(axis=1)
    order = np.argsort(-p_c, kind="stable")[:top]
    rows = []
    for c in order:
        post = problem.p_ac[:, c] / p_c[c]
        diff = post - p_a
        a = int(np.argmax(diff))
        tag = classes[a] if np.max(np.abs(diff)) > neutral else "N"
        j = int(np.argmax(q[c]))
        rows.append({"input": problem.inputs[c], "share": float(p_c[c]), "posterior": post.tolist(),
                     "tag": tag, "output": problem.outputs[j], "probability": float(q[c, j])})
    return rows
