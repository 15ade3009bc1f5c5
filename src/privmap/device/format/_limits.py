"""Resource limits of the bundle format.

The format is described in docs/bundle-format.md; the limits' constants are in
:mod:`privmap.device.constants`.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from ..constants import MAX_BUNDLE_BYTES

__all__ = ["Limits"]


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
            value, ceiling = getattr(self, f.name), f.default
            if not isinstance(ceiling, (int, float)):  # every limit's default is its ceiling
                raise TypeError(f"Limits.{f.name} has no default to bound it")
            if f.name == "max_leakage_bits":
                if type(value) not in (int, float) or not 0 < value <= ceiling:
                    raise ValueError(f"Limits.{f.name} must be a number in (0, {ceiling}]")
                continue
            if type(value) is not int:
                raise ValueError(f"Limits.{f.name} must be an int, got {type(value).__name__}")
            if value < 1 or value > ceiling:
                raise ValueError(f"Limits.{f.name} must be in 1..{ceiling} (limits can only be tightened)")

    @property
    def max_array_len(self) -> int:
        """Longest msgpack array accepted anywhere in a payload."""
        return max(self.max_inputs, self.max_outputs, self.max_features,
                   self.max_categories, self.max_classes)
