"""The table kinds: a released row is the representative of an output sampled from an integer table.

``quantized`` (nearest input representative) and ``exact`` (equal tuple) are parsed here; the
``funnel`` (:mod:`.funnel`), ``max-correlation`` (:mod:`.max_correlation`) and ``recommender``
(:mod:`.recommender`) kinds parse their own bodies with the helpers below and release through
the same :class:`Bundle`. A table row ``c`` gives ``P(output index[c][t] | input c) =
weight[c][t] / 2**bits``; :meth:`Bundle.release_index` looks the row up (:mod:`._lookup`), draws
``bits`` bits and returns the first output whose running weight total exceeds the draw.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NoReturn, Protocol, cast

from ..errors import BundleFormatError, InputError, MetricsError
from ..format import (
    PRIVATE_KEYS,
    Feature,
    Limits,
    array,
    closed_map,
    fail,
    parse_cells,
    parse_feature,
    parse_metrics,
    parse_prior,
    parse_provenance,
    parse_table,
    string,
    unique_strings,
)
from ..randomness import (
    DerivedBits,
    InsecureTestBits,
    SystemRandomBits,
    draw_bits,
    release_bits,
    resolve_rng,
    sample_row,
)
from ._leakage import check_declared_leakage, table_leakage_bits
from ._lookup import canonical, distance_modes, nearest_numpy, nearest_pure, parse_row

__all__ = ["Bundle", "METRICS", "TableRules", "FAST_PATH_MIN_WORK", "parse_body", "parse_categorical_body",
           "check_figures", "recompute", "recompute_leakage_bits", "build", "release_index", "release"]

#: Metrics a table bundle may declare.
METRICS = ("l2", "l1", "hamming", "erasures", "log-loss")
#: The numpy fast path is tried (when numpy is importable) once K_in * d reaches this.
FAST_PATH_MIN_WORK = 20000


@dataclass(frozen=True)
class TableRules:
    """What a table kind asks of its rows and its metric.

    Given by the kind (the kinds' registry, :mod:`._registry`) so that the parse below names no
    mechanism.

    Parameters
    ----------
    erasures : bool
        Its table's metric may be ``"erasures"`` (exact).
    numeric_distances : bool
        ``l1`` and ``l2`` measure numbers: under them every feature is numeric (quantized).
    model : bool
        The table lives in a model's space, a ``model`` map taking rows there and back
        (:mod:`.recommender`, :mod:`.ranking`): its metric is ``l2`` over that space.
    """

    erasures: bool = False
    numeric_distances: bool = False
    model: bool = False


#: The quantized kind's rules: nearest representative, numeric features under l1 and l2.
QUANTIZED_RULES = TableRules(numeric_distances=True)
#: The exact kind's rules: erasures allowed.
EXACT_RULES = TableRules(erasures=True)
#: The model kinds' rules (recommender, ranking): nearest point of the model's space, l2.
MODEL_RULES = TableRules(model=True)


class FoldIn(Protocol):
    """What a table bundle asks of a model between a row and its table.

    The model is a recommender's :class:`~privmap.device.kinds.recommender.FactorModel` or a
    ranking bundle's :class:`~privmap.device.kinds.ranking.ScoreModel`.
    """

    columns: tuple[Feature, ...]

    def point(self, cells: Sequence[float | None]) -> tuple[float, ...]:
        """The point of the bundle's space a parsed row folds into.

        The row holds one cell per column; the point is finite, found in a time that does not
        depend on the cells. Raises :class:`InputError` for a row it cannot fold in (that row
        alone is refused).
        """

    def ratings(self, z: Sequence[float]) -> list[float]:
        """The released cells of a point ``z`` of the bundle's space (an output).

        Finite for every such point, as the model's parser guarantees; predicted ratings inside
        the columns' domain, or scores (a ranking bundle's, whose bound is its basis times a unit
        point). Called on every release (:meth:`Bundle.representative` caches nothing).
        """


class Bundle:
    """A verified, validated table bundle. Built only by :func:`privmap.device.load_bundle`; read-only.

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
        predicted ratings of the sampled output (:mod:`privmap.device.kinds.recommender`).
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
        "_modes", "_canonical_inputs", "_exact", "_array",
    )

    version: int
    issued_at: int
    expires: int
    device_class: str
    mechanism: str
    metric: str
    features: tuple[Feature, ...]
    private_name: str | None
    classes: tuple[str, ...]
    inputs: tuple[tuple[float | None, ...], ...]
    outputs: tuple[tuple[float | None, ...], ...]
    bits: int
    index: tuple[tuple[int, ...], ...]
    weight: tuple[tuple[int, ...], ...]
    prior: tuple[tuple[float, ...], ...] | None
    metrics: Mapping[str, float]
    provenance: Mapping[str, str | int]
    sha256: str
    key_id: str
    data: bytes
    p_x: tuple[float, ...] | None
    model: FoldIn | None
    space: tuple[Feature, ...]
    _modes: tuple[int, ...]  # per cell of the space, how the lookup measures it
    _canonical_inputs: tuple[tuple[Any, ...], ...]
    _exact: dict[tuple[Any, ...], int] | None  # an exact-lookup mechanism's input tuple -> index
    _array: Any  # the inputs as a numpy array once built, False where numpy cannot be imported

    def __init__(self, *, _token: object = None, exact_lookup: bool = False, **fields: Any) -> None:
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
        if exact_lookup:
            exact = {}
            for c, rep in enumerate(reps):
                if rep in exact:
                    raise BundleFormatError("exact mechanism: input tuples must be distinct")
                exact[rep] = c
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_array", None)

    @property
    def withheld_columns(self) -> tuple[str, ...]:
        """Input columns a row may carry that are never released.

        The private attribute; none for a max-correlation bundle, which is designed without one.
        """
        return () if self.private_name is None else (self.private_name,)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        """Refused: a Bundle is read-only."""
        raise AttributeError("Bundle is read-only")

    def __delattr__(self, name: str) -> NoReturn:
        """Refused: a Bundle is read-only."""
        raise AttributeError("Bundle is read-only")

    def __repr__(self) -> str:
        """The bundle's version, mechanism, metric, sizes and sha256 prefix."""
        return (f"<Bundle version={self.version} mechanism={self.mechanism} metric={self.metric} "
                f"K_in={len(self.inputs)} K_out={len(self.outputs)} sha256={self.sha256[:16]}>")

    # -- lookups ------------------------------------------------------------------------------

    def lookup(self, row: Sequence[object]) -> int:
        """Input index of a row.

        Input index (0..K_in-1) of ``row``: nearest representative (quantized; ties to the
        lowest index) or the equal tuple (exact). Raises :class:`InputError`.
        """
        x = parse_row(row, self.features)
        if self.model is not None:
            x = tuple(f.clip(v) for v, f in zip(self.model.point(x), self.space))
        if self._exact is not None:
            c = self._exact.get(x)
            if c is None:
                raise InputError("row is not one of the bundle's input tuples (exact mechanism)")
            return c
        return self._nearest(x)

    def _nearest(self, x: Sequence[float | None]) -> int:
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

    def release_index(self, row: Sequence[object], *,
                      rng: SystemRandomBits | InsecureTestBits | DerivedBits | None = None) -> int:
        """Sampled output index for a row.

        Sampled output index (0..K_out-1) for ``row``: looks up its input c, draws B bits from
        the OS CSPRNG (or the test source in ``rng``), returns the first output of row c whose
        running weight total exceeds the draw. Raises InputError, RandomnessError, TypeError.
        """
        source = resolve_rng(rng)
        c = self.lookup(row)
        r = draw_bits(source, self.bits)
        return sample_row(self.index[c], self.weight[c], r)

    def representative(self, j: int) -> list:
        """Released cells of an output.

        Released cells of output ``j``: numbers for numeric features (int for integer ones),
        category strings for categorical ones, ``None`` for erased cells.

        Decoded on every call, a model's output too (:meth:`FoldIn.ratings`, m cells from a
        point of the space): nothing is cached, so the memory a bundle holds does not grow with
        the rows it releases.
        """
        if type(j) is not int or not 0 <= j < len(self.outputs):
            raise IndexError("output index out of range")
        return self._decode(self.outputs[j])

    def _decode(self, row: Sequence[float | None]) -> list:
        if self.model is not None:
            return self.model.ratings(cast("Sequence[float]", row))  # a model's points erase no cell
        cells: list[str | int | float | None] = []
        for cell, feature in zip(row, self.features):
            if cell is None:
                cells.append(None)
            elif feature.kind == "categorical":
                cells.append(feature.values[cast(int, cell)])  # a category's index
            elif feature.integer:
                cells.append(int(cell))
            else:
                cells.append(float(cell))
        return cells

    def input_row(self, c: int) -> list:
        """Cells of an input representative, as a row gives them.

        Cells of input representative ``c`` as a row would give them: numbers for numeric
        features (int for integer ones) and category strings for categorical ones.
        """
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

    def sanitize(self, row: Sequence[object], *, rng: SystemRandomBits | InsecureTestBits | DerivedBits | None = None) -> list:
        """The released row for ``row``: the representative of a sampled output (list of d cells).

        The raw row never leaves this method. On any error (InputError, RandomnessError) nothing
        is released.
        """
        return self.representative(self.release_index(row, rng=rng))


