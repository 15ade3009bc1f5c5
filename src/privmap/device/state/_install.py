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

from collections.abc import Sequence
from typing import NamedTuple

from ..constants import LATEST_ISSUED_AT, MAX_ROTATIONS, PLAUSIBLE_CLOCK
from ..errors import EquivocationError, FutureBundleError, KeyringMismatchError, StateError
from ..format import Limits, decode_envelope
from ..load import load_bundle
from ..trust import Binding, Keyring, KeyringChain, check_binding, verify_envelope
from ._clock import Clock
from ._store import Body, Entry, Store, TrustBody, canonical, chain_of, sha256_hex, trust_body

__all__ = ["Installer", "InstallResult", "MAX_HISTORY"]

#: Installed versions whose sha256 the state remembers (older ones are below the floor anyway).
MAX_HISTORY = 256


class InstallResult(NamedTuple):
    """What :meth:`DeviceState.install` did.

    What :meth:`DeviceState.install` did: ``status`` is ``"installed"``, ``"no_update"``
    (the same bytes were already active and stored intact, THREATS D2; nothing was written) or
    ``"repaired"`` (the same bytes were already active but their stored copy was missing or
    damaged; it was written back, THREATS G10).
    """

    status: str
    version: int
    sha256: str


def _same_keys(a: Keyring, b: Keyring) -> bool:
    return a.key_ids == b.key_ids and a.threshold == b.threshold


def _describe(keyring: Keyring) -> str:
    ids = ", ".join(k.hex()[:16] for k in sorted(keyring.key_ids))
    return f"{keyring.threshold} of [{ids}]"


def _vouched(entry: Entry, keyring: Keyring) -> bool:
    """Whether the signers of an installed bundle still meet a keyring's threshold.

    Whether the keys that signed an installed bundle (recorded at install) still meet
    ``keyring``'s threshold. An entry from a format-1 state has no record and counts as
    vouched, so its floors are kept.
    """
    if entry["signers"] is None:
        return True
    ids = {k.hex() for k in keyring.key_ids}
    return len(ids.intersection(entry["signers"])) >= keyring.threshold


