"""The operator's Ed25519 signing key: generation and loading.

``generate_keypair(keydir)`` writes ``KEYDIR/private.pem`` (PKCS#8 PEM, created atomically with
mode 0600; an existing key is never overwritten) and ``KEYDIR/public.pem`` (SubjectPublicKeyInfo
PEM, the file the devices pin). ``load_private_key(path)`` reads it back with clear errors.
"""
from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import NamedTuple

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from privmap.device.files import NotRegularFile, read_regular
from privmap.device.trust import key_id_of

from .._errors import BuildError

__all__ = ["KeyPair", "generate_keypair", "load_private_key", "public_pem"]

PRIVATE_NAME = "private.pem"
PUBLIC_NAME = "public.pem"
_MAX_KEY_FILE_BYTES = 64 * 1024


class KeyPair(NamedTuple):
    """Where :func:`generate_keypair` wrote the key pair, and the key id devices will see."""

    private_path: Path
    public_path: Path
    key_id: str  # hex sha256 of the raw 32-byte public key


def public_pem(private_key: Ed25519PrivateKey) -> bytes:
    """SubjectPublicKeyInfo PEM of the public half of ``private_key``."""
    return private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` with ``mode`` (O_EXCL: refuse an existing file) and write ``data``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError:
        raise BuildError(f"refusing to overwrite existing key file {str(path)!r}") from None
    except OSError as exc:
        raise BuildError(f"cannot create key file {str(path)!r}: {exc.strerror}") from None
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)


def generate_keypair(keydir, *, password: bytes | None = None) -> KeyPair:
    """Generate an Ed25519 key pair into ``keydir`` (created with mode 0700 if missing).

    Writes ``private.pem`` (PKCS#8; encrypted with ``password`` if given; mode 0600) and
    ``public.pem`` (mode 0644). Raises :class:`BuildError` if ``keydir`` is writable by group
    or others, or if either file already exists or cannot be written; nothing is overwritten.
    """
    keydir = Path(keydir)
    private_path, public_path = keydir / PRIVATE_NAME, keydir / PUBLIC_NAME
    try:
        keydir.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = keydir.stat().st_mode
    except OSError as exc:
        raise BuildError(f"cannot create key directory {str(keydir)!r}: {exc.strerror}") from None
    if mode & 0o022:
        raise BuildError(f"key directory {str(keydir)!r} is writable by group or others "
                         f"(mode {stat.S_IMODE(mode):04o}): anyone could swap the key; run: chmod 700 {str(keydir)!r}")
    for path in (private_path, public_path):
        if os.path.lexists(path):
            raise BuildError(f"refusing to overwrite existing key file {str(path)!r}")
    key = Ed25519PrivateKey.generate()
    encryption = (serialization.BestAvailableEncryption(password) if password
                  else serialization.NoEncryption())
    private_bytes = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    _write_new(private_path, private_bytes, 0o600)
    try:
        _write_new(public_path, public_pem(key), 0o644)
    except BaseException:
        os.unlink(private_path)
        raise
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return KeyPair(private_path, public_path, key_id_of(raw).hex())


def load_private_key(path, *, password: bytes | None = None,
                     check_permissions: bool = True) -> Ed25519PrivateKey:
    """Load the operator's Ed25519 private key from a PKCS#8 PEM file.

    With ``check_permissions`` (the default) a file readable or writable by group or others is
    refused, as ssh does. Raises :class:`BuildError` for a missing or unreadable file, a public
    key (named as such, whatever its permissions), loose permissions, malformed PEM, a wrong or missing
    password, or a key that is not Ed25519.
    """
    path = Path(path)
    try:
        data = read_regular(path, _MAX_KEY_FILE_BYTES)  # a FIFO is refused, never waited on
        info = os.stat(path)
    except FileNotFoundError:
        raise BuildError(f"private key file not found: {str(path)!r}") from None
    except NotRegularFile:
        raise BuildError(f"private key path {str(path)!r} is not a regular file") from None
    except OSError as exc:
        raise BuildError(f"cannot read private key file {str(path)!r}: {exc.strerror}") from None
    if b"-----BEGIN PUBLIC KEY-----" in data and b"PRIVATE KEY-----" not in data:
        raise BuildError(f"key file {str(path)!r} holds a public key; signing needs the private key "
                         f"(the private.pem beside it, from `privmap keygen`)")
    if check_permissions and info.st_mode & 0o077:
        raise BuildError(
            f"private key file {str(path)!r} is accessible by group or others "
            f"(mode {stat.S_IMODE(info.st_mode):04o}); run: chmod 600 {str(path)!r}")
    if len(data) > _MAX_KEY_FILE_BYTES:
        raise BuildError(f"private key file {str(path)!r} is too large to be a key")
    if b"ENCRYPTED PRIVATE KEY" in data and not password:
        raise BuildError(f"private key file {str(path)!r} is encrypted: a password is needed")
    try:
        key = serialization.load_pem_private_key(data, password=password or None)
    except TypeError:
        raise BuildError(f"private key file {str(path)!r} is not encrypted: do not pass a password") from None
    except (ValueError, UnsupportedAlgorithm):
        raise BuildError(
            f"private key file {str(path)!r} is not a readable PKCS#8 PEM key (or the password is wrong)"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise BuildError(f"private key file {str(path)!r} holds a {type(key).__name__}, not an Ed25519 key")
    return key
