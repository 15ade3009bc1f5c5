"""Releasing a row: nearest-representative lookup, the exact sampler, derived (permanent) bits.

Private modules: ``_lookup`` (parsing a row and finding its input symbol), ``_sampler`` (B bits from
the CSPRNG into a released symbol by integer running total), ``_derived`` (bits derived from a
device secret, so that one input always gets one release). The public names are re-exported by
:mod:`privmap.device`.
"""
