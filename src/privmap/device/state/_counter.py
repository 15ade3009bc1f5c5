"""A monotonic counter the firmware provides, to bind the state file against replay (THREATS G9).

``state.json`` is authenticated with an HMAC under the device secret, which stops forgery but
not replay: whoever can rewrite the state directory can put back an older ``state.json`` (and
the bundle files it names) and so restore an older version floor and time floor. A counter that
only goes up and lives outside the directory stops that. Back it with hardware:

- a TPM 2.0 NV counter (``TPM2_NV_Increment``, ``TPM2_NV_Read`` on an index with
  ``TPMA_NV_COUNTER``);
- a counter block that privmap alone owns, written through the eMMC RPMB (authenticated writes).
  Not the RPMB **write counter** itself where anything else writes the partition (a bootloader,
  another trusted application): every authenticated write advances it, so it runs ahead of the
  state and the device refuses its own state (:class:`StateReplayError`: "ahead of the device
  counter") after someone else's write, and an increment may jump by more than one. Use the
  write counter only where privmap is provably its only writer;
- a secure element's monotonic counter.

:class:`DeviceState` (``counter=``) stores in every state it writes the counter value that state
commits to, writes the state, then increments the counter. On every read the state's value must
equal the counter's (or be one ahead: a commit cut short after the state was renamed but before
the increment, which the next writer completes), else :class:`StateReplayError`. What stays
open is in docs/threats-coverage.md (G9). A counter-bound device whose directory is lost opens
again only through the operator's explicit :meth:`DeviceState.reprovision` (a fresh directory
bound at the counter's current value; ``privmap state reprovision``).
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["MonotonicCounter"]


@runtime_checkable
class MonotonicCounter(Protocol):
    """What the device state needs from a hardware monotonic counter.

    Both methods raise ``OSError`` (or any exception; :class:`DeviceState` turns it into a
    :class:`StateError` and fails closed) when the hardware cannot be reached.
    """

    def read(self) -> int:
        """The counter's current value, an int >= 0 (0 for a counter never incremented)."""

    def increment(self) -> int:
        """Add exactly 1, durably, and return the new value. Never goes down, never wraps."""
