"""Whom the device trusts: signature envelopes, Ed25519 key checks, keyrings, rotation, binding.

The layer above the wire format (it decodes envelopes and keyring documents with it) and below
the load workflow. Private modules: ``_envelope`` (format-1 and k-of-n format-2 envelopes,
verified before anything is decoded), ``_edwards`` (refusing small-order and non-canonical
Ed25519 keys), ``_keyring`` (the pinned public keys), ``_rotation`` (signed keyring documents and
their chain), ``_binding`` (a bundle bound to the device's class and schema).
"""
from __future__ import annotations

from ._binding import Binding, check_binding, schema_sha256
from ._envelope import envelope_signatures, verify_envelope
from ._keyring import Keyring, key_id_of
from ._rotation import KeyringChain

__all__ = ["Keyring", "key_id_of", "KeyringChain", "Binding", "check_binding", "schema_sha256",
           "verify_envelope", "envelope_signatures"]