_CONSTRUCT = object()


def release_index(bundle: Bundle, row: Sequence[object], secret: bytes) -> int:
    """The output index a device releases for a row, the same on every ask.

    ``row``'s input c, then ``bundle.bits`` bits derived from ``secret``, the table ``bundle``'s
    sha256 and c (:func:`privmap.device.randomness.release_bits`) drawn through row c of the
    table. Raises TypeError (not a table bundle) or :class:`InputError` (a row it refuses).
    """
    if not isinstance(bundle, Bundle):
        raise TypeError("bundle must be a privmap.device.Bundle")
    c = bundle.lookup(row)
    return sample_row(bundle.index[c], bundle.weight[c], draw_bits(release_bits(secret, bundle.sha256, c), bundle.bits))


def release(bundle: Bundle, row: Sequence[object], secret: bytes) -> list:
    """The released cells for ``row``: the representative of :func:`release_index`."""
    return bundle.representative(release_index(bundle, row, secret))


def build(body: dict, *, exact_lookup: bool, **facts: Any) -> Bundle:
    """The bundle of a parsed table body.

    The :class:`Bundle` of a parsed table ``body`` (from a kind's ``parse_body``) and the
    envelope ``facts`` (version, issued_at, expires, device_class, sha256, key_id, data);
    ``exact_lookup``: its kind matches a row to the equal input tuple, not the nearest.
    Raises BundleFormatError for repeated input tuples of an exact-lookup mechanism.
    """
    return Bundle(
        _token=_CONSTRUCT,
        version=facts["version"],
        issued_at=facts["issued_at"],
        device_class=facts["device_class"],
        expires=facts["expires"],
        exact_lookup=exact_lookup,
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
        sha256=facts["sha256"],
        key_id=facts["key_id"],
        data=facts["data"],
    )


