"""Several private columns protected at once: the joint attribute and what each column leaks.

``privmap build --private COL1,COL2`` protects the **joint** attribute A = (A_1, ..., A_m): each
observed tuple of the columns' values is one private class, and program (19) minimises
I(A; C^). Since A_i is a function of A, I(A_i; C^) <= I(A; C^) for every column (data
processing), so the joint's figure bounds what each column leaks; the bundle declares both.

The bundle's format is unchanged (docs/bundle-format.md, "Several private columns"): a joint
bundle's ``private.name`` is the JSON array of the column names and each class the JSON array of
its values (compact, UTF-8: :func:`joint_name`, :func:`joint_class`), so a device, which treats
both as opaque strings, reads it as any bundle; each column's figures are flat ``metrics`` keys,
``FIGURE[COL]`` (:func:`column_key`), finite numbers like every metric. :func:`payload_columns`
reads the columns back from a payload (None for a one-column bundle).

This module is stage-neutral (the dataset, the mechanisms, the evaluation and the commands all
read it), and holds no I/O.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ._errors import DatasetError
from ._information import leakage_bits, mutual_information_bits

__all__ = ["PrivateColumns", "joint_name", "joint_class", "column_key", "by_column", "payload_columns",
           "marginal_prior", "column_figures", "split_private", "check_names", "withheld_names",
           "MAX_PRIVATE_COLUMNS", "COLUMN_FIGURES"]

#: Most private columns one build protects together (each adds :data:`COLUMN_FIGURES` metrics, and
#: a device reads at most ``Limits.max_map_entries`` of them).
MAX_PRIVATE_COLUMNS = 16
#: The metrics a joint bundle declares for each column: ``FIGURE[COL]`` for each FIGURE here
#: (the cross-fitted three only when the build cross-fits).
COLUMN_FIGURES = ("leakage_bits", "leakage_before_bits", "holdout_leakage_bits", "holdout_leakage_low_bits",
                  "holdout_leakage_high_bits")
#: Longest figure name of :data:`COLUMN_FIGURES` plus the brackets: a column name leaves this many
#: bytes of a device's longest string to the key.
_KEY_OVERHEAD = max(len(f) for f in COLUMN_FIGURES) + 2


def _compact(items: Sequence[str]) -> str:
    return json.dumps(list(items), ensure_ascii=False, separators=(",", ":"))


def joint_name(columns: Sequence[str]) -> str:
    """The ``private.name`` of a joint bundle: the JSON array of the column names, compact (``["sex","age"]``)."""
    return _compact(columns)


def joint_class(values: Sequence[str]) -> str:
    """One joint class as a bundle names it: the JSON array of its values, compact (``["F","18-24"]``)."""
    return _compact(values)


def column_key(figure: str, column: str) -> str:
    """The flat metrics key of ``figure`` for one private ``column``: ``figure[column]``."""
    return f"{figure}[{column}]"


def by_column(metrics: Mapping, figure: str, columns: Sequence[str]) -> dict | None:
    """``{column: metrics["figure[column]"]}`` for each of ``columns`` that the metrics hold it for.

    None when they hold it for none.
    """
    found = {c: metrics[column_key(figure, c)] for c in columns if column_key(figure, c) in metrics}
    return found or None


def split_private(private: str | Sequence[str]) -> tuple[str, ...]:
    """The private column names of ``--private`` (comma-separated text) or of a sequence of names.

    Stripped, blanks dropped.
    """
    names = private.split(",") if isinstance(private, str) else list(private)
    return tuple(n.strip() for n in names if n.strip())


@dataclass(frozen=True)
class PrivateColumns:
    """The columns of a joint private attribute and how each joint class decomposes.

    Attributes
    ----------
    names : tuple of str, length m (>= 2)
        The private columns, in the order given.
    values : tuple of tuple of str, length m
        Each column's values, sorted: column i's value codes index ``values[i]``.
    codes : ndarray of int64, shape (|A|, m)
        ``codes[a, i]``: the code of joint class a's value in column i.
    """

    names: tuple[str, ...]
    values: tuple[tuple[str, ...], ...]
    codes: np.ndarray

    @property
    def m(self) -> int:
        """Number of columns."""
        return len(self.names)

    def column_codes(self, joint: np.ndarray, i: int) -> np.ndarray:
        """Column ``i``'s value code of each joint class code in ``joint`` (any shape)."""
        return self.codes[np.asarray(joint, dtype=np.int64), i]

    def indicator(self, i: int) -> np.ndarray:
        """The (|A|, |A_i|) 0/1 matrix taking a joint class to its value of column ``i``."""
        out = np.zeros((self.codes.shape[0], len(self.values[i])))
        out[np.arange(self.codes.shape[0]), self.codes[:, i]] = 1.0
        return out


