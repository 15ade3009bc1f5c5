"""build, evaluate, curve and sanitize for a notebook.

A DataFrame (or a NumPy array with column names) or a CSV path in, a result object with the
figures the CLI prints out.

Each call runs the same code as its ``privmap`` command (the bundle bytes of a build are those
``privmap build`` writes for the same rows, options and issue time); a table in memory goes
through a temporary CSV (:func:`privmap.offline.data.csv_source`). Wherever a bundle is taken, a
path, its bytes or a build's :class:`~privmap.offline.mechanisms.Result` (unsigned) will do.
"""
from __future__ import annotations

import dataclasses
import math
import os
import pathlib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from .. import _routed
from .._errors import BuildError
from .._files import atomic_write
from ..bundle import check_bundle, encode_payload, load_private_key, read_bytes, read_unverified, sign_bundle
from ..data import Dataset, csv_source, declare
from ..evaluation import (
    baselines,
    evaluate_table_bundle,
    format_table,
    format_table_report,
    json_points,
    sweep,
    swept,
    write_csv,
)
from ..measures import curve_title, have_matplotlib, plot_curve
from ..mechanisms import ExactOptions, QuantizedOptions, Result, exact, mechanism_of, quantized

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = ["BuildResult", "Evaluation", "Curve", "Released", "build_quantized", "build_exact", "evaluate", "curve",
           "sanitize", "Table", "PathLike", "SigningKey", "built_from", "names"]

#: A file path.
PathLike = Union[str, "os.PathLike[str]"]
#: Labelled rows: a CSV path, a pandas DataFrame, or a 2-D NumPy array (with ``columns=``).
Table = Any
#: What signs a bundle: a private-key PEM path, or the key itself.
SigningKey = Union[PathLike, "Ed25519PrivateKey"]

#: The figures of a seed-000 build that ``privmap build --json`` prints, read from the bundle's metrics.
BUILD_FIGURES = ("leakage_before_bits", "leakage_bits", "distortion", "delta", "r", "delta_plus_r", "clusters", "n",
                 "perfect_privacy_distortion", "measured_distortion", "leakage_change_bits", "quantization_distortion")


@dataclass(frozen=True)
class BuildResult:
    """A built bundle: its build's result, its signed bytes and where they were written.

    ``result`` (the mechanism's :class:`~privmap.offline.mechanisms.Result`: the unsigned payload
    and the build's record), ``bundle`` (the signed bytes, or None when no key was given) and
    ``out`` (where they were written, or None).
    """

    result: Result = field(repr=False)
    bundle: bytes | None
    out: pathlib.Path | None

    @property
    def payload(self) -> dict:
        """The unsigned payload."""
        return self.result.payload

    @property
    def metrics(self) -> dict:
        """Every figure the bundle declares (``leakage_bits``, ``holdout_leakage_bits``, ...)."""
        return dict(self.payload["metrics"])

    @property
    def summary(self) -> dict:
        """The figures ``privmap build --json`` prints.

        For seed 000's mechanisms (quantized, exact, recommender) leakages (bits), distortions, K, n,
        the cross-fitted new-user leakage and the codebook step's figures; for the others, every
        declared figure; and the bundle's size in bytes.
        """
        metrics = self.payload["metrics"]
        size = len(self.bundle) if self.bundle is not None else None
        solved = getattr(self.result.detail, "solved", None)
        if solved is None or not all(k in metrics for k in BUILD_FIGURES):
            return {"bytes": size, "mechanism": self.result.mechanism, **metrics}
        summary = {"bytes": size, **{k: metrics[k] for k in BUILD_FIGURES}, "solver": solved.solver}
        summary.update({k: v for k, v in metrics.items() if k.startswith(("holdout_", "codebook_"))})
        return summary

    def __str__(self) -> str:
        m = self.payload["metrics"]
        if not all(k in m for k in BUILD_FIGURES):
            return _other_figures(self.result.mechanism, m)
        lines = [f"leakage I(A;C^): {m['leakage_bits']:.6f} bits (before the mapping: {m['leakage_before_bits']:.6f})",
                 f"distortion {m['distortion']:.4f} (Delta = {m['delta']:.4f}); measured on data "
                 f"{m['measured_distortion']:.4f} <= Delta + r = {m['delta_plus_r']:.4f}; K = {m['clusters']}, "
                 f"n = {m['n']}"]
        if "holdout_leakage_bits" in m:
            lines.append(f"new users ({m['holdout_folds']}-fold cross-fitted): leakage {m['holdout_leakage_bits']:.6f} "
                         f"bits [{m['holdout_leakage_low_bits']:.6f}, {m['holdout_leakage_high_bits']:.6f}]")
        return "\n".join(lines)

    def __repr__(self) -> str:
        m = self.payload["metrics"]
        figures = "".join(f", {k}={m[k]:.6g}" for k in ("leakage_bits", "distortion", "holdout_leakage_bits")
                          if isinstance(m.get(k), (int, float)))
        size = "unsigned" if self.bundle is None else f"{len(self.bundle)} bytes"
        return f"<BuildResult {self.result.mechanism}, {size}{figures}" + (f", out={str(self.out)!r}>" if self.out
                                                                            else ">")