def recompute_leakage_bits(bundle: Bundle) -> float:
    """I(A; C_hat) in bits of ``bundle``'s integer table on its bundled prior (pure Python).

    Raises
    ------
    TypeError
        ``bundle`` has no prior (a max-correlation bundle, designed without a private attribute).
    """
    if bundle.prior is None:
        raise TypeError(f"a {bundle.mechanism} bundle has no prior to recompute a leakage on")
    return table_leakage_bits(bundle.prior, bundle.index, bundle.weight, bundle.bits)


def check_figures(body: dict) -> None:
    """The check of a table body's declared leakage.

    Recompute the leakage a parsed body's table gives on its prior and raise
    :class:`MetricsError` if the declared ``leakage_bits`` is below it (the figures of the
    quantized, exact and recommender kinds).
    """
    try:
        computed = table_leakage_bits(body["prior"], body["index"], body["weight"], body["bits"])
    except (ValueError, ArithmeticError):
        raise MetricsError("cannot recompute the leakage from the prior and table") from None
    check_declared_leakage(body["metrics"]["leakage_bits"], computed)


def recompute(check: Callable[[dict], object], body: dict) -> None:
    """A kind's own recomputation of its declared figures.

    Run a kind's own recomputation ``check(body)``; a body it cannot compute on (ValueError,
    ArithmeticError) raises :class:`MetricsError` naming the mechanism.
    """
    try:
        check(body)
    except (ValueError, ArithmeticError):
        raise MetricsError(f"cannot recompute the {body['mechanism']} bundle's declared figures") from None


