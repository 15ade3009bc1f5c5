"""Closed-schema validation of a decoded payload (see docs/bundle-format.md).

Exact types throughout: an int field accepts ``int`` only (never ``bool`` or ``float``), a number
field accepts ``int`` or ``float`` (never ``bool``) and must be finite. Unknown and missing keys
are refused. Structural problems raise :class:`BundleFormatError` (:class:`WrongTypeError` for a
foreign ``type``); problems inside ``table`` raise :class:`TableError`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .._errors import BundleFormatError, TableError, WrongTypeError
from ._limits import MAX_ABS_CELL, MAX_VERSION, PAYLOAD_TYPE, SCHEMA_VERSION, Limits
from ..release._lookup import _DECIMAL

__all__ = [
    "Feature",
    "PAYLOAD_KEYS",
    "REQUIRED_METRICS",
    "REQUIRED_PROVENANCE",
    "MECHANISMS",
    "REAL_MECHANISMS",
    "REAL_PAYLOAD_KEYS",
    "METRICS",
    "MISSING_RULES",
    "parse_header",
    "parse_body",
    "payload_keys",
]

#: Top-level payload keys, in canonical (encoding) order. All are required; no others allowed.
PAYLOAD_KEYS = (
    "type", "schema_version", "version", "issued_at", "expires", "device_class", "mechanism", "metric",
    "features", "private", "inputs", "outputs", "table", "prior", "metrics", "provenance",
)
NUMERIC_FEATURE_KEYS = ("name", "kind", "min", "max", "integer", "missing", "fill", "missing_token")
CATEGORICAL_FEATURE_KEYS = ("name", "kind", "values")
PRIVATE_KEYS = ("name", "classes")
TABLE_KEYS = ("bits", "index", "weight")
#: Metrics every bundle declares (more keys are allowed; all values finite numbers).
REQUIRED_METRICS = (
    "leakage_bits", "distortion", "delta", "r", "delta_plus_r", "clusters", "n",
    "perfect_privacy_distortion",
)
#: Provenance entries every bundle declares (more keys are allowed; values str or int).
REQUIRED_PROVENANCE = ("tool_version", "seed", "data_sha256")
MECHANISMS = ("quantized", "exact", "funnel", "max-correlation", "recommender")
#: What a numeric feature does with a missing cell (see docs/bundle-format.md section 4).
MISSING_RULES = ("refuse", "mask", "impute")
#: Longest missing-value token (a CSV spelling such as "NA"; "" = blank only).
MAX_MISSING_TOKEN = 16
#: Real-valued kinds: their payload has its own closed key set, REAL_PAYLOAD_KEYS,
#: and their body is parsed by privmap.device.mechanisms._real_kinds.
REAL_MECHANISMS = ("nullspace", "gaussian")
REAL_PAYLOAD_KEYS = (
    "type", "schema_version", "version", "issued_at", "expires", "device_class", "mechanism", "features",
    "parameters", "metrics", "provenance",
)
METRICS = ("l2", "l1", "hamming", "erasures", "log-loss")
#: Longest device class name (``device_class``: printable ASCII), characters.
MAX_DEVICE_CLASS = 64
#: Tolerance on the prior's total mass.
PRIOR_MASS_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Feature:
    """One column of a row.

    ``kind`` is ``"numeric"`` (``min``/``max`` finite numbers: the declared domain; ``integer``
    says whether cells are whole numbers; ``values`` is empty) or ``"categorical"`` (``values``
    the category strings, a cell is an index into them; ``min``/``max`` are ``None`` and
    ``integer`` is False).

    Missing answers (numeric features only): a cell that is blank or whose text equals
    ``missing_token`` is missing (the token may be a number such as ``"0"``, a survey's code for
    a skipped question, if it lies outside [min, max]; older bundles hold only words such as
    "NA"); ``missing`` says what the lookup does with it: ``"refuse"`` (InputError),
    ``"mask"`` (the cell is left out of the distance) or ``"impute"`` (the cell takes the value
    ``fill``, a point of the domain; ``fill`` is ``None`` for the other two rules).
    """

    name: str
    kind: str
    min: int | float | None = None
    max: int | float | None = None
    integer: bool = False
    values: tuple[str, ...] = ()
    missing: str = "refuse"
    fill: int | float | None = None
    missing_token: str = ""

    @property
    def categorical(self) -> bool:
        return self.kind == "categorical"


def _fail(message: str, error=BundleFormatError):
    raise error(message)


def _is_int(x) -> bool:
    return type(x) is int


def _is_number(x) -> bool:
    t = type(x)
    return t is int or (t is float and math.isfinite(x))


def _closed_map(obj, keys, what):
    if type(obj) is not dict:
        _fail(f"{what} must be a map")
    if set(obj) != set(keys):
        unknown = sorted(set(obj) - set(keys))
        missing = sorted(set(keys) - set(obj))
        _fail(f"{what}: unknown keys {unknown}, missing keys {missing}")
    return obj


def _string(x, what, limits: Limits):
    if type(x) is not str or not x:
        _fail(f"{what} must be a non-empty string")
    return x


def _list(x, what, lo, hi, error=BundleFormatError):
    if type(x) is not list:
        _fail(f"{what} must be an array", error)
    if not lo <= len(x) <= hi:
        _fail(f"{what} must have {lo}..{hi} items, has {len(x)}", error)
    return x


def _unique_strings(x, what, lo, hi, limits):
    items = _list(x, what, lo, hi)
    for i, s in enumerate(items):
        _string(s, f"{what}[{i}]", limits)
    if len(set(items)) != len(items):
        _fail(f"{what} has duplicates")
    return tuple(items)


def parse_header(obj) -> tuple[int, int, int]:
    """Check the envelope of the payload map: type, key set, schema version, version, times,
    device class.

    Returns ``(version, issued_at, expires)``.
    """
    if type(obj) is not dict:
        _fail("payload must be a map")
    kind = obj.get("type")
    if kind != PAYLOAD_TYPE or type(kind) is not str:
        _fail(f"payload type is not {PAYLOAD_TYPE!r}", WrongTypeError)
    _closed_map(obj, payload_keys(obj.get("mechanism")), "payload")
    schema = obj["schema_version"]
    if not _is_int(schema) or schema != SCHEMA_VERSION:
        _fail(f"unsupported schema_version (this runtime reads {SCHEMA_VERSION})")
    version = obj["version"]
    if not _is_int(version) or not 1 <= version <= MAX_VERSION:
        _fail("version must be an int in 1..2**63-1")
    issued_at, expires = obj["issued_at"], obj["expires"]
    if not _is_int(issued_at) or not 0 <= issued_at <= MAX_VERSION:
        _fail("issued_at must be an int (unix seconds) in 0..2**63-1")
    if not _is_int(expires) or not issued_at < expires <= MAX_VERSION:
        _fail("expires must be an int (unix seconds) greater than issued_at")
    device_class = obj["device_class"]
    if (type(device_class) is not str or not 1 <= len(device_class) <= MAX_DEVICE_CLASS
            or not all(" " < ch <= "~" for ch in device_class)):
        _fail(f"device_class must be 1..{MAX_DEVICE_CLASS} printable ASCII characters without spaces")
    return version, issued_at, expires


def _feature(spec, position, limits: Limits) -> Feature:
    what = f"features[{position}]"
    if type(spec) is not dict:
        _fail(f"{what} must be a map")
    kind = spec.get("kind")
    if kind == "numeric":
        _closed_map(spec, NUMERIC_FEATURE_KEYS, what)
        name = _string(spec["name"], f"{what}.name", limits)
        lo, hi, integer = spec["min"], spec["max"], spec["integer"]
        if not (_is_number(lo) and _is_number(hi)) or not -MAX_ABS_CELL <= lo <= hi <= MAX_ABS_CELL:
            _fail(f"{what}: min and max must be numbers with -{MAX_ABS_CELL:g} <= min <= max <= {MAX_ABS_CELL:g}")
        if type(integer) is not bool:
            _fail(f"{what}.integer must be a bool")
        missing, fill, token = spec["missing"], spec["fill"], spec["missing_token"]
        if type(missing) is not str or missing not in MISSING_RULES:
            _fail(f"{what}.missing must be one of {MISSING_RULES}")
        if missing == "impute":
            if not _is_number(fill) or not lo <= fill <= hi or (integer and not _is_int(fill)):
                _fail(f"{what}.fill must be a number in [min, max] (an int for an integer feature)")
        elif fill is not None:
            _fail(f"{what}.fill must be nil unless missing is 'impute'")
        if type(token) is not str or len(token) > MAX_MISSING_TOKEN or token != token.strip():
            _fail(f"{what}.missing_token must be a string of at most {MAX_MISSING_TOKEN} characters, "
                  "without surrounding spaces")
        if token and _DECIMAL.match(token) and lo <= float(token) <= hi:
            # a number may code a skipped answer (surveys' 0), but never one the domain accepts
            _fail(f"{what}.missing_token is a number inside [min, max]: a cell would be both an answer and missing")
        return Feature(name, "numeric", lo, hi, integer, (), missing, fill, token)
    if kind == "categorical":
        _closed_map(spec, CATEGORICAL_FEATURE_KEYS, what)
        name = _string(spec["name"], f"{what}.name", limits)
        values = _unique_strings(spec["values"], f"{what}.values", 1, limits.max_categories, limits)
        return Feature(name, "categorical", None, None, False, values)
    _fail(f"{what}.kind must be 'numeric' or 'categorical'")


def _cells(rows, what, features, lo, hi, allow_nil):
    """Validate a K x d array of cells; returns a tuple of tuples (values as in the bundle)."""
    _list(rows, what, lo, hi)
    d = len(features)
    out = []
    for i, row in enumerate(rows):
        if type(row) is not list or len(row) != d:
            _fail(f"{what}[{i}] must be an array of {d} cells")
        for k, (cell, feature) in enumerate(zip(row, features)):
            if cell is None:
                if allow_nil:
                    continue
                _fail(f"{what}[{i}][{k}]: nil cells are allowed only in outputs with metric 'erasures'")
            if feature.kind == "categorical":
                if not _is_int(cell) or not 0 <= cell < len(feature.values):
                    _fail(f"{what}[{i}][{k}]: categorical cell must be an index into values")
            else:
                if not _is_number(cell) or not feature.min <= cell <= feature.max:
                    _fail(f"{what}[{i}][{k}]: numeric cell must be a finite number in [min, max]")
                if feature.integer and not _is_int(cell):
                    _fail(f"{what}[{i}][{k}]: cell of an integer feature must be an int")
        out.append(tuple(row))
    return tuple(out)


def _table(obj, n_inputs, n_outputs, limits: Limits):
    _closed_map(obj, TABLE_KEYS, "table")
    bits = obj["bits"]
    if not _is_int(bits) or not 1 <= bits <= limits.max_bits:
        _fail(f"table.bits must be an int in 1..{limits.max_bits}", TableError)
    total = 1 << bits
    index, weight = obj["index"], obj["weight"]
    if type(index) is not list or type(weight) is not list:
        _fail("table.index and table.weight must be arrays", TableError)
    if len(index) != n_inputs or len(weight) != n_inputs:
        _fail(f"table must have one row per input ({n_inputs}); "
              f"index has {len(index)}, weight has {len(weight)}", TableError)
    rows_index, rows_weight = [], []
    for c in range(n_inputs):
        idx, w = index[c], weight[c]
        if type(idx) is not list or type(w) is not list or len(idx) != len(w) or not idx:
            _fail(f"table row {c}: index and weight must be non-empty arrays of equal length", TableError)
        previous = -1
        for j in idx:
            if not _is_int(j) or not previous < j < n_outputs:
                _fail(f"table row {c}: output indexes must be strictly increasing ints in "
                      f"0..{n_outputs - 1}", TableError)
            previous = j
        running = 0
        for v in w:
            if not _is_int(v) or not 0 < v <= total:
                _fail(f"table row {c}: weights must be ints in 1..2**{bits}", TableError)
            running += v
        if running != total:
            _fail(f"table row {c}: weights sum to {running}, not 2**{bits}", TableError)
        rows_index.append(tuple(idx))
        rows_weight.append(tuple(w))
    return bits, tuple(rows_index), tuple(rows_weight)


def _prior(obj, n_classes, n_inputs):
    _list(obj, "prior", n_classes, n_classes)
    mass = []
    out = []
    for a, row in enumerate(obj):
        if type(row) is not list or len(row) != n_inputs:
            _fail(f"prior[{a}] must be an array of {n_inputs} numbers")
        for v in row:
            if not _is_number(v) or v < 0:
                _fail(f"prior[{a}] entries must be finite numbers >= 0")
        mass.extend(row)
        out.append(tuple(float(v) for v in row))
    total = math.fsum(mass)
    if not abs(total - 1.0) <= PRIOR_MASS_TOLERANCE:
        _fail(f"prior must sum to 1 (within {PRIOR_MASS_TOLERANCE}), sums to {total!r}")
    return tuple(out)


def _metrics(obj, limits: Limits, required=REQUIRED_METRICS):
    if type(obj) is not dict:
        _fail("metrics must be a map")
    if len(obj) > limits.max_map_entries:
        _fail(f"metrics has more than {limits.max_map_entries} entries")
    for key, value in obj.items():
        if type(key) is not str or not _is_number(value):
            _fail("metrics must map strings to finite numbers")
    missing = [k for k in required if k not in obj]
    if missing:
        _fail(f"metrics: missing {missing}")
    return dict(obj)


def _provenance(obj, limits: Limits):
    if type(obj) is not dict:
        _fail("provenance must be a map")
    if len(obj) > limits.max_map_entries:
        _fail(f"provenance has more than {limits.max_map_entries} entries")
    for key, value in obj.items():
        if type(key) is not str or type(value) not in (str, int):
            _fail("provenance must map strings to strings or ints")
    missing = [k for k in REQUIRED_PROVENANCE if k not in obj]
    if missing:
        _fail(f"provenance: missing {missing}")
    return dict(obj)


def parse_body(obj: dict, limits: Limits) -> dict:
    """Validate every field after the header; returns plain validated values by field name."""
    mechanism, metric = obj["mechanism"], obj["metric"]
    if type(mechanism) is not str or mechanism not in MECHANISMS:
        _fail(f"mechanism must be one of {MECHANISMS}")
    if type(metric) is not str or metric not in METRICS:
        _fail(f"metric must be one of {METRICS}")
    if mechanism in SEED_MECHANISM_METRIC or metric == "log-loss":
        return _parse_seed_mechanism_body(obj, limits)
    specs = _list(obj["features"], "features", 1, limits.max_features)
    features = tuple(_feature(spec, i, limits) for i, spec in enumerate(specs))
    if len({f.name for f in features}) != len(features):
        _fail("feature names must be unique")
    if metric == "erasures" and mechanism != "exact":
        _fail("metric 'erasures' is only allowed with mechanism 'exact'")
    if mechanism == "quantized" and metric in ("l1", "l2") and any(f.categorical for f in features):
        _fail("quantized l1/l2 bundles need numeric features only (use 'hamming' for categories)")
    if mechanism == "recommender" and metric != "l2":
        _fail("a recommender bundle's metric is 'l2' (stars, root mean square over the columns)")
    private = _closed_map(obj["private"], PRIVATE_KEYS, "private")
    private_name = _string(private["name"], "private.name", limits)
    classes = _unique_strings(private["classes"], "private.classes", 1, limits.max_classes, limits)
    inputs = _cells(obj["inputs"], "inputs", features, 1, limits.max_inputs, allow_nil=False)
    outputs = _cells(obj["outputs"], "outputs", features, 1, limits.max_outputs,
                     allow_nil=(metric == "erasures"))
    bits, index, weight = _table(obj["table"], len(inputs), len(outputs), limits)
    prior = _prior(obj["prior"], len(classes), len(inputs))
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
        "metrics": _metrics(obj["metrics"], limits),
        "provenance": _provenance(obj["provenance"], limits),
        "model": obj.get("model"),    # a recommender's, parsed by mechanisms._recommender.parse_model
    }


# -- the funnel (seed 003) and max-correlation (seed 002) mechanisms -----------------
# Both release through the table sampler with an exact tuple lookup. "funnel" has the standard
# key set with metric "log-loss"; "max-correlation" has no private attribute and carries the
# public marginal "p_x" in place of "private" and "prior" (docs/bundle-format.md).

#: The one metric each of these mechanisms accepts.
SEED_MECHANISM_METRIC = {"funnel": "log-loss", "max-correlation": "hamming"}
#: Payload keys of a max-correlation bundle, in canonical order.
MAXCORR_PAYLOAD_KEYS = (
    "type", "schema_version", "version", "issued_at", "expires", "device_class", "mechanism", "metric",
    "features", "inputs", "outputs", "table", "p_x", "metrics", "provenance",
)
#: Metrics each of these mechanisms declares on top of (funnel) or instead of (max-correlation)
#: REQUIRED_METRICS.
SEED_REQUIRED_METRICS = {
    "funnel": REQUIRED_METRICS + ("disclosure_bits",),
    "max-correlation": ("rho_m_squared", "s_star_upper_bound", "s_star_verified", "distortion", "delta",
                        "clusters", "n"),
}


#: Payload keys of a recommender bundle, in canonical order: the quantized keys and ``model``, the
#: fold-in and decode between ratings and the factor space (privmap.device.mechanisms._recommender).
RECOMMENDER_PAYLOAD_KEYS = PAYLOAD_KEYS + ("model",)


def payload_keys(mechanism) -> tuple[str, ...]:
    """The closed top-level key set of a payload of ``mechanism`` (canonical order)."""
    if mechanism in REAL_MECHANISMS:
        return REAL_PAYLOAD_KEYS
    if mechanism == "recommender":
        return RECOMMENDER_PAYLOAD_KEYS
    return MAXCORR_PAYLOAD_KEYS if mechanism == "max-correlation" else PAYLOAD_KEYS


def _parse_seed_mechanism_body(obj: dict, limits: Limits) -> dict:
    mechanism, metric = obj["mechanism"], obj["metric"]
    if SEED_MECHANISM_METRIC.get(mechanism) != metric:
        _fail(f"metric {metric!r} does not fit mechanism {mechanism!r} "
              f"(funnel uses 'log-loss', max-correlation 'hamming')")
    specs = _list(obj["features"], "features", 1, limits.max_features)
    features = tuple(_feature(spec, i, limits) for i, spec in enumerate(specs))
    if len({f.name for f in features}) != len(features):
        _fail("feature names must be unique")
    if not all(f.categorical for f in features):
        _fail(f"{mechanism} bundles need categorical features only")
    inputs = _cells(obj["inputs"], "inputs", features, 1, limits.max_inputs, allow_nil=False)
    outputs = _cells(obj["outputs"], "outputs", features, 1, limits.max_outputs, allow_nil=False)
    bits, index, weight = _table(obj["table"], len(inputs), len(outputs), limits)
    metrics = _metrics(obj["metrics"], limits, SEED_REQUIRED_METRICS[mechanism])
    body = {"mechanism": mechanism, "metric": metric, "features": features, "inputs": inputs,
            "outputs": outputs, "bits": bits, "index": index, "weight": weight, "metrics": metrics,
            "provenance": _provenance(obj["provenance"], limits), "p_x": None}
    if mechanism == "max-correlation":
        from ..mechanisms._maxcorr import parse_p_x
        body.update(private_name=None, classes=(), prior=None, p_x=parse_p_x(obj["p_x"], len(inputs)))
    else:
        private = _closed_map(obj["private"], PRIVATE_KEYS, "private")
        body.update(private_name=_string(private["name"], "private.name", limits),
                    classes=_unique_strings(private["classes"], "private.classes", 1, limits.max_classes, limits))
        body["prior"] = _prior(obj["prior"], len(body["classes"]), len(inputs))
    return body

