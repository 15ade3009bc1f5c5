"""Format constants and resource limits of the bundle format (see docs/bundle-format.md)."""
from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = [
    "FORMAT_VERSION",
    "SIGNATURE_ALGORITHM",
    "DOMAIN_TAG",
    "PAYLOAD_TYPE",
    "SCHEMA_VERSION",
    "MAX_VERSION",
    "MAX_BUNDLE_BYTES",
    "MULTISIG_FORMAT_VERSION",
    "MULTISIG_DOMAIN_TAG",
    "MAX_SIGNATURES",
    "MAX_ABS_CELL",
    "Limits",
]

#: Envelope format version (first element of the envelope array).
FORMAT_VERSION = 1
#: The one supported signature algorithm (second element of the envelope array).
SIGNATURE_ALGORITHM = "ed25519"
#: Domain-separation tag prepended to the payload bytes before signing / verifying.
DOMAIN_TAG = b"privmap-bundle-v1\x00"
#: Envelope format with k-of-n signatures: ``[2, alg, [[key_id, signature], ...], payload]``.
MULTISIG_FORMAT_VERSION = 2
#: Its domain tag (a format-1 signature never verifies as format 2, and back).
MULTISIG_DOMAIN_TAG = b"privmap-bundle-v2\x00"
#: Most signatures a format-2 envelope may carry.
MAX_SIGNATURES = 8
#: Value of the payload's ``type`` field.
PAYLOAD_TYPE = "privmap/bundle"
#: Value of the payload's ``schema_version`` field.
SCHEMA_VERSION = 2
#: Largest allowed bundle ``version`` (versions are 1 .. 2**63 - 1).
MAX_VERSION = 2**63 - 1
#: Default cap on the size of a whole bundle file, in bytes (16 MiB: device-sized; see
#: benchmarks/bench_load_limits.py for the load time and memory of the largest bundle admitted).
MAX_BUNDLE_BYTES = 16 * 1024 * 1024
#: Largest magnitude of a numeric cell: of a row a device reads, of a declared domain's bounds and
#: so of every representative. A distance sums d squared differences of at most 2e100 each, far
#: below float64's 1.8e308 for any d a bundle may hold, so no distance overflows to inf.
MAX_ABS_CELL = 1e100


@dataclass(frozen=True)
class Limits:
    """Resource limits applied while loading a bundle. All counts are items, sizes are bytes.

    The defaults are also the ceilings: a caller may tighten any limit (``Limits(max_inputs=500)``)
    but not loosen it; a value above the default, below 1, or not an ``int`` raises ``ValueError``.

    Attributes
    ----------
    max_bundle_bytes : int
        Size cap of the whole bundle (envelope + payload), bytes. Checked before parsing;
        ``read_bundle_file`` reads at most this plus one byte.
    max_inputs : int
        Largest K_in (input representatives / rows of the table).
    max_outputs : int
        Largest K_out (released representatives).
    max_features : int
        Largest d (cells per row).
    max_categories : int
        Largest number of values of one categorical feature.
    max_classes : int
        Largest |A| (private classes; rows of the prior).
    max_string_bytes : int
        Longest string anywhere in the payload, bytes of UTF-8.
    max_map_entries : int
        Largest ``metrics`` or ``provenance`` map.
    max_bits : int
        Largest table denominator exponent B (weights sum to 2**B); hard ceiling 32.
    max_items : int
        Largest number of array items plus map entries in the whole payload (bounds decode
        memory); checked from the msgpack headers before decoding.
    max_nonzeros : int
        Largest number of table non-zeros (sum of the lengths of ``table.index`` rows).
    max_leakage_work : int
        Largest |A| x non-zeros, the steps of the on-device leakage recheck.
    max_leakage_bits : float
        Policy maximum on the declared ``leakage_bits`` (THREATS H5); the default (64 bits) only
        excludes nonsense, a device tightens it to its own policy. Any finite number > 0.
    """

    max_bundle_bytes: int = MAX_BUNDLE_BYTES
    max_inputs: int = 1 << 20
    max_outputs: int = 1 << 20
    max_features: int = 4096
    max_categories: int = 65536
    max_classes: int = 4096
    max_string_bytes: int = 4096
    max_map_entries: int = 256
    max_bits: int = 32
    max_items: int = 4 * 1024 * 1024
    max_nonzeros: int = 2 * 1024 * 1024
    max_leakage_work: int = 8 * 1024 * 1024
    max_leakage_bits: float = 64.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "max_leakage_bits":
                if type(value) not in (int, float) or not 0 < value <= f.default:
                    raise ValueError(f"Limits.{f.name} must be a number in (0, {f.default}]")
                continue
            if type(value) is not int:
                raise ValueError(f"Limits.{f.name} must be an int, got {type(value).__name__}")
            if value < 1 or value > f.default:
                raise ValueError(f"Limits.{f.name} must be in 1..{f.default} (limits can only be tightened)")

    @property
    def max_array_len(self) -> int:
        """Longest msgpack array accepted anywhere in a payload."""
        return max(self.max_inputs, self.max_outputs, self.max_features,
                   self.max_categories, self.max_classes)
