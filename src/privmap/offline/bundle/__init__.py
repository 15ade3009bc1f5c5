"""Stage 4 of a build: canonical payload bytes, Ed25519 signing, keys, reading bundles back.

Private modules: ``_write`` (encode, sign, check with the device runtime), ``_write_real`` (the
real-valued kinds' payloads), ``_canonical`` (the float rounding and key order both encoders use), ``_keys`` (operator
key files), ``_inspect`` (reading a bundle's payload without a trusted key, for display),
``_multisig`` (k-of-n bundle envelopes and signed keyring documents).
"""
from ._inspect import listed_signatures, payload_output_leakage, payload_table, read_bytes, read_unverified
from ._keys import generate_keypair, load_private_key
from ._multisig import cosign_bundle, keyring_document
from ._write import check_bundle, encode_payload, sign_bundle

__all__ = ["encode_payload", "sign_bundle", "check_bundle", "generate_keypair", "load_private_key",
           "cosign_bundle", "keyring_document", "read_bytes", "read_unverified", "listed_signatures",
           "payload_table", "payload_output_leakage"]
