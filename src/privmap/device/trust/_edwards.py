"""Pure-Python checks on Ed25519 public-key encodings (RFC 8032, section 5.1.3).

Used only when a key is provisioned into a :class:`~privmap.device.Keyring`, never on the
verification path (verification is done by ``cryptography``). A key is accepted only if its
encoding is canonical, decodes to a curve point, and that point lies in the prime-order subgroup
and is not the identity. This refuses the 8 small-order points (the identity ``01 00..00`` among
them, which "verifies" a trivial signature over any message), every non-canonical encoding of
them, and mixed-order keys (a real key plus a torsion component).
"""
from __future__ import annotations

__all__ = ["key_problem", "decode_point", "add_points", "multiply", "is_identity"]

_P = 2**255 - 19
_L = 2**252 + 27742317777372353535851937790883648493  # order of the base point
_D = (-121665 * pow(121666, _P - 2, _P)) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)

Point = tuple[int, int, int, int]
"""A curve point in extended coordinates ``(X, Y, Z, T)``, ints mod p."""


def decode_point(encoding: bytes) -> Point | str:
    """A decoded curve point, or why the encoding is not one.

    Decode a 32-byte encoding to extended coordinates ``(X, Y, Z, T)`` (ints mod p), or return
    the reason it is not a canonical point (str).
    """
    y = int.from_bytes(encoding, "little")
    sign = y >> 255
    y &= (1 << 255) - 1
    if y >= _P:
        return "non-canonical encoding (y >= p)"
    u = (y * y - 1) % _P
    v = (_D * y * y + 1) % _P
    x = (u * pow(v, 3, _P) * pow(u * pow(v, 7, _P), (_P - 5) // 8, _P)) % _P
    vx2 = (v * x * x) % _P
    if vx2 == u:
        pass
    elif vx2 == (-u) % _P:
        x = (x * _SQRT_M1) % _P
    else:
        return "not a point on the curve"
    if x == 0 and sign == 1:
        return "non-canonical encoding (x = 0 with sign bit set)"
    if (x & 1) != sign:
        x = _P - x
    return (x, y, 1, (x * y) % _P)


def add_points(p1: Point, p2: Point) -> Point:
    """The sum of two points in extended coordinates (RFC 8032, section 5.1.4)."""
    x1, y1, z1, t1 = p1
    x2, y2, z2, t2 = p2
    a = (y1 - x1) * (y2 - x2) % _P
    b = (y1 + x1) * (y2 + x2) % _P
    c = 2 * _D * t1 * t2 % _P
    d = 2 * z1 * z2 % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def multiply(k: int, point: Point) -> Point:
    """``[k]point`` for an int ``k >= 0`` by double-and-add (not constant time: public keys only)."""
    result = (0, 1, 1, 0)
    addend = point
    while k:
        if k & 1:
            result = add_points(result, addend)
        addend = add_points(addend, addend)
        k >>= 1
    return result


def is_identity(point: Point) -> bool:
    """Whether ``point`` (extended coordinates) is the neutral element."""
    x, y, z, _ = point
    return x % _P == 0 and (y - z) % _P == 0


def key_problem(encoding: bytes) -> str | None:
    """Return why ``encoding`` is unacceptable as an Ed25519 public key, or ``None`` if it is fine.

    ``encoding`` must be exactly 32 bytes. Reasons: wrong length, non-canonical, off-curve,
    small order (``[8]P`` is the identity), mixed order (``[L]P`` is not the identity).
    """
    if len(encoding) != 32:
        return f"an Ed25519 public key is 32 bytes, got {len(encoding)}"
    point = decode_point(encoding)
    if isinstance(point, str):
        return point
    if is_identity(multiply(8, point)):
        return "small-order point"
    if not is_identity(multiply(_L, point)):
        return "mixed-order point (not in the prime-order subgroup)"
    return None
