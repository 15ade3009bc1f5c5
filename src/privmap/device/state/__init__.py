"""A device that remembers: installed bundles, version and time floors, permanent releases.

The top layer of the device's stack: it installs through the load workflow and releases through
the kinds. Private modules: ``_state`` (:class:`DeviceState`: atomic installs, rollback and
equivocation refused, one writer at a time), ``_counter`` (the monotonic-counter interface
against replay of an old state file).
"""
from __future__ import annotations

from ._counter import MonotonicCounter
from ._state import MAX_HISTORY, DeviceState, InstallResult

__all__ = ["DeviceState", "InstallResult", "MonotonicCounter", "MAX_HISTORY"]