def marginal_prior(p_ac: np.ndarray, columns: PrivateColumns, i: int) -> np.ndarray:
    """p(a_i, c) = sum over joint classes a with value a_i of p(a, c); shape (|A_i|, K_in)."""
    return columns.indicator(i).T @ np.asarray(p_ac, dtype=float)


def column_figures(p_ac: np.ndarray, q, columns: PrivateColumns) -> dict:
    """Each column's in-sample figures of table ``q`` (K_in, K_out) on the joint prior ``p_ac`` (|A|, K_in).

    ``leakage_bits[COL]`` = I(A_i; C^) and ``leakage_before_bits[COL]`` = I(A_i; C),
    in bits, from the marginal prior p(a_i, c) (:func:`marginal_prior`).
    """
    out = {}
    for i, name in enumerate(columns.names):
        marginal = marginal_prior(p_ac, columns, i)
        out[column_key("leakage_bits", name)] = leakage_bits(marginal, q)
        out[column_key("leakage_before_bits", name)] = mutual_information_bits(marginal)
    return out


def check_names(names: Sequence[str], max_string_bytes: int, where) -> None:
    """Refuse private column names a joint bundle could not carry.

    Raises
    ------
    DatasetError
        A column named twice, more than :data:`MAX_PRIVATE_COLUMNS` columns, or a name too long
        for a metrics key (``FIGURE[COL]``) within the device's longest string.
    """
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DatasetError(f"{where}: private column {name!r} is named twice")
        seen.add(name)
    if len(names) > MAX_PRIVATE_COLUMNS:
        raise DatasetError(f"{where}: {len(names)} private columns; at most {MAX_PRIVATE_COLUMNS} are protected together")
    for name in names:
        if len(name.encode("utf-8", "surrogatepass")) + _KEY_OVERHEAD > max_string_bytes:
            raise DatasetError(f"{where}: private column name {name[:40]!r}... is too long for a metrics key "
                             f"(at most {max_string_bytes - _KEY_OVERHEAD} bytes)")


def payload_columns(payload: Mapping) -> PrivateColumns | None:
    """The private columns of a joint bundle's payload, or None for a one-column bundle.

    None also for a payload without a private attribute. A joint payload's ``private.name`` is a
    JSON array of two or more names and every class a JSON array of as many values (module docstring).
    """
    private = payload.get("private")
    if not isinstance(private, Mapping):
        return None
    names = _json_list(private.get("name"))
    if names is None or len(names) < 2:
        return None
    tuples = [_json_list(c) for c in private.get("classes", ())]
    if any(t is None or len(t) != len(names) for t in tuples):
        return None
    values = tuple(tuple(sorted({t[i] for t in tuples if t is not None})) for i in range(len(names)))
    where = [{v: k for k, v in enumerate(vs)} for vs in values]
    codes = np.array([[where[i][t[i]] for i in range(len(names))] for t in tuples if t is not None],
                     dtype=np.int64).reshape(len(tuples), len(names))
    return PrivateColumns(names=tuple(names), values=values, codes=codes)


def withheld_names(withheld: Sequence[str]) -> tuple[str, ...]:
    """The input columns a bundle withholds, as a row may carry them.

    ``withheld`` is the bundle's ``withheld_columns`` (its private attribute's name). The result
    holds each name, and for a joint name (a JSON array of two or more column names,
    :func:`joint_name`) also every column it names, so a row that still holds the private
    columns one by one is read as it is by a one-column bundle.
    """
    names: list[str] = []
    for name in withheld:
        names.append(name)
        columns = _json_list(name)
        if columns is not None and len(columns) >= 2:
            names += [c for c in columns if c not in names]
    return tuple(names)


def _json_list(text) -> list[str] | None:
    if not isinstance(text, str) or not text.startswith("["):
        return None
    try:
        items = json.loads(text)
    except ValueError:
        return None
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        return None
    return items
