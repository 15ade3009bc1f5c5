"""Loading a signed bundle and releasing sanitized rows from it."""
from __future__ import annotations

import hashlib
import math
import os
import time
from types import MappingProxyType

from ._codec import decode_envelope, decode_payload
from ..trust._envelope import verify_envelope
from .._errors import (
    BundleError,
    BundleFormatError,
    BundleTooLargeError,
    ExpiredBundleError,
    FutureBundleError,
    InputError,
    MetricsError,
    PolicyError,
    RollbackError,
)
from ..trust._keyring import Keyring
from ._leakage import LEAKAGE_ABSOLUTE_SLACK, LEAKAGE_RELATIVE_SLACK, table_leakage_bits
from ._limits import Limits
from ..release._lookup import canonical, distance_modes, nearest_numpy, nearest_pure, parse_row
from ._prescan import prescan
from ..release._sampler import draw_bits, resolve_rng, sample_row
from ._schema import REAL_MECHANISMS, parse_body, parse_header

__all__ = ["Bundle", "load_bundle", "read_bundle_file", "recompute_leakage_bits", "check_declared_leakage",
           "check_declared_metrics", "MAX_CLOCK_SKEW"]

_DEFAULT_LIMITS = Limits()
#: Mechanisms whose device lookup is an exact tuple match (the others: nearest representative).
EXACT_LOOKUP_MECHANISMS = ("exact", "funnel", "max-correlation")
#: How far, in seconds, a bundle's ``issued_at`` may be ahead of the clock (1 day): clocks of
#: builder and device disagree by minutes, not days, so a bundle dated later was mis-built or is
#: meant to be held back; it is refused (:class:`FutureBundleError`).
MAX_CLOCK_SKEW = 86400
#: The numpy fast path is tried (when numpy is importable) once K_in * d reaches this.
FAST_PATH_MIN_WORK = 20000


