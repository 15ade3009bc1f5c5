"""Whom the device trusts: signature envelopes, Ed25519 key checks, keyrings, rotation, binding.

Private modules: ``_envelope`` (format-1 and k-of-n format-2 envelopes, verified before anything
is decoded), ``_edwards`` (refusing small-order and non-canonical Ed25519 keys), ``_keyring`` (the
pinned public keys), ``_rotation`` (signed keyring documents and their chain), ``_binding`` (a
bundle bound to the device's class and schema). The public names are re-exported by
:mod:`privmap.device`.
"""
