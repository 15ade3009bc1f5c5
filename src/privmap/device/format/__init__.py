"""The wire format: resource limits, the pre-scan, strict msgpack decoding, the schema's fields.

The layer above the errors and constants: it knows what the bytes of a bundle may be, not whom
they come from (:mod:`privmap.device.trust`) nor what a kind does with them
(:mod:`privmap.device.kinds`). Private modules: ``_limits`` (:class:`Limits`), ``_prescan`` (a
header-only walk of the payload bytes before decoding), ``_codec`` (strict msgpack decoding),
``_schema`` (the header check and the field validators every kind's body is parsed with).
"""
from __future__ import annotations

from ._codec import decode_envelope, decode_payload, unpack
from ._limits import Limits
from ._prescan import prescan
from ._schema import (
    CATEGORICAL_FEATURE_KEYS,
    DECIMAL,
    NUMERIC_FEATURE_KEYS,
    PRIVATE_KEYS,
    TABLE_KEYS,
    Feature,
    array,
    closed_map,
    fail,
    parse_cells,
    parse_feature,
    parse_header,
    parse_metrics,
    parse_prior,
    parse_provenance,
    parse_table,
    payload_keys,
    string,
    unique_strings,
)

__all__ = [
    "Limits", "prescan", "decode_envelope", "decode_payload", "unpack", "Feature", "parse_header", "payload_keys",
    "DECIMAL", "NUMERIC_FEATURE_KEYS", "CATEGORICAL_FEATURE_KEYS", "PRIVATE_KEYS", "TABLE_KEYS",
    "fail", "closed_map", "string", "array", "unique_strings", "parse_feature", "parse_cells", "parse_table",
    "parse_prior", "parse_metrics", "parse_provenance"]
