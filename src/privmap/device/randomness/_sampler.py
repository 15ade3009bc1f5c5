"""Randomness and exact integer sampling.

Production randomness is :class:`SystemRandomBits`: B fresh bits from the operating system's
CSPRNG (``os.getrandom`` in non-blocking mode where the platform has it, so an unseeded kernel
pool early in boot raises :class:`RandomnessError` instead of blocking; ``os.urandom`` otherwise).
Neither ``random`` nor ``numpy.random`` is used. A test may inject any object with
``randbits(k)`` only by wrapping it in :class:`InsecureTestBits` with ``test_mode=True``; anything
else (a seeded ``random.Random``, a ``numpy.random.Generator``) is a ``TypeError``.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Protocol

from ..errors import RandomnessError
from ._derived import DerivedBits

__all__ = ["SystemRandomBits", "InsecureTestBits", "resolve_rng", "draw_bits", "sample_row"]

_GRND_NONBLOCK = getattr(os, "GRND_NONBLOCK", 0)


class _RandBits(Protocol):
    """Anything with ``randbits(k)``: an int on ``0 .. 2**k - 1``."""

    def randbits(self, k: int) -> int: ...


class SystemRandomBits:
    """The production bit source: ``randbits(k)`` is k uniform bits from the OS CSPRNG."""

    __slots__ = ()

    def randbits(self, k: int) -> int:
        """Return an int uniform on ``0 .. 2**k - 1`` (k >= 1) from the OS CSPRNG.

        Raises ``BlockingIOError`` if the kernel pool is not initialised yet (Linux, early boot).
        """
        if type(k) is not int or k < 1:
            raise ValueError("k must be a positive int")
        nbytes = (k + 7) // 8
        data = None
        getrandom = getattr(os, "getrandom", None)  # as ``os`` holds it now (a test may replace it)
        if getrandom is not None:
            try:
                data = getrandom(nbytes, _GRND_NONBLOCK)
            except BlockingIOError:
                raise
            except OSError:  # getrandom() unavailable (old kernel, seccomp): use urandom
                data = None
        if data is None:
            data = os.urandom(nbytes)
        if len(data) != nbytes:
            raise OSError("short read from the OS CSPRNG")
        return int.from_bytes(data, "big") >> (8 * nbytes - k)

    def __repr__(self) -> str:
        return "SystemRandomBits()"


class InsecureTestBits:
    """TEST ONLY: lets a test inject a deterministic bit source (``source.randbits(k)``).

    Constructing one requires ``test_mode=True`` so that it cannot be reached by accident.
    """

    __slots__ = ("source",)

    def __init__(self, source: _RandBits, *, test_mode: bool = False) -> None:
        if test_mode is not True:
            raise TypeError("InsecureTestBits is for tests only: pass test_mode=True")
        if not callable(getattr(source, "randbits", None)):
            raise TypeError("the test bit source needs a randbits(k) method")
        self.source = source

    def randbits(self, k: int) -> int:
        return self.source.randbits(k)


_DEFAULT = SystemRandomBits()


def resolve_rng(rng: object) -> SystemRandomBits | InsecureTestBits | DerivedBits:
    """The bit source ``rng`` names: the OS CSPRNG for ``None``.

    Otherwise only a :class:`SystemRandomBits`, a :class:`DerivedBits` (one permanent release
    per input) or an :class:`InsecureTestBits` is accepted; anything else raises ``TypeError``.
    """
    if rng is None:
        return _DEFAULT
    if type(rng) is SystemRandomBits or type(rng) is InsecureTestBits or type(rng) is DerivedBits:
        return rng
    raise TypeError(
        f"rng must be None (the OS CSPRNG) or SystemRandomBits(); got {type(rng).__name__}. "
        "Seeded or non-cryptographic generators are refused; tests wrap their source in "
        "InsecureTestBits(source, test_mode=True)."
    )


def draw_bits(rng: _RandBits, bits: int) -> int:
    """``bits`` fresh bits from ``rng`` (already resolved); any failure is a RandomnessError."""
    try:
        r = rng.randbits(bits)
    except Exception as exc:  # noqa: BLE001 - any failure of the source means no release
        raise RandomnessError(f"randomness source failed: {type(exc).__name__}") from exc
    if type(r) is not int or not 0 <= r < (1 << bits):
        raise RandomnessError("randomness source returned a value outside 0..2**bits-1")
    return r


def sample_row(index: Iterable[int], weight: Iterable[int], r: int) -> int:
    """Output index chosen by a draw ``r`` in ``0 .. 2**B - 1``.

    The first ``index[t]`` whose running weight total exceeds ``r``. The whole row is scanned
    whatever ``r`` is, so the time does not depend on the draw.
    """
    chosen = -1
    running = 0
    for j, w in zip(index, weight):
        running += w
        if chosen < 0 and running > r:
            chosen = j
    if chosen < 0:  # impossible for a validated row (sum 2**B > r)
        raise RandomnessError("draw outside the table row")
    return chosen