class Bundle:
    """A verified, validated bundle. Built only by :func:`load_bundle`; read-only.

    Attributes (all read-only)
    --------------------------
    version, issued_at, expires : int
        Bundle version (1..2**63-1) and validity window (unix seconds).
    device_class : str
        The device class the bundle is built for (checked against a device's ``Binding``).
    mechanism : str
        ``"quantized"`` (nearest input representative), or ``"exact"``, ``"funnel"``,
        ``"max-correlation"`` (exact tuple match).
    metric : str
        ``"l2"``, ``"l1"``, ``"hamming"`` or ``"erasures"``.
    features : tuple[Feature, ...]
        The d features, in cell order.
    private_name : str; classes : tuple[str, ...]
        The private attribute and its |A| classes.
    inputs : tuple of K_in tuples of d cells; outputs : tuple of K_out tuples of d cells
        Cells as stored in the bundle: numbers for numeric features, category indexes for
        categorical ones, ``None`` for erased output cells.
    bits : int
        B: every table row's weights sum to 2**B.
    index, weight : tuple of K_in tuples of int
        Sparse table rows: ``P(output index[c][t] | input c) = weight[c][t] / 2**B``.
    prior : tuple of |A| tuples of K_in floats
        p(a, c), from which anyone can recompute the declared leakage (``None`` for
        ``"max-correlation"``, which has no private attribute: ``private_name`` is ``None`` and
        ``classes`` empty).
    p_x : tuple of K_in floats or None
        The public marginal P_X of a ``"max-correlation"`` bundle (``None`` otherwise).
    model : FactorModel or None
        A ``"recommender"`` bundle's fold-in and decode (``None`` for every other mechanism):
        ``features`` are then its rating columns, a row is folded into a point of the factor
        space ``space`` where ``inputs`` and ``outputs`` live, and a released row holds the
        predicted ratings of the sampled output (:mod:`privmap.device.mechanisms._recommender`).
    space : tuple[Feature, ...]
        The features of ``inputs`` and ``outputs``: ``features`` itself, except for a
        recommender bundle (its factor coordinates).
    metrics : mapping str -> number; provenance : mapping str -> str | int
    sha256 : str
        Hex sha256 of the whole bundle bytes (envelope included); ``data`` holds those bytes.
    key_id : str
        Hex key id (sha256 of the raw public key) of the trusted key that signed it.
    """

    __slots__ = (
        "version", "issued_at", "expires", "device_class", "mechanism", "metric", "features", "private_name",
        "classes", "inputs", "outputs", "bits", "index", "weight", "prior", "metrics",
        "provenance", "sha256", "key_id", "data", "p_x", "model", "space",
        "_modes", "_canonical_inputs", "_exact", "_array", "_rows",
    )

    def __init__(self, *, _token=None, **fields):
        if _token is not _CONSTRUCT:
            raise TypeError("Bundle objects are created by load_bundle()")
        for name, value in fields.items():
            object.__setattr__(self, name, value)
        model = fields.get("model")
        features = fields["features"] if model is None else fields["space"]
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "space", features)
        object.__setattr__(self, "_modes", distance_modes(features, fields["metric"]))
        reps = tuple(canonical(row, features) for row in fields["inputs"])
        object.__setattr__(self, "_canonical_inputs", reps)
        exact = None
        if fields["mechanism"] in EXACT_LOOKUP_MECHANISMS:
            exact = {}
            for c, rep in enumerate(reps):
                if rep in exact:
                    raise BundleFormatError("exact mechanism: input tuples must be distinct")
                exact[rep] = c
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_array", None)
        object.__setattr__(self, "_rows", {})        # a recommender output's decoded row, once computed

    @property
    def withheld_columns(self) -> tuple[str, ...]:
        """Input columns a row may carry that are never released: the private attribute (none for
        a max-correlation bundle, which is designed without one)."""
        return () if self.private_name is None else (self.private_name,)

    def __setattr__(self, name, value):
        raise AttributeError("Bundle is read-only")

    def __delattr__(self, name):
        raise AttributeError("Bundle is read-only")

    def __repr__(self) -> str:
        return (f"<Bundle version={self.version} mechanism={self.mechanism} metric={self.metric} "
                f"K_in={len(self.inputs)} K_out={len(self.outputs)} sha256={self.sha256[:16]}>")

    # -- lookups ------------------------------------------------------------------------------

    def lookup(self, row) -> int:
        """Input index (0..K_in-1) of ``row``: nearest representative (quantized; ties to the
        lowest index) or the equal tuple (exact). Raises :class:`InputError`."""
        x = parse_row(row, self.features)
        if self.model is not None:
            x = tuple(min(max(v, f.min), f.max) for v, f in zip(self.model.point(x), self.space))
        if self._exact is not None:
            c = self._exact.get(x)
            if c is None:
                raise InputError("row is not one of the bundle's input tuples (exact mechanism)")
            return c
        return self._nearest(x)

    def _nearest(self, x) -> int:
        reps = self._canonical_inputs
        if len(reps) * len(x) >= FAST_PATH_MIN_WORK:
            array = self._array
            if array is None:
                try:
                    import numpy  # fast path
                except ImportError:
                    array = False
                else:
                    array = numpy.array(reps, dtype=numpy.float64).reshape(len(reps), len(x))
                object.__setattr__(self, "_array", array)
            if array is not False:
                return nearest_numpy(array, self._modes, x)
        return nearest_pure(reps, self._modes, x)

    def release_index(self, row, *, rng=None) -> int:
        """Sampled output index (0..K_out-1) for ``row``: looks up its input c, draws B bits from
        the OS CSPRNG (or the test source in ``rng``), returns the first output of row c whose
        running weight total exceeds the draw. Raises InputError, RandomnessError, TypeError."""
        source = resolve_rng(rng)
        c = self.lookup(row)
        r = draw_bits(source, self.bits)
        return sample_row(self.index[c], self.weight[c], r)

    def representative(self, j: int) -> list:
        """Released cells of output ``j``: numbers for numeric features (int for integer ones),
        category strings for categorical ones, ``None`` for erased cells."""
        if type(j) is not int or not 0 <= j < len(self.outputs):
            raise IndexError("output index out of range")
        if self.model is None:
            return self._decode(self.outputs[j])
        row = self._rows.get(j)
        if row is None:                  # m predicted ratings: computed once per output, then copied
            row = self._rows[j] = tuple(self._decode(self.outputs[j]))
        return list(row)

    def _decode(self, row) -> list:
        if self.model is not None:
            return self.model.ratings(row)
        cells = []
        for cell, feature in zip(row, self.features):
            if cell is None:
                cells.append(None)
            elif feature.kind == "categorical":
                cells.append(feature.values[cell])
            elif feature.integer:
                cells.append(int(cell))
            else:
                cells.append(float(cell))
        return cells

    def input_row(self, c: int) -> list:
        """Cells of input representative ``c`` as a row would give them: numbers for numeric
        features (int for integer ones) and category strings for categorical ones."""
        if type(c) is not int or not 0 <= c < len(self.inputs):
            raise IndexError("input index out of range")
        return self._decode(self.inputs[c])

    @property
    def input_cells(self) -> tuple:
        """All K_in input representatives decoded as by :meth:`input_row` (tuple of tuples)."""
        return tuple(tuple(self._decode(row)) for row in self.inputs)

    @property
    def output_cells(self) -> tuple:
        """All K_out released representatives decoded as by :meth:`representative`."""
        return tuple(tuple(self._decode(row)) for row in self.outputs)

    def sanitize(self, row, *, rng=None) -> list:
        """The released row for ``row``: the representative of a sampled output (list of d cells).

        The raw row never leaves this method. On any error (InputError, RandomnessError) nothing
        is released.
        """
        return self.representative(self.release_index(row, rng=rng))


