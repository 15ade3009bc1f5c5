"""Install and rotation: a bundle made active, the trusted keyring moved on.

Installing writes the new bundle file (temp file, fsync, rename, fsync directory), then replaces
``state.json`` the same way; that rename is the one commit point, so any failure before it leaves
the active bundle and the state byte-identical.

Rotation (:meth:`DeviceState.rotate_keyring`, THREATS C8, C9): after a signed keyring rotation
the floors are recomputed from what the new keyring still vouches for: the version floor is the
highest installed version whose recorded signers meet the new keyring's threshold, the time floor
the latest ``issued_at`` among those. A kept key vouches for a date only within the new
document's window: an ``issued_at`` at or after the document's own signed ``expires``, or (when
the clock at the rotation is plausible) later than that clock plus ``max_skew``, a date no
install would accept now, is reset to 0 in the record and counts for nothing. A compromised key
revoked by the rotation therefore takes back what it pushed forward (a version of 2**62, an
``issued_at`` in 2099), a kept key that signed a mis-dated bundle loses the date (its version
stays), and in both cases a bundle issued now installs right after the rotation: the new
document is never expired by the floor it leaves.
"""
from __future__ import annotations

import os
from typing import NamedTuple

from ..constants import LATEST_ISSUED_AT, MAX_ROTATIONS, PLAUSIBLE_CLOCK
from ..errors import (
    BundleError,
    BundleTooLargeError,
    EquivocationError,
    FutureBundleError,
    KeyringError,
    KeyringMismatchError,
    StateError,
)
from ..files import atomic_write
from ..format import decode_envelope
from ..load import load_bundle
from ..trust import Keyring, KeyringChain, check_binding, verify_envelope
from ._store import _canonical, _chain_of, _read_regular, _sha, _trust_body

__all__ = ["Installer", "InstallResult", "MAX_HISTORY"]

#: Installed versions whose sha256 the state remembers (older ones are below the floor anyway).
MAX_HISTORY = 256


class InstallResult(NamedTuple):
    """What :meth:`DeviceState.install` did: ``status`` is ``"installed"``, ``"no_update"``
    (the same bytes were already active and stored intact, THREATS D2; nothing was written) or
    ``"repaired"`` (the same bytes were already active but their stored copy was missing or
    damaged; it was written back, THREATS G10)."""

    status: str
    version: int
    sha256: str


def _same_keys(a: Keyring, b: Keyring) -> bool:
    return a.key_ids == b.key_ids and a.threshold == b.threshold


def _describe(keyring: Keyring) -> str:
    ids = ", ".join(k.hex()[:16] for k in sorted(keyring.key_ids))
    return f"{keyring.threshold} of [{ids}]"


def _vouched(entry: dict, keyring: Keyring) -> bool:
    """Whether the keys that signed an installed bundle (recorded at install) still meet
    ``keyring``'s threshold. An entry from a format-1 state has no record and counts as
    vouched, so its floors are kept."""
    if entry["signers"] is None:
        return True
    ids = {k.hex() for k in keyring.key_ids}
    return len(ids.intersection(entry["signers"])) >= keyring.threshold


