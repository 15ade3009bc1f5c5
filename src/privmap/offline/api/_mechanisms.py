"""One build function for each mechanism beyond seed 000's quantized and exact ones.

The recommender, the ranking mode, the funnel, max-correlation, gaussian and nullspace, each as
its ``privmap build`` command.

Each takes labelled rows (a CSV path, a pandas DataFrame, or a NumPy array with ``columns=``), the
mechanism's options as keywords (checked by its options class when it is made, before any row is
read), the header options every bundle has (``bundle_version``, ``issued_at``, ``valid_days``,
``device_class``), and ``key=`` / ``out=`` to sign and write the bundle; it returns a
:class:`BuildResult` whose ``result`` is the mechanism's
:class:`~privmap.offline.mechanisms.Result`. A table in memory builds the bundle bytes its command
builds on the CSV :func:`privmap.offline.data.csv_source` writes of it.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..data import Dataset, declare
from ..mechanisms import (
    FunnelOptions,
    GaussianOptions,
    MaxCorrelationOptions,
    NullspaceOptions,
    QuantizedOptions,
    RecommenderOptions,
    funnel,
    gaussian,
    max_correlation,
    nullspace,
    ranking,
    recommender,
)
from ..mechanisms.max_correlation import MAXCORR_BITS
from ..mechanisms.recommender import DEFAULT_RANK
from ._calls import BuildResult, PathLike, SigningKey, Table, built_from, names

__all__ = ["build_recommender", "build_ranking", "build_funnel", "build_max_correlation", "build_gaussian", "build_nullspace"]


def _required(columns: str | Sequence[str]) -> tuple[str, ...]:
    """Named columns (a comma-separated string or a sequence) as a tuple; the options class refuses none."""
    return names(columns) or ()


def build_recommender(data: Table, *, private: str | Sequence[str], columns: Sequence[str] | None = None,
                      public: str | Sequence[str] | None = None, rank: int = DEFAULT_RANK, reg: float | None = None,
                      decimals: int = 2, domains: Sequence[str] = (), key: SigningKey | None = None,
                      passphrase: bytes | None = None, out: PathLike | None = None,
                      **mapping: Any) -> BuildResult:
    """Build a recommender bundle (``privmap build --utility recommender``) from labelled ratings.

    The ratings are one numeric column per item (blank = not rated) and the private column(s).

    Parameters
    ----------
    data, private, columns, public, domains, key, passphrase, out
        As :func:`build_quantized`.
    rank : int
        Latent rank of the factor model (``--factors``).
    reg : float, optional
        Ridge penalty of the factor model and of the device's fold-in; None chooses it by
        validation (``--factor-reg auto``).
    decimals : int
        Decimals the released ratings are rounded to.
    **mapping
        Any field of :class:`privmap.offline.QuantizedOptions` for the mapping of the factor points
        (``clusters``, ``delta_fraction``, ``cross_fitting``, ``issued_at``, ...); ``prior`` defaults to
        ``"posteriors"`` as on the command line, and an ``auto`` search tries both codebooks
        (``Auto.class_blind``) unless ``class_blind`` or the search's own codebooks are given.

    Raises
    ------
    BuildError
        Options the :class:`~privmap.offline.RecommenderOptions` refuse, bad data, ``out`` without
        ``key``, or a bundle the device would refuse.
    """
    options = RecommenderOptions(mapping=_model_mapping(domains, mapping), rank=rank, reg=reg, decimals=decimals)
    return _model_build(data, options, recommender.build, private=private, columns=columns, public=public, key=key,
                        passphrase=passphrase, out=out)


def build_ranking(data: Table, *, private: str | Sequence[str], columns: Sequence[str] | None = None,
                  public: str | Sequence[str] | None = None, rank: int = ranking.DEFAULT_RANK,
                  penalty: float = ranking.DEFAULT_PENALTY, decimals: int = 3, domains: Sequence[str] = (),
                  key: SigningKey | None = None, passphrase: bytes | None = None, out: PathLike | None = None,
                  **mapping: Any) -> BuildResult:
    """Build a ranking bundle (``privmap build --utility ranking``) from labelled ratings or watch data.

    The data are one numeric column per item (blank = not rated or not watched) and the private
    column(s).

    Parameters
    ----------
    data, private, columns, public, domains, key, passphrase, out
        As :func:`build_quantized`.
    rank : int
        Rank k of the score space (``--factors``).
    penalty : float
        EASE's ridge penalty lambda.
    decimals : int
        Decimals the released scores are rounded to.
    **mapping
        As :func:`build_recommender`'s.

    Raises
    ------
    BuildError
        Options the :class:`~privmap.offline.mechanisms.ranking.RankingOptions` refuse, bad data,
        ``out`` without ``key``, or a bundle the device would refuse.
    """
    options = ranking.RankingOptions(mapping=_model_mapping(domains, mapping), rank=rank, penalty=penalty,
                                     decimals=decimals)
    return _model_build(data, options, ranking.build, private=private, columns=columns, public=public, key=key,
                        passphrase=passphrase, out=out)


def _model_mapping(domains: Sequence[str], mapping: dict) -> QuantizedOptions:
    """The mapping options of a model's points, as the command line makes them.

    ``prior`` defaults to ``"posteriors"``, and an ``auto`` search tries both codebooks unless
    ``class_blind`` or the search's own codebooks are given.
    """
    mapping.setdefault("prior", "posteriors")
    auto = mapping.get("auto")
    if auto is not None and not auto.class_blind and "class_blind" not in mapping:
        mapping["auto"] = dataclasses.replace(auto, class_blind=(False, True))
    return QuantizedOptions(declared=declare(None, list(domains)) if domains else None, **mapping)


def _model_build(data: Table, options, build, *, private, columns, public, key, passphrase, out) -> BuildResult:
    """``build(dataset, options)`` on the numeric rows of ``data`` (blank = not rated).

    Signed and written as :func:`._calls.built_from` does.
    """
    declared = options.mapping.declared
    tokens = declared.missing_tokens() if declared else None
    selected = names(public)
    return built_from(data, columns, lambda path: build(
        Dataset.from_csv(path, private=private, public=selected, categorical=False, missing_tokens=tokens), options),
        key=key, passphrase=passphrase, out=out)


def build_funnel(data: Table, *, private: str, columns: Sequence[str] | None = None,
                 public: str | Sequence[str] | None = None, disclosure: float | None = None,
                 disclosure_fraction: float | None = None, smoothing: float = 0.0, seed: int = 0,
                 bundle_version: int = 1, issued_at: int | None = None, valid_days: float = 365,
                 device_class: str = "generic", key: SigningKey | None = None, passphrase: bytes | None = None,
                 out: PathLike | None = None) -> BuildResult:
    """Build a privacy-funnel bundle (``privmap build funnel``, seed 003) from labelled categorical rows.

    Parameters
    ----------
    data, columns, key, passphrase, out
        As :func:`build_quantized`.
    private : str
        The private column S.
    public : str or sequence of str, optional
        The public columns X; default every other column.
    disclosure, disclosure_fraction : float
        Exactly one: the disclosure floor R = I(X;Y) in bits, or R as a fraction of H(X).
    smoothing : float
        Additive smoothing of the prior's counts.
    seed : int
        Random seed.
    bundle_version, issued_at, valid_days, device_class
        The bundle's header (:class:`~privmap.offline.mechanisms._header.HeaderOptions`).

    Raises
    ------
    BuildError
        Options :class:`~privmap.offline.mechanisms.FunnelOptions` refuses, bad data or R > H(X),
        ``out`` without ``key``, or a bundle the device would refuse.
    """
    options = FunnelOptions(private=private, public=names(public), disclosure=disclosure,
                            disclosure_fraction=disclosure_fraction, smoothing=smoothing, seed=seed,
                            bundle_version=bundle_version, issued_at=issued_at, valid_days=valid_days,
                            device_class=device_class)
    return built_from(data, columns, lambda path: funnel.build(path, options), key=key, passphrase=passphrase, out=out)


def build_max_correlation(data: Table, *, delta: float, columns: Sequence[str] | None = None,
                          public: str | Sequence[str] | None = None, private: str | None = None,
                          information_budget: float | None = None, starts: int = 6, bits: int = MAXCORR_BITS,
                          seed: int = 0, bundle_version: int = 1, issued_at: int | None = None,
                          valid_days: float = 365, device_class: str = "generic", key: SigningKey | None = None,
                          passphrase: bytes | None = None, out: PathLike | None = None) -> BuildResult:
    """Build a max-correlation bundle (``privmap build max-correlation``, seed 002) from ``data``.

    From the public categorical columns of ``data``: the design reads P_X alone, no label.

    Parameters
    ----------
    data, columns, key, passphrase, out
        As :func:`build_quantized`.
    delta : float
        The Hamming budget D: expected number of changed cells.
    public : str or sequence of str, optional
        The public columns X; default every column but ``private``.
    private : str, optional
        A column left out of X (never read).
    information_budget : float, optional
        The assumed Delta >= I(S;X) in bits, for the declared leakage bound.
    starts, bits, seed
        The design's random starts, the table's bits, the random seed.
    bundle_version, issued_at, valid_days, device_class
        The bundle's header.

    Raises
    ------
    BuildError
        Options :class:`~privmap.offline.mechanisms.MaxCorrelationOptions` refuses, bad data or
        too many distinct tuples, ``out`` without ``key``, or a bundle the device would refuse.
    """
    options = MaxCorrelationOptions(delta=delta, public=names(public), private=private,
                                    information_budget=information_budget, starts=starts, bits=bits, seed=seed,
                                    bundle_version=bundle_version, issued_at=issued_at, valid_days=valid_days,
                                    device_class=device_class)
    return built_from(data, columns, lambda path: max_correlation.build(path, options), key=key, passphrase=passphrase,
                      out=out)


def build_gaussian(data: Table, *, private: str | Sequence[str], utility: str | Sequence[str], delta: float,
                   columns: Sequence[str] | None = None, gamma: float = 0.0, fisher: bool = False,
                   dtheta: float = 1.0, stop: float = 1e-3, saturation: float = 1e-6, bundle_version: int = 1,
                   issued_at: int | None = None, valid_days: float = 365, device_class: str = "generic",
                   key: SigningKey | None = None, passphrase: bytes | None = None,
                   out: PathLike | None = None) -> BuildResult:
    """Build a greedy Gaussian-noise bundle (``privmap build gaussian``, seed 004) from real-valued rows.

    Every column but the private and utility ones is released with noise.

    Parameters
    ----------
    data, columns, key, passphrase, out
        As :func:`build_quantized`.
    private, utility : str or sequence of str
        The private columns X_p and the utility columns X_u (a string: comma-separated).
    delta : float
        Utility-loss cap I(X_u;X) - I(X_u;Y) in nats.
    gamma : float
        Least ratio of privacy gain to utility loss for each noise step.
    fisher : bool
        Measure utility by the Fisher information (one utility column).
    dtheta, stop, saturation : float
        The greedy's first variance increment, the increment it stops below, the saturation gain.
    bundle_version, issued_at, valid_days, device_class
        The bundle's header.

    Raises
    ------
    BuildError
        Options :class:`~privmap.offline.mechanisms.GaussianOptions` refuses, bad data or a
        covariance that is not positive definite, ``out`` without ``key``, or a bundle the device
        would refuse.
    """
    options = GaussianOptions(private=_required(private), utility=_required(utility),
                              delta=delta, gamma=gamma, fisher=fisher, dtheta=dtheta, stop=stop, saturation=saturation,
                              bundle_version=bundle_version, issued_at=issued_at, valid_days=valid_days,
                              device_class=device_class)
    return built_from(data, columns, lambda path: gaussian.build(path, options), key=key, passphrase=passphrase,
                      out=out)


def build_nullspace(data: Table, *, desired: str | Sequence[str], confidential: str | Sequence[str], epsilon: float,
                    columns: Sequence[str] | None = None, bundle_version: int = 1, issued_at: int | None = None,
                    valid_days: float = 365, device_class: str = "generic", key: SigningKey | None = None,
                    passphrase: bytes | None = None, out: PathLike | None = None) -> BuildResult:
    """Build a null-space cleaning bundle (``privmap build nullspace``, seed 001) from real-valued rows.

    Every column but the targets is released, moved to hide the confidential prediction.

    Parameters
    ----------
    data, columns, key, passphrase, out
        As :func:`build_quantized`.
    desired, confidential : str or sequence of str
        Targets of the desired and the confidential linear predictors (a string: comma-separated).
    epsilon : float
        Per-row budget ``||A_d^T (x - x~)||^2`` on the desired predictor's change.
    bundle_version, issued_at, valid_days, device_class
        The bundle's header.

    Raises
    ------
    BuildError
        Options :class:`~privmap.offline.mechanisms.NullspaceOptions` refuses, bad columns or data,
        ``out`` without ``key``, or a bundle the device would refuse.
    """
    options = NullspaceOptions(desired=_required(desired), confidential=_required(confidential),
                               epsilon=epsilon, bundle_version=bundle_version, issued_at=issued_at,
                               valid_days=valid_days, device_class=device_class)
    return built_from(data, columns, lambda path: nullspace.build(path, options), key=key, passphrase=passphrase,
                      out=out)
