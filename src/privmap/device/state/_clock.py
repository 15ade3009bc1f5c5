"""Clock and floors: the time the device believes and the floors the state holds.

Time: ``now_eff = max(clock, time_floor, PLAUSIBLE_CLOCK)``, read once per operation, so a clock
reset to 1970 cannot revive an expired bundle and the floor never decreases (except through a
signed keyring rotation, below). A bundle issued more than ``max_skew`` seconds after the clock
is refused (:class:`FutureBundleError`) unless the clock is known to be wrong (behind the floor,
or before :data:`PLAUSIBLE_CLOCK`), and a bundle issued after :data:`LATEST_ISSUED_AT` is refused
whatever the clock says. An active bundle past ``expires`` still releases for ``grace`` seconds
(status ``"stale"``), then nothing is released (:class:`NoValidBundleError`).
"""
from __future__ import annotations

from ..constants import PLAUSIBLE_CLOCK

__all__ = ["Floors"]


class Floors:
    """What the state says about versions and time (module docstring): a part of ``DeviceState``,
    reading the clock (``_clock``) and the state the store loaded last (``_state``)."""

    @property
    def installed_version(self) -> int:
        """The version floor: version of the active bundle, or after a keyring rotation the
        highest version the new keyring vouches for (0 if none); as of the last operation."""
        return self._state["version"]

    @property
    def time_floor(self) -> int:
        """Latest ``issued_at`` of any verified bundle, unix seconds (never decreases except
        through a signed keyring rotation)."""
        return self._state["time_floor"]

    @property
    def active_sha256(self) -> str | None:
        return self._state["active"]

    def now_eff(self, clock: float) -> float:
        """``max(clock, time_floor, PLAUSIBLE_CLOCK)``: a clock reset to 0 on a fresh device
        still refuses bundles that expired before 2020-09-13."""
        return max(clock, self._state["time_floor"], PLAUSIBLE_CLOCK)

    def _clock_plausible(self, clock: float) -> bool:
        """False for a clock that is known wrong: behind the floor or before PLAUSIBLE_CLOCK."""
        return clock >= max(self._state["time_floor"], PLAUSIBLE_CLOCK)

    def _read_clock(self, now) -> float:
        value = self._clock() if now is None else now
        if type(value) not in (int, float) or value != value or value in (float("inf"), float("-inf")):
            raise TypeError("the clock must give a finite number of unix seconds")
        return value