def _other_figures(mechanism: str, metrics: dict) -> str:
    """The text of a build of a mechanism other than seed 000's: its leakage, then every declared figure."""
    lines = [f"{mechanism} bundle"]
    if "leakage_bits" in metrics:
        before = metrics.get("leakage_before_bits")
        lines[0] += f": leakage {metrics['leakage_bits']:.6f} bits" + (
            f" (before the mapping: {before:.6f})" if isinstance(before, (int, float)) else "")
    lines += [f"  {k}: {v}" for k, v in metrics.items() if k not in ("leakage_bits", "leakage_before_bits")]
    return "\n".join(lines)


def _private_key(key: SigningKey | None, passphrase: bytes | None) -> Ed25519PrivateKey | None:
    if key is None or not isinstance(key, (str, os.PathLike)):
        return key
    return load_private_key(pathlib.Path(key), password=passphrase)


def names(columns: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """Column names as the options take them: a comma-separated string split, a sequence as a tuple."""
    if columns is None:
        return None
    if isinstance(columns, str):
        return tuple(c.strip() for c in columns.split(",") if c.strip())
    return tuple(columns)


def build_quantized(data: Table, *, private: str | Sequence[str], columns: Sequence[str] | None = None,
                    public: str | Sequence[str] | None = None, key: SigningKey | None = None,
                    passphrase: bytes | None = None, out: PathLike | None = None, domains: Sequence[str] = (),
                    **options: Any) -> BuildResult:
    """Build a quantized bundle (``privmap build``) from labelled rows.

    Parameters
    ----------
    data : path, pandas.DataFrame or 2-D NumPy array
        Labelled rows: the private column and the public ones (a NumPy array needs ``columns``).
    private : str or sequence of str
        The private column, or (a list or tuple of two or more) the private columns protected as
        their joint attribute: the bundle declares the joint's leakage and each column's
        (``leakage_bits[COL]``, ``holdout_leakage_bits[COL]``; docs/bundle-format.md).
    public : str or sequence of str, optional
        The public columns (a string: comma-separated); default every other column.
    key : path or Ed25519PrivateKey, optional
        Signs the bundle (checked with the device runtime); without it ``bundle`` is None.
    out : path, optional
        Where to write the signed bundle (atomically); needs ``key``.
    domains : sequence of str
        Declared domains as ``--domain`` takes them: ``"LO:HI"`` for every public column,
        ``"COL=LO:HI"`` for one.
    **options
        Any field of :class:`privmap.offline.QuantizedOptions`: ``clusters``, ``delta`` or
        ``delta_fraction``, ``metric``, ``cross_fitting`` (a :class:`~privmap.offline.CrossFitting`
        or None), ``issued_at``, ...

    Raises
    ------
    BuildError
        Bad options or data (named as in the CLI, the table as ``DataFrame``), ``out`` without ``key``,
        or a bundle the device would refuse.
    """
    built_options = QuantizedOptions(declared=declare(None, list(domains)) if domains else None, **options)
    return _built(data, columns, private, public, False, quantized.build, built_options, key, passphrase, out)


def build_exact(data: Table, *, private: str | Sequence[str], columns: Sequence[str] | None = None,
                public: str | Sequence[str] | None = None, key: SigningKey | None = None,
                passphrase: bytes | None = None, out: PathLike | None = None, **options: Any) -> BuildResult:
    """Build an exact bundle (``privmap build --mechanism exact``) from labelled categorical rows.

    Parameters are :func:`build_quantized`'s (less ``domains``); ``**options`` any field of
    :class:`privmap.offline.ExactOptions`. Raises as :func:`build_quantized`.
    """
    return _built(data, columns, private, public, True, exact.build, ExactOptions(**options), key, passphrase, out)


def _built(data, columns, private, public, categorical: bool, build, options, key, passphrase, out) -> BuildResult:
    """Read the rows as ``privmap build`` does, run ``build`` on them, sign with ``key`` and write to ``out``."""
    mapping = getattr(options, "mapping", options)
    declared = getattr(mapping, "declared", None)
    tokens = declared.missing_tokens() if declared else None
    return built_from(data, columns, lambda path: build(
        Dataset.from_csv(path, private=private, public=names(public), categorical=categorical, missing_tokens=tokens),
        options), key=key, passphrase=passphrase, out=out)


def built_from(data: Table, columns: Sequence[str] | None, build: Callable[[pathlib.Path], Result], *,
               key: SigningKey | None, passphrase: bytes | None, out: PathLike | None) -> BuildResult:
    """Run ``build`` on the CSV of ``data``, sign its payload with ``key`` and write the bundle to ``out``.

    The CSV is ``data``'s path, or the temporary CSV of a table in memory; the key is checked as a
    device would. The warnings its cross-fitting folds raised come as one RuntimeWarning that
    counts them (:mod:`privmap.offline._routed`).

    Raises
    ------
    BuildError
        ``out`` without ``key``, a wrong key, the build's errors (naming the table ``DataFrame``), or a
        bundle the device would refuse.
    """
    if out is not None and key is None:
        raise BuildError("out= needs key= to sign the bundle")
    private_key = _private_key(key, passphrase)
    _routed.clear()
    with csv_source(data, columns) as path:
        result = build(path)
    routed = _routed.summary()
    if routed is not None:                 # the folds' warnings, one for the build (as the CLI's note)
        warnings.warn(routed.removeprefix("note: "), RuntimeWarning, stacklevel=3)
    bundle = None
    if private_key is not None:
        bundle = sign_bundle(encode_payload(result.payload), private_key)
        check_bundle(bundle, private_key.public_key(), now=result.payload["issued_at"])
    if out is not None:
        assert bundle is not None
        atomic_write(pathlib.Path(out), bundle)
    return BuildResult(result=result, bundle=bundle, out=pathlib.Path(out) if out is not None else None)


@dataclass(frozen=True)
class Evaluation:
    """A quantized, exact or recommender bundle measured on labelled rows (``privmap evaluate``).

    ``summary`` is the dict ``privmap evaluate --json`` prints (``leakage_bits``, ``distortion``,
    ``attacker``, ``declared``, ``baselines``, ...); ``str()`` gives its text report.
    """

    summary: dict
    signature_verified: bool

    @property
    def leakage_bits(self) -> float:
        """I(A; released) in bits on the rows' empirical prior."""
        return self.summary["leakage_bits"]

    @property
    def distortion(self) -> float:
        """Mean distortion of the released rows from the raw ones, in the bundle's metric."""
        return self.summary["distortion"]

    def __str__(self) -> str:
        return format_table_report(self.summary)

    def __repr__(self) -> str:
        return (f"<Evaluation leakage_bits={self.leakage_bits:.6g}, distortion={self.distortion:.6g}, "
                f"signature_verified={self.signature_verified}>")


def _signed(result):
    """A build's result as the device reads a bundle, and a keyring trusting only its key.

    Its payload encoded (canonical floats) and signed with a key made for this call alone.
    """
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from privmap.device import Keyring
    key = Ed25519PrivateKey.generate()
    return sign_bundle(encode_payload(result.payload), key), Keyring([key.public_key()])


def _payload(bundle, trusted) -> tuple[dict, bool]:
    """The bundle's payload and whether a trusted key verified it.

    The bundle is a path, bytes, a :class:`Result` or a :class:`BuildResult`; a result in memory
    is unsigned: never verified.
    """
    from privmap.device import Keyring, load_bundle

    if isinstance(bundle, (Result, BuildResult)):
        return read_unverified(_signed(bundle)[0])[0], False
    data = bytes(bundle) if isinstance(bundle, (bytes, bytearray)) else read_bytes(pathlib.Path(bundle))
    if trusted is None:
        return read_unverified(data)[0], False
    keyring = trusted if isinstance(trusted, Keyring) else Keyring.from_pem_files(trusted)
    load_bundle(data, keyring)
    return read_unverified(data)[0], True


def evaluate(bundle, data, *, private: str | Sequence[str], columns=None, trusted=None, seed: int = 0, test_fraction: float = 0.3,
             permutations: int = 20, attacker: bool = True) -> Evaluation:
    """Measure a quantized, exact or recommender ``bundle`` on labelled rows ``data``, as ``privmap evaluate`` does.

    ``bundle`` is a path, bytes, or a build's :class:`Result`; ``data`` a path, a DataFrame, or a
    NumPy array with ``columns``. ``trusted`` (a public-key PEM path or a
    :class:`~privmap.device.Keyring`) verifies a signed bundle first; without it (or for a result
    in memory) the payload is read unverified.

    Raises
    ------
    BuildError
        Another mechanism's bundle (``privmap evaluate`` measures those), or bad data.
    PrivmapDeviceError
        With ``trusted``: a bundle the device refuses.
    """
    payload, verified = _payload(bundle, trusted)
    record = mechanism_of(payload["mechanism"])
    if record is None or record.view is None:       # its own report: ``privmap evaluate`` measures it
        raise BuildError(f"evaluate() measures quantized, exact and recommender bundles; use 'privmap evaluate' "
                         f"for a {payload['mechanism']} bundle")
    with csv_source(data, columns) as path:
        report = evaluate_table_bundle(payload, path, private, seed=seed, test_fraction=test_fraction,
                                       permutations=permutations, attacker=attacker)
    return Evaluation(summary=report, signature_verified=verified)


@dataclass(frozen=True)
class Curve:
    """A privacy-distortion sweep (``privmap curve``): its points and baselines.

    ``points`` as ``privmap curve --json`` gives them (one dict per (K, Delta): leakage,
    distortion, attacker AUC, ...) and ``baselines`` (quantized sweeps). ``str()`` gives the
    printed table; :meth:`to_csv` and :meth:`plot` write the files.
    """

    points: list
    baselines: dict | None
    _raw: list = field(repr=False)
    _title: str = field(default="Privacy-distortion trade-off", repr=False)
    _columns: tuple = field(default=(), repr=False)

    def __str__(self) -> str:
        return format_table(self._raw)

    def __repr__(self) -> str:
        ks = sorted({p["k"] for p in self.points})
        return f"<Curve {len(self.points)} points, K in {ks}, Delta in {sorted({p['delta'] for p in self.points})}>"

    def to_csv(self, path) -> None:
        """Write the points as ``privmap curve --csv`` does."""
        write_csv(self._raw, pathlib.Path(path))

    def plot(self, path, *, title: str | None = None):
        """Write the plot as ``privmap curve --png`` does; the path, or None without matplotlib.

        A joint sweep has each column's line; the title is wrapped to the figure's width, by default
        the one the command gives: the private column(s) against the public ones.
        """
        if not have_matplotlib():
            return None
        return plot_curve(self._raw, pathlib.Path(path), auc=any(p.get("roc_auc") is not None for p in self.points),
                          baselines=self.baselines, title=title or self._title, columns=self._columns)


def curve(data, *, private: str | Sequence[str], deltas, clusters=(16,), columns=None, public=None, mechanism: str = "quantized",
          metric: str | None = None, solver: str = "fast", seed: int = 0, attacker: bool = True,
          test_fraction: float = 0.3, recommender: bool = False) -> Curve:
    """Sweep Delta (and K) on labelled rows, as ``privmap curve`` does.

    For each K the rows are quantized (``clusters``; 0 = no quantization; exact: the erasure
    alphabet), program (19) is solved for each Delta in ``deltas`` (in the metric's unit) and the
    mapping measured on the raw rows.
    ``private`` may list several columns (their joint attribute; each column's figures are in the
    points as ``leakage_bits[COL]``, ...). ``recommender`` (ratings, blank = not rated; as
    ``privmap curve --recommender``) adds what the released rows are worth to a recommender to
    every point (``rmse_*``, ``value_kept``).

    Raises
    ------
    BuildError
        Bad data, ``deltas`` / ``clusters`` empty or negative, or ``recommender`` with another
        mechanism than the quantized one.
    """
    record = swept(mechanism)
    if recommender and not record.ratings:
        raise BuildError("recommender=True measures the quantized mechanism on ratings")
    delta_list, k_list = [float(d) for d in deltas], [int(k) for k in clusters]
    if not delta_list or any(not math.isfinite(d) or d < 0 for d in delta_list):
        raise BuildError(f"deltas must be finite numbers >= 0, got {list(deltas)}")
    if not k_list or any(k < 0 for k in k_list):
        raise BuildError(f"clusters must be integers >= 0, got {list(clusters)}")
    metric = metric or record.default_metric
    cols = [c.strip() for c in public.split(",")] if isinstance(public, str) else public
    with csv_source(data, columns) as path:
        ds, _ = Dataset.from_csv(path, private=private, public=cols,
                                 categorical=record.categorical).without_all_missing()
    raw = sweep(ds.public, ds.private, ds.classes, ds.features, deltas=delta_list, clusters=k_list,
                       mechanism=mechanism, metric=metric, seed=seed, solver=solver, attacker=attacker,
                       test_fraction=test_fraction, private_name=ds.private_name, columns=ds.columns,
                       recommender=recommender)
    base = None
    if record.quantizes:
        base = baselines(ds.public, ds.private, len(ds.classes), metric, seed=seed, test_fraction=test_fraction,
                         attacker=attacker, clusters=[k for k in k_list if k])
    names = ds.columns.names if ds.columns is not None else (ds.private_name,)
    return Curve(points=json_points(raw), baselines=base, _raw=raw,
                 _title=curve_title("DataFrame" if not isinstance(data, (str, os.PathLike)) else
                                    pathlib.Path(data).stem, names, ds.features),
                 _columns=tuple(ds.columns.names) if ds.columns is not None else ())


@dataclass(frozen=True)
class Released:
    """Rows released by a bundle (``privmap sanitize``).

    ``columns`` (the bundle's public features, in its order), ``rows`` (released cells, one list
    per valid input row, input order; an erased cell is None), ``index`` (each released row's label
    in the input: its DataFrame index, or its position in an array or a file), ``refused``
    ((label, reason) of each row the device refused; nothing released for it). Its repr counts the
    rows; :meth:`to_frame` holds them.
    """

    columns: tuple
    rows: list
    refused: list = dataclasses.field(default_factory=list)
    index: list = dataclasses.field(default_factory=list)

    def __repr__(self) -> str:
        return f"<Released {len(self.rows)} rows of {len(self.columns)} columns, {len(self.refused)} refused>"

    def to_frame(self):
        """The released rows as a pandas DataFrame (needs pandas), indexed as the input rows were."""
        import pandas as pd
        return pd.DataFrame(self.rows, columns=list(self.columns), index=self.index or None)


def sanitize(bundle, data, *, trusted=None, columns=None, skip_invalid: bool = False) -> Released:
    """Release each row of ``data`` through ``bundle`` as one device per row would.

    ``data`` is a DataFrame, a NumPy array with ``columns``, or a CSV path; ``bundle`` a path or
    bytes, verified first with ``trusted`` (a public-key PEM path or a
    :class:`~privmap.device.Keyring`). A build's :class:`Result` (unsigned, ``trusted`` None) goes
    to the device runtime signed with a key made for this call alone. The table's columns must
    include the bundle's features (any order; others, such as the private column, are never read).

    Raises
    ------
    BuildError
        A feature missing from the table.
    InputError
        A row the device refuses, when not ``skip_invalid`` (its label and the device's reason).
    PrivmapDeviceError
        A bundle the device refuses.
    """
    import csv

    from privmap.device import Keyring, load_bundle, read_bundle_file
    from privmap.device.errors import InputError
    if isinstance(bundle, (Result, BuildResult)):
        if trusted is not None:
            raise BuildError("trusted= verifies a signed bundle; a build's result in memory is unsigned")
        bundle, trusted = _signed(bundle)
    keyring = trusted if isinstance(trusted, Keyring) else Keyring.from_pem_files(trusted)
    loaded = (load_bundle(bytes(bundle), keyring) if isinstance(bundle, (bytes, bytearray))
              else read_bundle_file(pathlib.Path(bundle), keyring))
    names = [f.name for f in loaded.features]
    released = Released(columns=tuple(names), rows=[])
    index = None if isinstance(data, (str, os.PathLike)) else getattr(data, "index", None)
    labels = None if index is None else index.tolist()       # a DataFrame's own labels, as Python values
    with csv_source(data, columns) as path, path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        missing = [n for n in names if n not in (reader.fieldnames or [])]
        if missing:
            raise BuildError(f"the table lacks the bundle's feature(s) {', '.join(missing)}")
        for i, row in enumerate(reader):
            label = i if labels is None else labels[i]
            try:
                released.rows.append(loaded.sanitize([row[n] for n in names]))
            except InputError as exc:
                if not skip_invalid:
                    raise InputError(f"row {label!r} refused: {exc} (nothing released for it; skip_invalid=True "
                                     "releases the others)") from None
                released.refused.append((label, str(exc)))
                continue
            released.index.append(label)
    return released