class Installer:
    """Installing bundles and rotating the keyring (module docstring): a part of ``DeviceState``,
    writing through the store's lock and commit at the clock part's ``now_eff``. Holds
    ``_chain_cache`` (the keyring chain of the state's trust) and sets ``last_error``; reads
    ``limits``, ``binding`` and ``max_skew``."""

    # -- the keyring ------------------------------------------------------------------------------

    def _chain(self, body: dict | None = None) -> KeyringChain:
        """The trusted keyring chain the state holds (rebuilt only when it changed)."""
        trust = (body or self._state)["trust"]
        key = _canonical(trust)
        if self._chain_cache is None or self._chain_cache[0] != key:
            if trust["document"] is not None:
                chain = KeyringChain(bytes.fromhex(trust["document"]))
            else:
                chain = KeyringChain.pinned(Keyring([bytes.fromhex(k) for k in trust["keys"]],
                                                    threshold=trust["threshold"]))
            self._chain_cache = (key, chain)
        return self._chain_cache[1]

    @property
    def keyring(self) -> Keyring:
        """The keyring bundles are verified with (the state's, as of the last operation)."""
        return self._chain().keyring

    @property
    def keyring_version(self) -> int:
        """Version of the trusted keyring document (0 for bare keys never rotated)."""
        return self._chain().version

    def _reconcile_keyring(self, body: dict, given) -> None:
        if body["trust"] is None:  # a format-1 state: pin the keyring given now
            if given is None:
                raise StateError(f"state file in {self.path!r} holds no keyring; open it with one")
            self._commit({**body, "trust": _trust_body(_chain_of(given), [])})
            return
        if given is None or self._holds(body, given):
            return
        held = self._chain(body)
        offered = _chain_of(given)
        if offered.document is not None and offered.version == held.version + 1:
            self._rotate_locked(body, [offered.document], self._read_clock(None))
            return
        raise KeyringMismatchError(
            f"the state directory {self.path!r} trusts keyring version {held.version} "
            f"({_describe(held.keyring)}); the keyring given ({_describe(offered.keyring)}"
            f"{'' if offered.document is None else f', version {offered.version}'}) is not it and "
            "is not a signed rotation of it; a new key must arrive as a signed keyring document "
            "(privmap state rotate / DeviceState.rotate_keyring)")

    def _holds(self, body: dict, given) -> bool:
        """Whether ``given`` is the keyring ``body`` trusts: the same bare keys and threshold,
        or the same signed document or one it was rotated from."""
        held = self._chain(body)
        offered = _chain_of(given)
        if offered.document is None:  # bare keys: they must be the keys the state holds
            return _same_keys(offered.keyring, held.keyring)
        digest = _sha(offered.document)
        return (held.document is not None and digest == _sha(held.document)) or digest in body["trust"]["history"]

    def rotate_keyring(self, documents, *, now=None) -> int:
        """Move the trusted keyring through the signed keyring ``documents`` (bytes, each the
        next version; at most :data:`MAX_ROTATIONS` are walked) and recompute the floors from
        what the new keyring still vouches for (module docstring; THREATS C8, C9).

        All or nothing: if any document fails (:class:`KeyringVersionError`,
        :class:`KeyringError`) the state is unchanged. Returns how many were applied. ``now``
        (unix seconds; default: the clock) is the rotation's clock: when plausible, dates of
        kept keys beyond it plus ``max_skew`` are reset (module docstring). Raises
        :class:`StateError` if the directory cannot be written.
        """
        documents = [documents] if isinstance(documents, (bytes, bytearray)) else list(documents)
        if not documents:
            return 0
        clock = self._read_clock(now)
        try:
            with self._os_errors("cannot write the state directory"), self._locked(exclusive=True):
                body = self._load(writer=True)
                applied = self._rotate_locked(body, documents, clock)
                self._clean()
        except (KeyringError, StateError) as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            raise
        self.last_error = None
        return applied

    def _rotate_locked(self, body: dict, documents: list, clock: float) -> int:
        held = self._chain(body)
        chain = KeyringChain.pinned(held.keyring) if held.document is None else KeyringChain(held.document)
        history = list(body["trust"]["history"])
        for document in documents[:MAX_ROTATIONS]:
            before = chain.document
            chain.rotate(bytes(document))
            if before is not None:
                history.append(_sha(before))
        keyring = chain.keyring
        horizon = float("inf")  # the latest date the new keyring vouches for now
        if chain.expires is not None:
            horizon = chain.expires - 1
        if clock >= PLAUSIBLE_CLOCK:
            horizon = min(horizon, clock + self.max_skew)
        installed, floor = {}, 0
        for version, entry in body["installed"].items():
            if not _vouched(entry, keyring):
                continue
            date = body["time_floor"] if entry["issued_at"] is None else entry["issued_at"]
            if date > horizon:  # a kept key's date beyond the new window: reset, its version stays
                entry, date = {**entry, "issued_at": 0}, 0
            installed[version] = entry
            floor = max(floor, date)
        self._commit({**body, "version": max(map(int, installed), default=0), "time_floor": floor,
                      "installed": installed, "trust": _trust_body(chain, history)})
        return min(len(documents), MAX_ROTATIONS)

    # -- installing -------------------------------------------------------------------------------

    def install(self, data, *, now=None) -> InstallResult:
        """Verify ``data`` (a whole bundle file) and make it the active bundle, atomically.

        The bundle already active with its stored copy intact is answered under a shared lock
        (``"no_update"``: no write, never held up by a reader); anything else runs under the
        exclusive lock on a fresh read of the state. The clock is read once. Checks, in order: same bytes as the active bundle -> ``"no_update"`` (nothing written),
        or ``"repaired"`` if the stored copy was missing or damaged (it is written back, G10);
        the trusted keyring has not expired (``KeyringExpiredError``); everything
        :func:`load_bundle` checks, at ``now_eff`` with ``min_version`` = the version floor
        (``RollbackError``, ``ExpiredBundleError``, ...); ``issued_at`` after
        :data:`LATEST_ISSUED_AT`, or beyond the clock plus ``max_skew`` when the clock is
        plausible (:class:`FutureBundleError`); a version installed before with other bytes
        (:class:`EquivocationError`). On any error nothing on disk changes and the error is
        also kept in ``last_error`` for :meth:`status`. Raises :class:`StateError` if the
        directory cannot be written (the state is then still the old one), and
        :class:`StateLockedError` if another process holds the lock for all of ``lock_wait``.
        """
        try:
            with self._os_errors("cannot write the state directory"):
                result = self._install(data, now)
        except (BundleError, KeyringError, StateError) as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            raise
        self.last_error = None
        return result

    def _install(self, data, now) -> InstallResult:
        clock = self._read_clock(now)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("data must be bytes")
        data = bytes(data)
        sha = _sha(data)
        name = f"{sha}.bundle"
        with self._locked(exclusive=False):  # the bundle already installed, intact: no write, no wait
            state = self._load(writer=False)
            if sha == state["active"] and self._stored_copy(sha) == data:
                return InstallResult("no_update", state["version"], sha)
        with self._locked(exclusive=True):
            state = self._load(writer=True)
            if sha == state["active"]:
                if self._stored_copy(sha) == data:
                    return InstallResult("no_update", state["version"], sha)
                atomic_write(self._bundles, name, data, 0o644)  # self-repair: the verified bytes
                return InstallResult("repaired", state["version"], sha)
            now_eff = self.now_eff(clock)
            keyring = self._chain(state).current(now_eff)
            bundle = load_bundle(data, keyring, now=now_eff, min_version=max(1, state["version"]),
                                 limits=self.limits, max_skew=None)
            check_binding(bundle, self.binding)
            if bundle.issued_at > LATEST_ISSUED_AT:
                raise FutureBundleError(f"bundle issued_at {bundle.issued_at} is after {LATEST_ISSUED_AT} "
                                        "(2100-01-01), the latest a device accepts whatever its clock says")
            if self._clock_plausible(clock) and bundle.issued_at > clock + self.max_skew:
                raise FutureBundleError(
                    f"bundle issued_at {bundle.issued_at} is more than {self.max_skew} s after the clock")
            installed = dict(state["installed"])
            known = installed.get(str(bundle.version))
            if known is not None and known["sha256"] != sha:
                raise EquivocationError(
                    f"version {bundle.version} was installed with sha256 {known['sha256'][:16]}..., "
                    f"this bundle has {sha[:16]}...")
            signers = verify_envelope(decode_envelope(data, self.limits), keyring)[1]
            installed[str(bundle.version)] = {"sha256": sha, "issued_at": bundle.issued_at,
                                              "signers": [s.hex() for s in signers]}
            for old in sorted(installed, key=int)[:-MAX_HISTORY]:
                del installed[old]
            new = {**state, "version": bundle.version, "time_floor": max(state["time_floor"], bundle.issued_at),
                   "installed": installed, "active": sha, "previous": state["active"]}
            try:
                atomic_write(self._bundles, name, data, 0o644)
                self._commit(new)
            except OSError:
                self._state = state
                if sha not in (state["active"], state["previous"]):
                    try:
                        os.unlink(os.path.join(self._bundles, name))
                    except OSError:
                        pass
                raise
            self._clean()
        return InstallResult("installed", bundle.version, sha)

    def install_file(self, path, *, now=None) -> InstallResult:
        """:meth:`install` the bundle file at ``path`` (read once, at most
        ``limits.max_bundle_bytes + 1`` bytes; a FIFO or device is refused, not read)."""
        cap = self.limits.max_bundle_bytes
        try:
            data = _read_regular(os.fspath(path), cap)
        except StateError as exc:
            raise BundleError(str(exc)) from None
        except OSError as exc:
            raise BundleError(f"cannot read bundle file {os.fspath(path)!r}: {exc.strerror}") from None
        if len(data) > cap:
            raise BundleTooLargeError(f"bundle file is larger than {cap} bytes")
        return self.install(data, now=now)