class Installer:
    """Installing bundles and rotating the trusted keyring (module docstring).

    A part of ``DeviceState``, writing through ``store``'s lock and commit at ``clock``'s
    ``now_eff``.
    It is the :class:`~._store.KeyringPolicy` the store opens a directory with.

    Parameters
    ----------
    store : Store
        The state directory.
    clock : Clock
        The time the device believes.
    limits : Limits
        Resource limits passed to the loader.
    binding : Binding | None
        The device's private attribute and feature schema, checked at install.
    max_skew : int
        Seconds a bundle may be issued after a plausible clock.
    """

    def __init__(self, store: Store, clock: Clock, *, limits: Limits, binding: Binding | None,
                 max_skew: int) -> None:
        self._store, self._clock = store, clock
        self._limits, self._binding, self._max_skew = limits, binding, max_skew
        self._chain_cache: tuple[bytes, KeyringChain] | None = None

    # -- the keyring ------------------------------------------------------------------------------

    def chain(self, body: Body) -> KeyringChain:
        """The trusted keyring chain ``body`` holds (rebuilt only when it changed).

        Raises
        ------
        StateError
            ``body`` holds no keyring (a format-1 state an open has not pinned one in).
        """
        trust = self._trust(body)
        key = canonical(trust)
        if self._chain_cache is None or self._chain_cache[0] != key:
            if trust["document"] is not None:
                chain = KeyringChain(bytes.fromhex(trust["document"]))
            else:
                chain = KeyringChain.pinned(Keyring([bytes.fromhex(k) for k in trust["keys"]],
                                                    threshold=trust["threshold"]))
            self._chain_cache = (key, chain)
        return self._chain_cache[1]

    def _trust(self, body: Body) -> TrustBody:
        if body["trust"] is None:
            raise StateError(f"state file in {self._store.path!r} holds no keyring; open it with one")
        return body["trust"]

    def reconcile(self, body: Body, given: Keyring | KeyringChain | None) -> None:
        """A keyring given at open, pinned, rotated to or refused.

        Pin ``given`` in a format-1 ``body``, apply it as a signed rotation (the next version),
        or refuse it; the caller holds the exclusive lock.

        Raises
        ------
        StateError
            ``body`` holds no keyring and none was given.
        KeyringMismatchError, KeyringError
            ``given`` is not the keyring ``body`` trusts, or its rotation fails.
        """
        if body["trust"] is None:  # a format-1 state: pin the keyring given now
            if given is None:
                raise StateError(f"state file in {self._store.path!r} holds no keyring; open it with one")
            self._store.commit({**body, "trust": trust_body(chain_of(given), [])})
            return
        if given is None or self.holds(body, given):
            return
        held = self.chain(body)
        offered = chain_of(given)
        if offered.document is not None and offered.version == held.version + 1:
            self._rotate_locked(body, [offered.document], self._clock.read(None))
            return
        raise KeyringMismatchError(
            f"the state directory {self._store.path!r} trusts keyring version {held.version} "
            f"({_describe(held.keyring)}); the keyring given ({_describe(offered.keyring)}"
            f"{'' if offered.document is None else f', version {offered.version}'}) is not it and "
            "is not a signed rotation of it; a new key must arrive as a signed keyring document "
            "(privmap state rotate / DeviceState.rotate_keyring)")

    def holds(self, body: Body, given: Keyring | KeyringChain) -> bool:
        """Whether a keyring is the one a state body trusts.

        Whether ``given`` is the keyring ``body`` trusts: the same bare keys and threshold,
        or the same signed document or one it was rotated from.
        """
        held = self.chain(body)
        offered = chain_of(given)
        if offered.document is None:  # bare keys: they must be the keys the state holds
            return _same_keys(offered.keyring, held.keyring)
        digest = sha256_hex(offered.document)
        return ((held.document is not None and digest == sha256_hex(held.document))
                or digest in self._trust(body)["history"])

    def rotate(self, documents: Sequence[bytes], clock: float) -> int:
        """How many signed keyring documents were applied.

        Apply the signed keyring ``documents`` (at least one) under the exclusive lock and
        recompute the floors (:meth:`DeviceState.rotate_keyring`); returns how many were
        applied. Raises what :meth:`DeviceState.rotate_keyring` raises, and ``OSError``.
        """
        with self._store.locked(exclusive=True):
            applied = self._rotate_locked(self._store.load(writer=True), documents, clock)
            self._store.clean()
        return applied

    def _rotate_locked(self, body: Body, documents: Sequence[bytes], clock: float) -> int:
        held = self.chain(body)
        chain = KeyringChain.pinned(held.keyring) if held.document is None else KeyringChain(held.document)
        history = list(self._trust(body)["history"])
        for document in documents[:MAX_ROTATIONS]:
            before = chain.document
            chain.rotate(bytes(document))
            if before is not None:
                history.append(sha256_hex(before))
        keyring = chain.keyring
        horizon = float("inf")  # the latest date the new keyring vouches for now
        if chain.expires is not None:
            horizon = chain.expires - 1
        if clock >= PLAUSIBLE_CLOCK:
            horizon = min(horizon, clock + self._max_skew)
        installed: dict[str, Entry] = {}
        floor = 0
        for version, entry in body["installed"].items():
            if not _vouched(entry, keyring):
                continue
            date = body["time_floor"] if entry["issued_at"] is None else entry["issued_at"]
            if date > horizon:  # a kept key's date beyond the new window: reset, its version stays
                entry, date = {**entry, "issued_at": 0}, 0
            installed[version] = entry
            floor = max(floor, date)
        self._store.commit({**body, "version": max(map(int, installed), default=0), "time_floor": floor,
                            "installed": installed, "trust": trust_body(chain, history)})
        return min(len(documents), MAX_ROTATIONS)

    # -- installing -------------------------------------------------------------------------------

    def install(self, data: bytes | bytearray | memoryview, clock: float) -> InstallResult:
        """The result of installing a bundle's bytes.

        Verify ``data`` at ``clock`` and make it the active bundle (:meth:`DeviceState.install`).
        Raises what :meth:`DeviceState.install` raises, ``TypeError`` for ``data`` that is not
        bytes, and ``OSError``.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("data must be bytes")
        data = bytes(data)
        sha = sha256_hex(data)
        store = self._store
        with store.locked(exclusive=False):  # the bundle already installed, intact: no write, no wait
            state = store.load(writer=False)
            if sha == state["active"] and store.stored_copy(sha) == data:
                return InstallResult("no_update", state["version"], sha)
        with store.locked(exclusive=True):
            state = store.load(writer=True)
            if sha == state["active"]:
                if store.stored_copy(sha) == data:
                    return InstallResult("no_update", state["version"], sha)
                store.write_bundle(sha, data)  # self-repair: the verified bytes
                return InstallResult("repaired", state["version"], sha)
            new, version = self._verified(data, sha, state, clock)
            try:
                store.write_bundle(sha, data)
                store.commit(new)
            except OSError:
                store.body = state
                if sha not in (state["active"], state["previous"]):
                    store.discard_bundle(sha)
                raise
            store.clean()
        return InstallResult("installed", version, sha)

    def _verified(self, data: bytes, sha: str, state: Body, clock: float) -> tuple[Body, int]:
        """The state with a verified bundle installed, and its version.

        The state with ``data`` (whose sha256 is ``sha``) installed on ``state``, and its
        version, once every check of :meth:`DeviceState.install` passed.
        """
        now_eff = self._clock.now_eff(clock)
        keyring = self.chain(state).current(now_eff)
        bundle = load_bundle(data, keyring, now=now_eff, min_version=max(1, state["version"]),
                             limits=self._limits, max_skew=None)
        check_binding(bundle, self._binding)
        if bundle.issued_at > LATEST_ISSUED_AT:
            raise FutureBundleError(f"bundle issued_at {bundle.issued_at} is after {LATEST_ISSUED_AT} "
                                    "(2100-01-01), the latest a device accepts whatever its clock says")
        if self._clock.plausible(clock) and bundle.issued_at > clock + self._max_skew:
            raise FutureBundleError(
                f"bundle issued_at {bundle.issued_at} is more than {self._max_skew} s after the clock")
        installed = dict(state["installed"])
        known = installed.get(str(bundle.version))
        if known is not None and known["sha256"] != sha:
            raise EquivocationError(
                f"version {bundle.version} was installed with sha256 {known['sha256'][:16]}..., "
                f"this bundle has {sha[:16]}...")
        signers = verify_envelope(decode_envelope(data, self._limits), keyring)[1]
        installed[str(bundle.version)] = {"sha256": sha, "issued_at": bundle.issued_at,
                                          "signers": [s.hex() for s in signers]}
        for old in sorted(installed, key=int)[:-MAX_HISTORY]:
            del installed[old]
        new: Body = {**state, "version": bundle.version, "time_floor": max(state["time_floor"], bundle.issued_at),
                     "installed": installed, "active": sha, "previous": state["active"]}
        return new, bundle.version
