"""The two msgpack decodes of the loader: the envelope, then (after verification) the payload.

Each is exactly one ``msgpack.unpackb`` call over an in-memory ``bytes`` object, with tight
limits, no ext types (``max_ext_len=0`` also refuses the built-in Timestamp ext), string map keys
only (``strict_map_key``), duplicate keys refused (``object_pairs_hook``) and trailing bytes
refused (``ExtraData``). No streaming unpacker object is used anywhere in the device runtime.

What a decode returns is typed ``Any``: it is msgpack's tree of unknown shape from untrusted bytes,
and every reader checks it field by field (:mod:`privmap.device.format._schema`) before use.
"""
from __future__ import annotations

from typing import Any, NoReturn

import msgpack

from ..constants import MIN_MSGPACK_VERSION
from ..errors import BundleFormatError
from ._limits import Limits

__all__ = ["decode_envelope", "decode_payload", "unpack"]

if tuple(msgpack.version[:3]) < MIN_MSGPACK_VERSION:  # pragma: no cover - depends on install
    raise ImportError(
        f"privmap.device needs msgpack >= {'.'.join(map(str, MIN_MSGPACK_VERSION))}, "
        f"found {'.'.join(map(str, msgpack.version))}"
    )

# Everything msgpack (or one of our hooks) may raise on hostile input. UnicodeDecodeError,
# ExtraData, FormatError and StackError are ValueError subclasses.
_DECODE_ERRORS = (ValueError, TypeError, OverflowError, RecursionError, msgpack.UnpackException)


class _DuplicateKey(ValueError):
    pass


def _refuse_ext(code: int, data: bytes) -> NoReturn:
    raise ValueError("ext types are not allowed")


def _pairs_no_duplicates(pairs: list[tuple[object, object]]) -> dict[object, object]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _DuplicateKey("duplicate map key")
    return result


def unpack(data: bytes, what: str, **limits: int) -> Any:
    """One strict msgpack decode.

    One strict ``msgpack.unpackb`` of ``data`` (module docstring) with the given msgpack
    ``limits`` (``max_str_len``, ...); ``what`` names it in errors. Raises BundleFormatError.
    """
    try:
        return msgpack.unpackb(
            data,
            raw=False,
            use_list=True,
            strict_map_key=True,
            timestamp=0,
            ext_hook=_refuse_ext,
            object_pairs_hook=_pairs_no_duplicates,
            max_ext_len=0,
            **limits,
        )
    except msgpack.ExtraData:
        raise BundleFormatError(f"{what}: trailing bytes after the msgpack object") from None
    except _DuplicateKey:
        raise BundleFormatError(f"{what}: duplicate map key") from None
    except _DECODE_ERRORS as exc:
        raise BundleFormatError(f"{what}: malformed msgpack ({type(exc).__name__})") from None


def decode_envelope(data: bytes, limits: Limits) -> Any:
    """Decode the envelope array ``[format, alg, key_id, signature, payload]`` (no validation)."""
    return unpack(
        data,
        "envelope",
        max_str_len=64,
        max_bin_len=min(len(data), limits.max_bundle_bytes),
        max_array_len=8,
        max_map_len=0,
    )


def decode_payload(payload: bytes, limits: Limits) -> Any:
    """Decode verified payload bytes to Python objects (no schema validation yet)."""
    n = len(payload)
    return unpack(
        payload,
        "payload",
        max_str_len=min(n, limits.max_string_bytes),
        max_bin_len=0,
        max_array_len=min(n, limits.max_array_len),
        max_map_len=min(n, max(limits.max_map_entries, 32)),
    )
