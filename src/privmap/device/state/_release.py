"""Release: the bundle in use, the operator's report, and the device's permanent releases.

Releases: :meth:`DeviceState.release_index` draws the output for input cluster c from
:func:`release_bits` (HMAC of the secret, the bundle's sha256 and c), so asking again returns
the same release (RAPPOR-style permanent randomized response; see :mod:`privmap.device.randomness`).
"""
from __future__ import annotations

import os

from ..errors import BundleError, NoValidBundleError, StateError
from ..kinds import Bundle, GaussianBundle, NullspaceBundle
from ..load import load_bundle
from ..randomness import DerivedBits, draw_bits, record_bits, release_bits, sample_row
from ..trust import check_binding
from ._store import _read_regular, _sha

__all__ = ["Releaser"]


class Releaser:
    """Using the installed bundle (module docstring): a part of ``DeviceState``, reading through
    the store's shared lock with the install part's keyring; releases draw from the store's
    ``_secret``. Reads ``limits``, ``binding`` and ``grace``; sets ``last_error``."""

    # -- using ----------------------------------------------------------------------------------

    def active(self, *, now=None) -> Bundle:
        """The bundle to release with: the active one re-verified from disk, or the previous
        known-good copy if the active file fails (THREATS G3).

        The state and both files are read under a shared lock (concurrent readers go side by
        side; an install waits), then each copy must hash to the sha256 the state recorded and
        pass :func:`load_bundle` again with the state's keyring (at ``now_eff - grace``, so an
        expired bundle is still used within the grace period). Raises
        :class:`NoValidBundleError` if none is installed or neither copy passes, and
        :class:`StateError` (or :class:`StateReplayError`) if the state cannot be read
        (:class:`StateLockedError` if a writer holds the lock for all of ``lock_wait``).
        """
        clock = self._read_clock(now)
        with self._os_errors("cannot read the state directory"), self._locked(exclusive=False):
            state = self._load(writer=False)
            copies = []
            for role in ("active", "previous"):
                sha = state[role]
                if sha is None:
                    continue
                try:
                    copies.append((role, sha, _read_regular(os.path.join(self._bundles, f"{sha}.bundle"),
                                                            self.limits.max_bundle_bytes)))
                except (OSError, StateError) as exc:  # a too-long file fails the hash check below
                    copies.append((role, sha, f"unreadable ({getattr(exc, 'strerror', None) or exc})"))
        if state["active"] is None:
            raise NoValidBundleError("no bundle is installed in this state directory")
        keyring, problems = self._chain(state).keyring, []
        for role, sha, data in copies:
            if isinstance(data, str):
                problems.append(f"{role}: {data}")
                continue
            if _sha(data) != sha:
                problems.append(f"{role}: bytes on disk do not match the recorded sha256")
                continue
            try:
                bundle = load_bundle(data, keyring, now=self.now_eff(clock) - self.grace, limits=self.limits,
                                     max_skew=None)
                check_binding(bundle, self.binding)
                return bundle
            except BundleError as exc:
                problems.append(f"{role}: {type(exc).__name__}: {exc}")
        message = "no usable bundle (" + "; ".join(problems) + "); nothing is released"
        self.last_error = f"NoValidBundleError: {message}"
        raise NoValidBundleError(message)

    def status(self, *, now=None) -> dict:
        """A report for the operator: ``state`` is ``"ok"``, ``"stale"`` (past ``expires``,
        still releasing within the grace period), ``"fallback"`` (the previous copy is in use),
        ``"no_bundle"`` (nothing is released), plus version, sha256, time floor, keyring
        version, the counter value the state commits to, and the last error seen (its class
        name names the attack or fault, THREATS G7)."""
        clock = self._read_clock(now)
        report = {"clock": clock}
        try:
            bundle = self.active(now=clock)
        except NoValidBundleError:
            report["state"] = "no_bundle"
        else:
            if bundle.sha256 != self.active_sha256:
                report["state"] = "fallback"
            elif bundle.expires <= self.now_eff(clock):
                report["state"] = "stale"
            else:
                report["state"] = "ok"
            report["in_use_sha256"], report["in_use_version"] = bundle.sha256, bundle.version
        report.update({"version": self.installed_version, "time_floor": self.time_floor,
                       "active_sha256": self.active_sha256, "clock_plausible": self._clock_plausible(clock),
                       "keyring_version": self.keyring_version, "counter": self._state["counter"],
                       "last_error": self.last_error})
        return report

    def release_source(self, bundle: Bundle, c: int) -> DerivedBits:
        """The permanent bit source of input ``c`` (0 <= c < 2**64) under ``bundle``: a
        ``randbits(k)`` source for any release path of this device (the table sampler here; a
        noise mechanism keyed by its own input index, e.g. the first 8 bytes of a hash of the
        canonical row, as an int)."""
        if not isinstance(bundle, Bundle):
            raise TypeError("bundle must be a privmap.device.Bundle")
        return release_bits(self._secret, bundle.sha256, c)

    def release_index(self, bundle: Bundle, row) -> int:
        """Output index released for ``row`` under ``bundle``: the permanent draw of its input
        cluster (same row, same bundle, same device -> same index). Raises InputError."""
        if not isinstance(bundle, Bundle):
            raise TypeError("bundle must be a privmap.device.Bundle")
        c = bundle.lookup(row)
        r = draw_bits(self.release_source(bundle, c), bundle.bits)
        return sample_row(bundle.index[c], bundle.weight[c], r)

    def sanitize(self, bundle, row) -> list:
        """Released cells for ``row``, permanent for this device: a table bundle releases the
        representative of :meth:`release_index`; a Gaussian-noise bundle draws its noise from
        :func:`record_bits` of the parsed row; a null-space bundle is deterministic already.
        The raw row never leaves. Raises InputError and what the bundle's release raises."""
        if isinstance(bundle, GaussianBundle):
            return bundle.sanitize(row, rng=record_bits(self._secret, bundle.sha256, bundle.record(row)))
        if isinstance(bundle, NullspaceBundle):
            return bundle.sanitize(row)
        return bundle.representative(self.release_index(bundle, row))