_CONSTRUCT = object()


def recompute_leakage_bits(bundle: Bundle) -> float:
    """I(A; C_hat) in bits of ``bundle``'s integer table on its bundled prior (pure Python)."""
    return table_leakage_bits(bundle.prior, bundle.index, bundle.weight, bundle.bits)


def check_declared_leakage(declared: float, computed: float) -> None:
    """Raise :class:`MetricsError` if ``declared`` is below ``computed`` beyond round-off slack."""
    slack = max(LEAKAGE_RELATIVE_SLACK * abs(computed), LEAKAGE_ABSOLUTE_SLACK)
    if declared < computed - slack:
        raise MetricsError(
            f"declared leakage_bits {declared!r} is below the table's leakage {computed!r}")


def _now(now) -> float:
    if now is None:
        return time.time()
    if type(now) not in (int, float) or not math.isfinite(now):
        raise TypeError("now must be None or a finite number of unix seconds")
    return now


def load_bundle(data, keyring: Keyring, *, now=None, min_version: int = 1,
                limits: Limits = _DEFAULT_LIMITS, max_skew: int | None = MAX_CLOCK_SKEW) -> Bundle:
    """Verify and load a bundle from its bytes.

    Parameters
    ----------
    data : bytes-like
        The whole bundle file (envelope). Copied once; everything is parsed from that copy.
    keyring : Keyring
        The pinned trusted keys. The envelope's key id only selects one of them.
    now : int | float | None
        Current time in unix seconds (read once); ``None`` reads the system clock.
    min_version : int
        Smallest acceptable bundle ``version`` (for example the installed bundle's version).
    limits : Limits
        Resource limits.
    max_skew : int | None
        Seconds ``issued_at`` may be ahead of ``now`` (default :data:`MAX_CLOCK_SKEW`); ``None``
        skips that check, for a caller that makes it against a clock it trusts more
        (:class:`~privmap.device.DeviceState` knows when the clock is wrong).

    Checks, in order: size (BundleTooLargeError); envelope msgpack and shape, format version
    (BundleFormatError); algorithm, key ids, signature lengths, Ed25519 signatures by at least
    ``keyring.threshold`` distinct pinned keys over the format's domain tag + payload
    (BundleSignatureError; see ``_envelope.py``) -- all before the payload is decoded; work caps
    from the payload's msgpack headers (WorkLimitError); payload msgpack with limits, no trailing bytes or duplicate keys, closed schema with exact types
    (BundleFormatError, WrongTypeError); version >= min_version (RollbackError); expires > now
    (ExpiredBundleError); issued_at <= now + max_skew (FutureBundleError); cells, table
    (TableError), prior, metrics and provenance; declared
    leakage not below the table's (MetricsError) and not above ``limits.max_leakage_bits``
    (PolicyError). Returns the :class:`Bundle` only if all pass.
    Mechanisms ``nullspace`` and ``gaussian`` pass the same envelope, signature and
    header checks, then their own closed body checks, and return a
    :class:`~privmap.device.NullspaceBundle` or :class:`~privmap.device.GaussianBundle`.
    """
    if not isinstance(keyring, Keyring):
        raise TypeError("keyring must be a privmap.device.Keyring")
    if not isinstance(limits, Limits):
        raise TypeError("limits must be a privmap.device.Limits")
    if type(min_version) is not int or min_version < 1:
        raise ValueError("min_version must be an int >= 1")
    if max_skew is not None and (type(max_skew) is not int or max_skew < 0):
        raise ValueError("max_skew must be None or an int >= 0 (seconds)")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("data must be bytes")
    clock = _now(now)
    if isinstance(data, memoryview):
        if data.nbytes > limits.max_bundle_bytes:
            raise BundleTooLargeError(f"bundle is larger than {limits.max_bundle_bytes} bytes")
    elif len(data) > limits.max_bundle_bytes:
        raise BundleTooLargeError(f"bundle is larger than {limits.max_bundle_bytes} bytes")
    data = bytes(data)  # one immutable copy: what is verified is what is parsed
    if not data:
        raise BundleFormatError("empty bundle")

    envelope = decode_envelope(data, limits)
    payload, signers = verify_envelope(envelope, keyring)

    prescan(payload, limits)  # work caps from the msgpack headers, before anything is built
    obj = decode_payload(payload, limits)
    version, issued_at, expires = parse_header(obj)
    if version < min_version:
        raise RollbackError(f"bundle version {version} is below the minimum {min_version}")
    if expires <= clock:
        raise ExpiredBundleError("bundle has expired")
    if max_skew is not None and issued_at > clock + max_skew:
        raise FutureBundleError(f"bundle issued_at {issued_at} is more than {max_skew} s after the clock "
                                f"({int(clock)}): the clock or the bundle's issue date is wrong")
    if obj["mechanism"] in REAL_MECHANISMS:  # nullspace / gaussian release paths
        from ..mechanisms._real_kinds import load_real_body
        real = load_real_body(obj, limits, version=version, issued_at=issued_at, expires=expires,
                              device_class=obj["device_class"],
                              sha256=hashlib.sha256(data).hexdigest(), key_id=signers[0].hex(), data=data)
        _check_policy(real.metrics, limits)
        return real
    body = parse_table_body(obj, limits)
    bundle = Bundle(
        _token=_CONSTRUCT,
        version=version,
        issued_at=issued_at,
        device_class=obj["device_class"],
        expires=expires,
        mechanism=body["mechanism"],
        metric=body["metric"],
        features=body["features"] if body.get("model") is None else body["model"].columns,
        space=body["features"],
        model=body.get("model"),
        private_name=body["private_name"],
        classes=body["classes"],
        inputs=body["inputs"],
        outputs=body["outputs"],
        bits=body["bits"],
        index=body["index"],
        weight=body["weight"],
        prior=body["prior"],
        p_x=body.get("p_x"),
        metrics=MappingProxyType(body["metrics"]),
        provenance=MappingProxyType(body["provenance"]),
        sha256=hashlib.sha256(data).hexdigest(),
        key_id=signers[0].hex(),
        data=data,
    )
    check_declared_metrics(body)
    _check_policy(bundle.metrics, limits)
    return bundle


