"""Work caps checked from the msgpack headers of the verified payload, before decoding it.

The loader's work and memory grow with the number of items in the payload (every cell becomes a
Python object; the leakage recheck is |A| x nnz), not with its byte size alone: one signed 59 MiB
bundle took 3.6 GiB to decode and another 551 s to recheck. :func:`prescan` walks the payload's
msgpack structure reading only type bytes and lengths (no object is built, no scalar decoded),
and counts

- every array item and map entry in the payload (``Limits.max_items``),
- the table's non-zeros, the sum of the lengths of ``table.index[c]`` (``Limits.max_nonzeros``),
- the leakage recheck's work ``|A| x nnz``, with |A| the length of ``private.classes``
  (``Limits.max_leakage_work``),

raising :class:`WorkLimitError` at the first cap crossed. Malformed msgpack stops the walk with
:class:`BundleFormatError`; whatever the walk accepts is then decoded by ``msgpack.unpackb`` with
its own limits, so the walk does not need to be a full validator.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import BundleFormatError, WorkLimitError
from ._limits import Limits

__all__ = ["prescan"]

# Bytes that follow a type byte for fixed-size scalars (nil, bool, ints, floats).
_FIXED = {0xC0: 0, 0xC2: 0, 0xC3: 0, 0xCA: 4, 0xCB: 8, 0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8,
          0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8}
# str/bin with a 1-, 2- or 4-byte length.
_SIZED = {0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC4: 1, 0xC5: 2, 0xC6: 4}
_ARRAY = {0xDC: 2, 0xDD: 4}
_MAP = {0xDE: 2, 0xDF: 4}
_MAX_DEPTH = 32


def _length(data: bytes, pos: int, width: int) -> int:
    if pos + width > len(data):
        raise BundleFormatError("payload: truncated msgpack header")
    return int.from_bytes(data[pos:pos + width], "big")


@dataclass
class _Counts:
    """What the pre-scan has counted against the caps so far.

    What :func:`prescan`'s walk has counted against the caps so far; updated only where a
    container opens (:func:`_open`), so the walk's per-item loop keeps its position and stack in
    plain locals.

    Attributes
    ----------
    limits : Limits
        The caps checked.
    items : int
        Array items and map entries so far (``max_items``).
    nonzeros : int
        The sum of the lengths of the ``table.index`` rows so far (``max_nonzeros``).
    classes : int
        The length of ``private.classes``, |A| (0 until it is read).
    """

    limits: Limits
    items: int = 0
    nonzeros: int = 0
    classes: int = 0


def _skip_scalars(payload: bytes, pos: int, left: int) -> tuple[int, int]:
    """The walk's fast path over scalar items.

    The walk's fast path: step over the scalar items (ints, floats, nil, bools) at ``pos`` of an
    array with ``left`` items to go, up to its end or its first other item; the new position and
    the items still left. Plain locals: this loop is where a table's time goes.
    """
    try:
        while left:
            b = payload[pos]
            if b <= 0x7F or b >= 0xE0:
                pos += 1
            elif b == 0xCB:
                pos += 9
            elif b in _FIXED:
                pos += 1 + _FIXED[b]
            else:
                break
            left -= 1
    except IndexError:
        raise BundleFormatError("payload: truncated msgpack") from None
    if pos > len(payload):
        raise BundleFormatError("payload: truncated msgpack")
    return pos, left


def _open(counts: _Counts, stack: list[list], count: int, is_map: bool, child_path: tuple | None,
          room: int) -> None:
    """A container opened by the walk, its items counted against the caps.

    Open a container of ``count`` items at ``child_path`` (``room``: the payload's bytes after
    its header): count its items against the caps (a ``table.index`` row's length as non-zeros,
    ``private.classes``' as |A|) and push it on ``stack``.

    Raises
    ------
    BundleFormatError
        A container as a map key, more items claimed than bytes left, or nesting too deep.
    WorkLimitError
        The payload's items or the table's non-zeros cross their caps.
    """
    limits = counts.limits
    if child_path is None:
        raise BundleFormatError("payload: map keys must be strings")
    if (2 if is_map else 1) * count > room:  # every item takes at least one byte
        raise BundleFormatError("payload: container header claims more items than bytes")
    counts.items += count
    if counts.items > limits.max_items:
        raise WorkLimitError(f"payload holds more than {limits.max_items} items")
    if child_path == (b"table", b"index", b"*"):
        counts.nonzeros += count
        if counts.nonzeros > limits.max_nonzeros:
            raise WorkLimitError(f"table has more than {limits.max_nonzeros} non-zeros")
    elif child_path == (b"private", b"classes"):
        counts.classes = count
    if len(stack) >= _MAX_DEPTH:
        raise BundleFormatError("payload: nesting too deep")
    stack.append([count, is_map, True, child_path])


def prescan(payload: bytes, limits: Limits) -> None:
    """Raise :class:`WorkLimitError` if ``payload`` declares more work than ``limits`` allow.

    Parameters
    ----------
    payload : bytes
        The verified payload (a msgpack map); read, never decoded.
    limits : Limits
        ``max_items``, ``max_nonzeros`` and ``max_leakage_work`` are checked.
    """
    n = len(payload)
    pos = 0
    counts = _Counts(limits)
    # Each frame: [items left, is_map, expecting_key, key path of this container].
    stack: list[list] = []
    pending_key = None
    while True:
        if stack and not stack[-1][1]:
            top = stack[-1]
            pos, top[0] = _skip_scalars(payload, pos, top[0])
            if not top[0]:
                while stack and stack[-1][0] == 0 and (not stack[-1][1] or stack[-1][2]):
                    stack.pop()
                if not stack:
                    break
                continue
        if pos >= n:
            raise BundleFormatError("payload: truncated msgpack")
        b = payload[pos]
        pos += 1
        count = -1
        is_map = False
        if b <= 0x7F or b >= 0xE0:          # fixint
            pass
        elif 0xA0 <= b <= 0xBF:              # fixstr
            if stack and stack[-1][1] and stack[-1][2]:
                pending_key = payload[pos:pos + (b & 0x1F)]
            pos += b & 0x1F
        elif 0x90 <= b <= 0x9F:
            count = b & 0x0F
        elif 0x80 <= b <= 0x8F:
            count, is_map = b & 0x0F, True
        elif b in _FIXED:
            pos += _FIXED[b]
        elif b in _SIZED:
            width = _SIZED[b]
            size = _length(payload, pos, width)
            if stack and stack[-1][1] and stack[-1][2]:
                pending_key = payload[pos + width:pos + width + size]
            pos += width + size
        elif b in _ARRAY:
            count = _length(payload, pos, _ARRAY[b])
            pos += _ARRAY[b]
        elif b in _MAP:
            count, is_map = _length(payload, pos, _MAP[b]), True
            pos += _MAP[b]
        else:                                # ext types and the unused byte 0xC1
            raise BundleFormatError("payload: msgpack type not allowed")
        if pos > n:
            raise BundleFormatError("payload: truncated msgpack")
        # Which container slot this object filled, and the path a container opened here gets.
        if stack:
            top = stack[-1]
            if top[1]:                       # map: keys and values alternate
                was_key = top[2]
                top[2] = not was_key
                if was_key:
                    child_path = None            # a container used as a key is refused by _open
                else:
                    child_path = top[3] + (pending_key,)
                    pending_key = None
                    top[0] -= 1                  # an entry is counted when its value starts
            else:
                child_path = top[3] + (b"*",)
                top[0] -= 1
        else:
            child_path = ()
        if count >= 0:
            _open(counts, stack, count, is_map, child_path, n - pos)
        while stack and stack[-1][0] == 0 and (not stack[-1][1] or stack[-1][2]):
            stack.pop()
        if not stack:
            break
    if counts.classes * counts.nonzeros > limits.max_leakage_work:
        raise WorkLimitError(
            f"leakage recheck would need |A| x nnz = {counts.classes} x {counts.nonzeros} > {limits.max_leakage_work} steps")
