"""Clock and floors: the time the device believes, from the clock and the floors the state holds.

Time: ``now_eff = max(clock, time_floor, PLAUSIBLE_CLOCK)``, read once per operation, so a clock
reset to 1970 cannot revive an expired bundle and the floor never decreases (except through a
signed keyring rotation, below). A bundle issued more than ``max_skew`` seconds after the clock
is refused (:class:`FutureBundleError`) unless the clock is known to be wrong (behind the floor,
or before :data:`PLAUSIBLE_CLOCK`), and a bundle issued after :data:`LATEST_ISSUED_AT` is refused
whatever the clock says. An active bundle past ``expires`` still releases for ``grace`` seconds
(status ``"stale"``), then nothing is released (:class:`NoValidBundleError`).
"""
from __future__ import annotations

from collections.abc import Callable

from ..constants import PLAUSIBLE_CLOCK
from ._store import Store

__all__ = ["Clock"]


class Clock:
    """The time the device believes (module docstring): a part of ``DeviceState``.

    Parameters
    ----------
    store : Store
        Whose state (as of the last operation) holds the time floor.
    clock : callable () -> float
        Unix seconds (``time.time``; tests pass a fake clock).
    """

    def __init__(self, store: Store, clock: Callable[[], float]) -> None:
        self._store = store
        self._clock = clock

    def read(self, now: float | None) -> float:
        """``now`` if given, else the clock: a finite number of unix seconds.

        Raises
        ------
        TypeError
            The value is not an int or float, or not finite.
        """
        value = self._clock() if now is None else now
        if type(value) not in (int, float) or value != value or value in (float("inf"), float("-inf")):
            raise TypeError("the clock must give a finite number of unix seconds")
        return value

    def now_eff(self, clock: float) -> float:
        """The effective clock: never below the floors.

        ``max(clock, time_floor, PLAUSIBLE_CLOCK)``: a clock reset to 0 on a fresh device
        still refuses bundles that expired before 2020-09-13.
        """
        return max(clock, self._store.body["time_floor"], PLAUSIBLE_CLOCK)

    def plausible(self, clock: float) -> bool:
        """False for a clock that is known wrong: behind the floor or before PLAUSIBLE_CLOCK."""
        return clock >= max(self._store.body["time_floor"], PLAUSIBLE_CLOCK)
