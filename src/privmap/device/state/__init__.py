"""A device that remembers: installed bundles, version and time floors, permanent releases.

The top layer of the device's stack: it installs through the load workflow and releases through
the kinds. Private modules: ``_state`` (:class:`DeviceState`, composed of ``_store`` (store and
lock), ``_clock`` (clock and floors), ``_install`` (install and rotation) and ``_release``
(release)), ``_counter`` (the monotonic-counter interface against replay of an old state file).
"""
from __future__ import annotations

from ._counter import MonotonicCounter
from ._install import InstallResult
from ._state import DeviceState

__all__ = ["DeviceState", "InstallResult", "MonotonicCounter"]