def parse_table_body(obj: dict, limits: Limits) -> dict:
    """:func:`._schema.parse_body`, and a recommender bundle's ``model`` parsed against its factor
    features (:func:`privmap.device.mechanisms._recommender.parse_model`). Raises BundleFormatError."""
    body = parse_body(obj, limits)
    if body["mechanism"] == "recommender":
        from ..mechanisms._recommender import parse_model
        body["model"] = parse_model(body["model"], body["features"], limits)
    return body


def check_declared_metrics(body: dict) -> None:
    """Recompute what a parsed body declares and raise :class:`MetricsError` (or TableError) if
    it disagrees: the leakage on the prior for every mechanism that has one, and the
    mechanism's own figures for ``"funnel"`` (disclosure) and ``"max-correlation"`` (rho_m^2,
    S* bound, distortion; it has no prior)."""
    try:
        if body["mechanism"] == "funnel":
            from ..mechanisms._funnel import check_funnel
            check_funnel(body)
        elif body["mechanism"] == "max-correlation":
            from ..mechanisms._maxcorr import check_max_correlation
            check_max_correlation(body)
    except (ValueError, ArithmeticError):
        raise MetricsError(f"cannot recompute the {body['mechanism']} bundle's declared figures") from None
    if body["prior"] is not None:
        try:
            computed = table_leakage_bits(body["prior"], body["index"], body["weight"], body["bits"])
        except (ValueError, ArithmeticError):
            raise MetricsError("cannot recompute the leakage from the prior and table") from None
        check_declared_leakage(body["metrics"]["leakage_bits"], computed)


def _check_policy(metrics, limits: Limits) -> None:
    """Raise :class:`PolicyError` if the declared leakage (bits) is above the device's policy
    maximum ``limits.max_leakage_bits`` (kinds that declare no leakage pass)."""
    declared = metrics.get("leakage_bits")
    if declared is not None and declared > limits.max_leakage_bits:
        raise PolicyError(f"declared leakage {declared!r} bits is above this "
                          f"device's policy maximum {limits.max_leakage_bits!r}")


def read_bundle_file(path, keyring: Keyring, *, now=None, min_version: int = 1,
                     limits: Limits = _DEFAULT_LIMITS, max_skew: int | None = MAX_CLOCK_SKEW) -> Bundle:
    """Read a bundle file once (at most ``limits.max_bundle_bytes + 1`` bytes) and load it.

    The bytes read are the bytes verified and parsed (a file swapped afterwards changes nothing).
    Raises :class:`BundleTooLargeError` for a larger file or endless stream, :class:`BundleError`
    if the file cannot be read, and whatever :func:`load_bundle` raises.
    """
    if not isinstance(limits, Limits):
        raise TypeError("limits must be a privmap.device.Limits")
    try:
        with open(path, "rb") as handle:
            data = handle.read(limits.max_bundle_bytes + 1)
    except OSError as exc:
        raise BundleError(f"cannot read bundle file {os.fspath(path)!r}: {exc.strerror}") from None
    if len(data) > limits.max_bundle_bytes:
        raise BundleTooLargeError(f"bundle file is larger than {limits.max_bundle_bytes} bytes")
    return load_bundle(data, keyring, now=now, min_version=min_version, limits=limits, max_skew=max_skew)
