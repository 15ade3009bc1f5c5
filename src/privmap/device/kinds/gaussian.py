"""The ``gaussian`` bundle kind: y = x + N, N ~ N(0, diag sigma2) (seed 004).

Noise. :func:`standard_normals` draws standard normals by Box-Muller from a bit source's
``randbits(53)`` (the OS CSPRNG through :func:`privmap.device.randomness.resolve_rng` in
production): ``u1 = (r1 + 1) / 2**53`` lies in (0, 1], so ``log(u1)`` is never ``log(0)``;
``u2 = r2 / 2**53`` lies in [0, 1); the pair gives ``sqrt(-2 log u1) * (cos, sin)(2 pi u2)``.
The largest |z| possible is ``sqrt(2 * 53 * log 2) = 8.57``: the tail beyond it (probability
about 1e-17) is cut, which is negligible. :func:`add_noise` accepts any object with
``randbits(k)``, so a caller may feed it a keyed per-record source.

Repeats. Fresh noise on every release of the same record would average out. A loaded
:class:`GaussianBundle` therefore keeps a per-record memo: the first release of a record (keyed
by the SHA-256 of :func:`canonical_record`) is returned again for every later release of that
record, for the life of the loaded bundle (a new bundle starts a new memo). The memo key is an
HMAC-SHA256 of the canonical record under a random per-object key, so a memory dump of the memo
does not allow offline guessing of low-entropy records. At most
:data:`MAX_MEMO_RECORDS` distinct records are released per loaded bundle; beyond that it refuses
(:class:`ReleaseRefusedError`) rather than forget one. Persisting across processes needs the
device state directory (a keyed derived bit source per record), which this module leaves to it.

Loading recomputes I(X_p;Y) and the utility loss I(X_u;X) - I(X_u;Y) from the bundled
covariances and sigma2 by a pure-Python Cholesky log-determinant (nats), refuses a covariance that
is not positive definite, a declared ``leakage_bits`` below the recomputed one, a declared
utility loss that differs from the recomputed one, or a utility loss above ``delta``.
"""
from __future__ import annotations

import hashlib
import hmac
import math
import os
import struct
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ..constants import LEAKAGE_ABSOLUTE_SLACK, LEAKAGE_RELATIVE_SLACK
from ..errors import BundleFormatError, MetricsError, ReleaseRefusedError
from ..format import Limits, closed_map
from ..randomness import DerivedBits, InsecureTestBits, SystemRandomBits, draw_bits, record_bits, resolve_rng
from ._real import (
    MAX_REAL_DIM,
    RealBundle,
    Vector,
    cholesky_logdet,
    matrix,
    names,
    number,
    parse_real_row,
    symmetric,
    vector,
)

__all__ = ["MECHANISM", "GaussianBundle", "make", "release", "parse_gaussian", "standard_normals", "add_noise",
           "canonical_record", "gaussian_information", "GAUSSIAN_PARAMETER_KEYS", "GAUSSIAN_METRICS",
           "MAX_MEMO_RECORDS", "UTILITY_MEASURES"]

MECHANISM = "gaussian"
GAUSSIAN_PARAMETER_KEYS = ("sigma2", "private", "utility", "cov_private", "cov_utility", "delta",
                           "gamma", "utility_measure")
GAUSSIAN_METRICS = ("leakage_bits", "leakage_nats", "leakage_before_bits", "utility_loss_nats",
                    "delta", "gamma", "n")
UTILITY_MEASURES = ("mutual_information", "fisher")
#: Distinct records one loaded gaussian bundle releases before it refuses (bounds the memo's
#: memory to a few tens of MiB).
MAX_MEMO_RECORDS = 1 << 16
_RECORD_TAG = b"privmap-gaussian-record-v1\x00"
_TWO_PI = 2.0 * math.pi
_SCALE = 2.0 ** -53


def standard_normals(source: SystemRandomBits | InsecureTestBits | DerivedBits, count: int) -> list[float]:
    """``count`` independent N(0, 1) floats by Box-Muller on 53-bit uniforms from ``source``.

    Raises :class:`RandomnessError` if the source fails (see :func:`draw_bits`).
    """
    out: list[float] = []
    while len(out) < count:
        u1 = (draw_bits(source, 53) + 1) * _SCALE
        u2 = draw_bits(source, 53) * _SCALE
        radius = math.sqrt(-2.0 * math.log(u1))
        angle = _TWO_PI * u2
        out.append(radius * math.cos(angle))
        out.append(radius * math.sin(angle))
    return out[:count]


