"""Release: the bundle in use and the device's permanent releases.

Releases: :meth:`DeviceState.release_index` draws the output for input cluster c from
:func:`release_bits` (HMAC of the secret, the bundle's sha256 and c), so asking again returns
the same release (RAPPOR-style permanent randomized response; see :mod:`privmap.device.randomness`).
"""
from __future__ import annotations

from collections.abc import Sequence

from ..errors import BundleError, NoValidBundleError, StateError
from ..format import Limits
from ..kinds import Bundle, GaussianBundle, NullspaceBundle, kind_of, release_index
from ..load import load_bundle
from ..randomness import DerivedBits, release_bits
from ..trust import Binding, check_binding
from ._clock import Clock
from ._install import Installer
from ._store import Store, sha256_hex

__all__ = ["Releaser"]


class Releaser:
    """Using the installed bundle (module docstring).

    A part of ``DeviceState``, reading through ``store``'s shared lock with the keyring
    ``installer`` keeps; releases draw from the store's secret.

    Parameters
    ----------
    store : Store
        The state directory.
    clock : Clock
        The time the device believes.
    installer : Installer
        Whose trusted keyring the bundles are verified with.
    limits : Limits
        Resource limits passed to the loader.
    binding : Binding | None
        The device's private attribute and feature schema, checked at use.
    grace : int
        Seconds an expired bundle is still used.
    """

    def __init__(self, store: Store, clock: Clock, installer: Installer, *, limits: Limits,
                 binding: Binding | None, grace: int) -> None:
        self._store, self._clock, self._installer = store, clock, installer
        self._limits, self._binding, self._grace = limits, binding, grace

    def active(self, clock: float) -> Bundle | GaussianBundle | NullspaceBundle:
        """The bundle to release with at ``clock``.

        As :meth:`DeviceState.active`; raises what it raises, and ``OSError``.
        """
        store = self._store
        with store.locked(exclusive=False):
            state = store.load(writer=False)
            copies: list[tuple[str, str, bytes | str]] = []
            for role, sha in (("active", state["active"]), ("previous", state["previous"])):
                if sha is None:
                    continue
                try:
                    copies.append((role, sha, store.read_bundle(sha)))
                except (OSError, StateError) as exc:  # a too-long file fails the hash check below
                    copies.append((role, sha, f"unreadable ({getattr(exc, 'strerror', None) or exc})"))
        if state["active"] is None:
            raise NoValidBundleError("no bundle is installed in this state directory")
        keyring, problems = self._installer.chain(state).keyring, []
        for role, sha, data in copies:
            if isinstance(data, str):
                problems.append(f"{role}: {data}")
                continue
            if sha256_hex(data) != sha:
                problems.append(f"{role}: bytes on disk do not match the recorded sha256")
                continue
            try:
                bundle = load_bundle(data, keyring, now=self._clock.now_eff(clock) - self._grace,
                                     limits=self._limits, max_skew=None)
                check_binding(bundle, self._binding)
                return bundle
            except BundleError as exc:
                problems.append(f"{role}: {type(exc).__name__}: {exc}")
        raise NoValidBundleError("no usable bundle (" + "; ".join(problems) + "); nothing is released")

    def release_source(self, bundle: Bundle, c: int) -> DerivedBits:
        """The permanent bit source of input ``c`` under ``bundle`` (:meth:`DeviceState.release_source`)."""
        if not isinstance(bundle, Bundle):
            raise TypeError("bundle must be a privmap.device.Bundle")
        return release_bits(self._store.secret, bundle.sha256, c)

    def release_index(self, bundle: Bundle, row: Sequence[object]) -> int:
        """Output index released for ``row`` under ``bundle`` (:meth:`DeviceState.release_index`)."""
        return release_index(bundle, row, self._store.secret)

    def sanitize(self, bundle: Bundle | GaussianBundle | NullspaceBundle, row: Sequence[object]) -> list:
        """Released cells for a row, permanent for this device.

        Released cells for ``row``, permanent for this device (:meth:`DeviceState.sanitize`): its
        kind's release (:class:`privmap.device.kinds.Kind`) from this device's secret.
        """
        kind = kind_of(getattr(bundle, "mechanism", None))
        if kind is None:
            raise TypeError("bundle must be a privmap.device.Bundle")
        return kind.release(bundle, row, self._store.secret)
