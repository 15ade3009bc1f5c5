"""The device's pinned set of trusted Ed25519 public keys."""
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from typing import NoReturn

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ..errors import KeyringError
from ..files import read_regular
from ._edwards import key_problem

__all__ = ["Keyring", "key_id_of"]

#: Largest PEM file the keyring reads, bytes.
_MAX_PEM_BYTES = 64 * 1024


def key_id_of(raw_public_key: bytes) -> bytes:
    """Key id of a raw 32-byte Ed25519 public key: ``sha256(raw)``, 32 bytes."""
    return hashlib.sha256(bytes(raw_public_key)).digest()


class Keyring:
    """An immutable set of trusted Ed25519 public keys, indexed by key id (sha256 of the raw key).

    Build it from raw 32-byte keys or ``Ed25519PublicKey`` objects (``Keyring([k1, k2])``), from
    PEM text (:meth:`from_pem`) or from PEM files (:meth:`from_pem_files`). Every key is checked
    when the keyring is built: the encoding must be canonical and decode to a point of the
    prime-order subgroup other than the identity, so the 8 small-order points (and their
    non-canonical encodings, and mixed-order points) are refused with :class:`KeyringError`.
    The same key given twice is stored once. An empty keyring is refused.

    ``threshold`` (default 1) is how many **distinct** keys of the ring must sign a bundle
    (THREATS B): 1 <= threshold <= number of distinct keys, else :class:`KeyringError`. A
    threshold above 1 needs the multi-signature envelope (format 2, docs/bundle-format.md).

    Only the loader uses the keys, and only after the bundle's key id selected one of them; a key
    or key hint inside a bundle is never used.
    """

    __slots__ = ("_keys", "threshold")

    _keys: dict[bytes, Ed25519PublicKey]
    threshold: int

    def __init__(self, keys: Iterable[bytes | Ed25519PublicKey], *, threshold: int = 1) -> None:
        if isinstance(keys, (bytes, bytearray, memoryview, str, Ed25519PublicKey)):
            raise TypeError("Keyring() takes an iterable of keys; wrap a single key in a list")
        table: dict[bytes, Ed25519PublicKey] = {}
        for position, key in enumerate(keys):
            raw = _raw_bytes(key, position)
            problem = key_problem(raw)
            if problem is not None:
                raise KeyringError(f"key #{position} refused: {problem}")
            try:
                public = Ed25519PublicKey.from_public_bytes(raw)
            except (ValueError, UnsupportedAlgorithm) as exc:  # pragma: no cover - already checked
                raise KeyringError(f"key #{position} refused: {exc}") from None
            table.setdefault(key_id_of(raw), public)
        if not table:
            raise KeyringError("a keyring needs at least one trusted key")
        if type(threshold) is not int or not 1 <= threshold <= len(table):
            raise KeyringError(f"threshold must be an int in 1..{len(table)} (the distinct keys)")
        object.__setattr__(self, "_keys", table)
        object.__setattr__(self, "threshold", threshold)

    def __setattr__(self, name: str, value: object) -> NoReturn:  # immutable
        raise AttributeError("Keyring is immutable")

    @classmethod
    def from_pem(cls, *pem_texts: bytes | str) -> Keyring:
        """Keyring from PEM ``PUBLIC KEY`` blocks (SubjectPublicKeyInfo); one key per argument.

        Private keys, other algorithms, malformed or non-ASCII PEM, and text holding more than
        one PEM block raise :class:`KeyringError`.
        """
        keys = []
        for position, text in enumerate(pem_texts):
            if isinstance(text, str):
                try:
                    data = text.encode("ascii", "strict")
                except UnicodeEncodeError:
                    raise KeyringError(f"PEM #{position} is not ASCII text") from None
            elif isinstance(text, (bytes, bytearray, memoryview)):
                data = bytes(text)
            else:
                raise KeyringError(f"PEM #{position} must be str or bytes")
            if data.count(b"-----BEGIN") != 1:
                raise KeyringError(f"PEM #{position} must hold exactly one PEM block "
                                   "(give each key as its own argument or file)")
            if b"PRIVATE KEY" in data:
                raise KeyringError(f"PEM #{position} holds a private key; provision public keys only")
            try:
                key = serialization.load_pem_public_key(data)
            except (ValueError, TypeError, UnsupportedAlgorithm):
                raise KeyringError(f"PEM #{position} is not a PEM public key") from None
            if not isinstance(key, Ed25519PublicKey):
                raise KeyringError(f"PEM #{position} is not an Ed25519 public key")
            keys.append(key)
        return cls(keys)

    @classmethod
    def from_pem_files(cls, *paths: str | os.PathLike) -> Keyring:
        """Keyring from PEM public-key files.

        Each file is read once, at most 64 KiB; a FIFO or device is refused without blocking.
        """
        texts = []
        for path in paths:
            try:
                data = read_regular(path, _MAX_PEM_BYTES)
            except OSError as exc:  # NotRegularFile included: a FIFO is never read
                raise KeyringError(f"cannot read key file {os.fspath(path)!r}: {exc.strerror or exc}") from None
            if len(data) > _MAX_PEM_BYTES:
                raise KeyringError(f"key file {os.fspath(path)!r} is larger than {_MAX_PEM_BYTES} bytes")
            texts.append(data)
        return cls.from_pem(*texts)

    @property
    def key_ids(self) -> frozenset[bytes]:
        """The key ids (sha256 of each raw public key) of the trusted keys."""
        return frozenset(self._keys)

    @property
    def raw_keys(self) -> tuple[bytes, ...]:
        """The trusted keys as raw 32-byte Ed25519 public keys, in key-id order."""
        return tuple(self._keys[key_id].public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
                     for key_id in sorted(self._keys))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[bytes]:
        return iter(sorted(self._keys))

    def __contains__(self, key_id: object) -> bool:
        return key_id in self._keys

    def __repr__(self) -> str:
        ids = ", ".join(k.hex()[:16] for k in sorted(self._keys))
        return f"Keyring([{ids}], threshold={self.threshold})"

    def verified_signers(self, signatures: Iterable[tuple[bytes, bytes]], message: bytes) -> frozenset[bytes]:
        """Key ids of the distinct trusted keys with a valid signature over ``message``.

        ``signatures`` is a sequence of ``(key_id, signature)`` pairs. Unknown key ids and
        invalid signatures are ignored (THREATS B4, B5); a key signing twice counts once (B1).
        """
        return frozenset(key_id for key_id, signature in signatures
                         if self.verify(key_id, signature, message))

    def verify(self, key_id: bytes, signature: bytes, message: bytes) -> bool:
        """True iff ``key_id`` names a trusted key and ``signature`` verifies ``message`` under it."""
        key = self._keys.get(key_id)
        if key is None:
            return False
        try:
            key.verify(signature, message)
        except InvalidSignature:
            return False
        return True


def _raw_bytes(key: object, position: int) -> bytes:
    if isinstance(key, Ed25519PublicKey):
        return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise KeyringError(f"key #{position} must be 32 raw bytes or an Ed25519PublicKey, "
                       f"got {type(key).__name__}")