def add_noise(x: Sequence[float], sigma: Iterable[float], source: SystemRandomBits | InsecureTestBits | DerivedBits) -> Vector:
    """A parsed record with Gaussian noise added.

    ``x_i + sigma_i * z_i`` for parsed ``x`` (n floats), standard deviations ``sigma`` (n) and
    normals drawn from ``source`` (any object with ``randbits(k)``); coordinates with
    ``sigma_i = 0`` are released unchanged (their draws are still consumed).
    """
    z = standard_normals(source, len(x))
    return tuple(xi + si * zi for xi, si, zi in zip(x, sigma, z))


def canonical_record(x: Sequence[float]) -> bytes:
    """Canonical bytes of a parsed record of n floats.

    A tag, n as 4 bytes big-endian, then each value as IEEE-754 binary64 big-endian. Equal
    records (``-0.0`` normalised to ``0.0`` by :func:`parse_real_row`) give equal bytes; the
    key of the memo and of a derived bit source.
    """
    return _RECORD_TAG + struct.pack(">I", len(x)) + b"".join(struct.pack(">d", v) for v in x)


def gaussian_information(cov: Sequence[Sequence[float]], sigma2: Sequence[float], n: int) -> float | None:
    """The mutual information ``I(X_a; Y)`` of the Gaussian model, in nats.

    ``I(X_a; Y)`` in nats for the joint covariance ``cov`` of (X, X_a) (X first, n coordinates)
    and noise variances ``sigma2``: ``1/2 (log|S_a| + log|S_X + D| - log|S + diag(D, 0)|)``.
    ``None`` if a matrix is not positive definite. Pure Python.
    """
    noisy = [list(row) for row in cov]
    for i in range(n):
        noisy[i][i] += sigma2[i]
    private = cholesky_logdet([row[n:] for row in cov[n:]])
    released = cholesky_logdet([row[:n] for row in noisy[:n]])
    joint = cholesky_logdet(noisy)
    if private is None or released is None or joint is None:
        return None
    return 0.5 * (private + released - joint)


def _agree(declared: float, computed: float, what: str) -> None:
    slack = max(LEAKAGE_RELATIVE_SLACK * abs(computed), LEAKAGE_ABSOLUTE_SLACK)
    if not abs(declared - computed) <= slack:
        raise MetricsError(f"declared {what} {declared!r} differs from the recomputed {computed!r}")


def parse_gaussian(params: object, metrics: Mapping[str, float], features: Sequence[str], limits: Limits) -> dict:
    """Validate ``parameters`` and the declared metrics of a gaussian bundle."""
    params = closed_map(params, GAUSSIAN_PARAMETER_KEYS, "parameters")
    n = len(features)
    sigma2 = vector(params["sigma2"], "parameters.sigma2", n, 0.0)
    private = names(params["private"], "parameters.private", 1, MAX_REAL_DIM, limits)
    utility = names(params["utility"], "parameters.utility", 1, MAX_REAL_DIM, limits)
    if n + max(len(private), len(utility)) > MAX_REAL_DIM:
        raise BundleFormatError(f"released plus private (or utility) columns exceed {MAX_REAL_DIM}")
    if len(set(features) | set(private) | set(utility)) != n + len(private) + len(utility):
        raise BundleFormatError("released, private and utility columns must be distinct")
    cov_p = matrix(params["cov_private"], "parameters.cov_private", n + len(private), n + len(private))
    cov_u = matrix(params["cov_utility"], "parameters.cov_utility", n + len(utility), n + len(utility))
    symmetric(cov_p, "parameters.cov_private")
    symmetric(cov_u, "parameters.cov_utility")
    if any(cov_p[i][:n] != cov_u[i][:n] for i in range(n)):
        raise BundleFormatError("cov_private and cov_utility must share cov(X) exactly")
    delta = number(params["delta"], "parameters.delta", 0.0)
    gamma = number(params["gamma"], "parameters.gamma", 0.0)
    measure = params["utility_measure"]
    if type(measure) is not str or measure not in UTILITY_MEASURES:
        raise BundleFormatError(f"parameters.utility_measure must be one of {UTILITY_MEASURES}")
    zero = (0.0,) * n
    leak = gaussian_information(cov_p, sigma2, n)
    before = gaussian_information(cov_p, zero, n)
    u_before = gaussian_information(cov_u, zero, n)
    u_after = gaussian_information(cov_u, sigma2, n)
    if leak is None or before is None or u_before is None or u_after is None:
        raise MetricsError("a bundled covariance is not positive definite")
    leak_bits = leak / math.log(2)
    declared = metrics["leakage_bits"]
    if declared < leak_bits - max(LEAKAGE_RELATIVE_SLACK * abs(leak_bits), LEAKAGE_ABSOLUTE_SLACK):
        raise MetricsError(f"declared leakage_bits {declared!r} is below the model's {leak_bits!r}")
    loss = u_before - u_after
    _agree(metrics["utility_loss_nats"], loss, "utility_loss_nats")
    _agree(metrics["leakage_before_bits"], before / math.log(2), "leakage_before_bits")
    if loss > delta + max(LEAKAGE_RELATIVE_SLACK * delta, LEAKAGE_ABSOLUTE_SLACK):
        raise MetricsError("the utility loss exceeds delta")
    if metrics["delta"] != delta or metrics["gamma"] != gamma:
        raise MetricsError("metrics.delta/gamma differ from the parameters")
    return {"sigma2": sigma2, "sigma": tuple(math.sqrt(s) for s in sigma2), "private": private,
            "utility": utility, "cov_private": cov_p, "cov_utility": cov_u, "delta": delta,
            "gamma": gamma, "utility_measure": measure, "leakage_nats": leak, "utility_loss_nats": loss}