def _misfit(mechanism: object, metric: object) -> NoReturn:
    fail(f"metric {metric!r} does not fit mechanism {mechanism!r} "
         f"(funnel uses 'log-loss', max-correlation 'hamming')")


def _features(obj: dict, limits: Limits) -> tuple:
    specs = array(obj["features"], "features", 1, limits.max_features)
    features = tuple(parse_feature(spec, i, limits) for i, spec in enumerate(specs))
    if len({f.name for f in features}) != len(features):
        fail("feature names must be unique")
    return features


def parse_body(obj: dict, limits: Limits, rules: TableRules) -> dict:
    """The validated fields of a quantized or exact payload after the header.

    Validate every field of a quantized or exact payload after the header (the recommender
    and ranking kinds' too, before their ``model``) under the kind's ``rules``; returns plain
    validated values by field name. The caller has checked ``mechanism`` and that ``metric`` is
    one of :data:`METRICS`. Raises BundleFormatError or TableError.
    """
    mechanism, metric = obj["mechanism"], obj["metric"]
    if metric == "log-loss":
        _misfit(mechanism, metric)
    features = _features(obj, limits)
    if metric == "erasures" and not rules.erasures:
        fail("metric 'erasures' is only allowed with mechanism 'exact'")
    if rules.numeric_distances and metric in ("l1", "l2") and any(f.categorical for f in features):
        fail("quantized l1/l2 bundles need numeric features only (use 'hamming' for categories)")
    if rules.model and metric != "l2":
        fail(f"a {mechanism} bundle's metric is 'l2' (over its model's space)")
    private = closed_map(obj["private"], PRIVATE_KEYS, "private")
    private_name = string(private["name"], "private.name", limits)
    classes = unique_strings(private["classes"], "private.classes", 1, limits.max_classes, limits)
    inputs = parse_cells(obj["inputs"], "inputs", features, 1, limits.max_inputs, allow_nil=False)
    outputs = parse_cells(obj["outputs"], "outputs", features, 1, limits.max_outputs,
                          allow_nil=(metric == "erasures"))
    bits, index, weight = parse_table(obj["table"], len(inputs), len(outputs), limits)
    prior = parse_prior(obj["prior"], len(classes), len(inputs))
    return {
        "mechanism": mechanism,
        "metric": metric,
        "features": features,
        "private_name": private_name,
        "classes": classes,
        "inputs": inputs,
        "outputs": outputs,
        "bits": bits,
        "index": index,
        "weight": weight,
        "prior": prior,
        "metrics": parse_metrics(obj["metrics"], limits),
        "provenance": parse_provenance(obj["provenance"], limits),
        "model": obj.get("model"),    # a recommender's, parsed by privmap.device.kinds.recommender
    }


def parse_categorical_body(obj: dict, limits: Limits, required_metrics: tuple, accepted_metric: str) -> dict:
    """The fields the funnel and max-correlation kinds share.

    The one metric the kind accepts (``accepted_metric``: the funnel's ``log-loss``,
    max-correlation's ``hamming``), categorical features looked up by their equal tuple,
    inputs, outputs, the table, ``metrics`` holding ``required_metrics`` and ``provenance``.
    The kind adds its private attribute and prior, or its ``p_x``. Raises BundleFormatError or
    TableError.
    """
    mechanism, metric = obj["mechanism"], obj["metric"]
    if metric != accepted_metric:
        _misfit(mechanism, metric)
    features = _features(obj, limits)
    if not all(f.categorical for f in features):
        fail(f"{mechanism} bundles need categorical features only")
    inputs = parse_cells(obj["inputs"], "inputs", features, 1, limits.max_inputs, allow_nil=False)
    outputs = parse_cells(obj["outputs"], "outputs", features, 1, limits.max_outputs, allow_nil=False)
    bits, index, weight = parse_table(obj["table"], len(inputs), len(outputs), limits)
    metrics = parse_metrics(obj["metrics"], limits, required_metrics)
    return {"mechanism": mechanism, "metric": metric, "features": features, "inputs": inputs,
            "outputs": outputs, "bits": bits, "index": index, "weight": weight, "metrics": metrics,
            "provenance": parse_provenance(obj["provenance"], limits), "p_x": None}
