"""Randomness: the OS CSPRNG's bits, bits derived from a device secret, and the exact sampler.

The layer below the kinds, whose releases draw from it. Private modules: ``_sampler`` (B bits
from the CSPRNG, or from a derived or test source, into a released symbol by integer running
total), ``_derived`` (bits derived from a device secret, so that one input always gets one
release).
"""
from __future__ import annotations

from ._derived import SECRET_BYTES, DerivedBits, record_bits, release_bits
from ._sampler import InsecureTestBits, SystemRandomBits, draw_bits, resolve_rng, sample_row

__all__ = ["SystemRandomBits", "InsecureTestBits", "DerivedBits", "SECRET_BYTES", "release_bits", "record_bits",
           "resolve_rng", "draw_bits", "sample_row"]