class GaussianBundle(RealBundle):
    """A verified ``gaussian`` bundle.

    A verified ``gaussian`` bundle; ``sanitize(row)`` returns x + N (n floats), the same
    release for the same record for the life of this object (see the module docstring).

    Extra attributes: ``sigma2`` (n floats), ``recomputed_leakage_bits`` (float).
    """

    __slots__ = ("_params", "_memo", "_memo_key")

    _params: dict[str, Any]
    _memo: dict[bytes, tuple[float, ...]]  # keyed by an HMAC of the canonical record under _memo_key
    _memo_key: bytes

    def __init__(self, params: dict[str, Any], **fields: Any) -> None:
        super().__init__(**fields)
        object.__setattr__(self, "_params", params)
        object.__setattr__(self, "_memo", {})
        object.__setattr__(self, "_memo_key", os.urandom(32))

    sigma2 = property(lambda self: self._params["sigma2"])
    recomputed_leakage_bits = property(lambda self: self._params["leakage_nats"] / math.log(2))

    def record(self, row: Sequence[object]) -> bytes:
        """The canonical bytes of a row's record.

        :func:`canonical_record` of ``row`` parsed as this bundle parses it (raises InputError):
        the bytes a persistent device derives its per-record bit source from.
        """
        return canonical_record(parse_real_row(row, len(self.features)))

    def sanitize(self, row: Sequence[object], *, rng: SystemRandomBits | InsecureTestBits | DerivedBits | None = None) -> list:
        """The released row: the record with its noise, memoised.

        Release ``row``: the memoised release if this record was released before, else
        ``x + sigma * z`` with z from the OS CSPRNG (or the test source in ``rng``).

        Raises InputError (bad row), RandomnessError, ReleaseRefusedError (memo full), TypeError
        (an ``rng`` that is not the OS CSPRNG or an InsecureTestBits).
        """
        source = resolve_rng(rng)
        x = parse_real_row(row, len(self.features))
        key = hmac.new(self._memo_key, canonical_record(x), hashlib.sha256).digest()
        released = self._memo.get(key)
        if released is None:
            if len(self._memo) >= MAX_MEMO_RECORDS:
                raise ReleaseRefusedError("this bundle has released its maximum number of records")
            released = add_noise(x, self._params["sigma"], source)
            self._memo[key] = released
        return list(released)


def release(bundle: GaussianBundle, row: Sequence[object], secret: bytes) -> list:
    """The released cells of a row, the same on every ask.

    The released cells for ``row`` on a device with ``secret``, the same on every ask: the
    noise drawn from bits derived from the secret, the bundle's sha256 and the record
    (:func:`privmap.device.randomness.record_bits`). Raises as :meth:`GaussianBundle.sanitize`.
    """
    return bundle.sanitize(row, rng=record_bits(secret, bundle.sha256, bundle.record(row)))


def make(obj: dict, limits: Limits, **fields: Any) -> GaussianBundle:
    """Build a :class:`GaussianBundle` from a header-checked payload ``obj``."""
    columns = tuple(f.name for f in fields["features"])
    params = parse_gaussian(obj["parameters"], fields["metrics"], columns, limits)
    public = {k: v for k, v in params.items() if k != "sigma"}
    return GaussianBundle(params, parameters=MappingProxyType(public),
                          withheld_columns=params["private"] + params["utility"], **fields)
