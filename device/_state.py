"""The device's installed state: a small directory the firmware points at.

Layout (the directory is created with mode 0700 and refused if group- or world-writable)::

    DIR/device.secret           32 bytes from the OS CSPRNG, mode 0600 (drives the releases)
    DIR/state.json              the state, authenticated with HMAC-SHA256 under the secret
    DIR/bundles/<sha256>.bundle exact bytes of the active bundle and of the previous one

``state.json`` holds the installed version, the time floor (the latest ``issued_at`` ever
verified), the sha256 of the bundle installed under each version (the last
:data:`MAX_HISTORY`), and which bundle files are active and previous. Installing writes the new
bundle file (write, fsync, rename, fsync directory), then replaces ``state.json`` the same way;
that rename is the one commit point, so any failure before it leaves the active bundle and the
state byte-identical, and leftovers (``.tmp-*`` files, unreferenced bundle files) are removed
the next time the directory is opened.

Time: ``now_eff = max(clock, time_floor, PLAUSIBLE_CLOCK)``, read once per operation, so a clock reset to 1970
cannot revive an expired bundle and the floor never decreases. A bundle issued more than
``max_skew`` seconds after the clock is refused (:class:`FutureBundleError`) -- unless the clock
is known to be wrong (behind the floor, or before :data:`PLAUSIBLE_CLOCK`: a box without a
clock battery), when only the floor is used and the check cannot be made. An active bundle past ``expires`` still releases for ``grace`` seconds
(status ``"stale"``), then nothing is released (:class:`NoValidBundleError`).

Releases: :meth:`DeviceState.release_index` draws the output for input cluster c from
:func:`release_bits` (HMAC of the secret, the bundle's sha256 and c), so asking again returns
the same release (RAPPOR-style permanent randomized response; see ``_derived.py``).

Standard library (plus the device runtime) only.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import time
from typing import NamedTuple

from ._binding import Binding, check_binding
from ._bundle import MAX_CLOCK_SKEW, Bundle, load_bundle
from ._codec import decode_envelope
from ._derived import SECRET_BYTES, DerivedBits, record_bits, release_bits
from ._envelope import verify_envelope
from ._errors import (
    BundleError,
    BundleSignatureError,
    BundleTooLargeError,
    EquivocationError,
    FutureBundleError,
    NoValidBundleError,
    StateError,
)
from ._files import NotRegularFile, read_regular
from ._gaussian import GaussianBundle
from ._keyring import Keyring
from ._limits import Limits
from ._nullspace import NullspaceBundle
from ._sampler import draw_bits, sample_row

__all__ = ["DeviceState", "InstallResult", "MAX_CLOCK_SKEW", "EXPIRY_GRACE", "MAX_HISTORY"]

#: An expired active bundle keeps releasing (status "stale") for this many seconds (3 days).
EXPIRY_GRACE = 3 * 86400
#: A clock reading before this (2020-09-13) is taken as unset (a box without a clock battery).
PLAUSIBLE_CLOCK = 1_600_000_000
#: Installed versions whose sha256 the state remembers (older ones are below the floor anyway).
MAX_HISTORY = 256

STATE_NAME = "state.json"
SECRET_NAME = "device.secret"
BUNDLE_DIR = "bundles"
_STATE_FORMAT = 1
_MAX_STATE_BYTES = 1 << 20
_TMP_PREFIX = ".tmp-"
_MAC_TAG = b"privmap-device-state-v1\x00"


class InstallResult(NamedTuple):
    """What :meth:`DeviceState.install` did: ``status`` is ``"installed"`` or ``"no_update"``
    (the same bytes were already active, THREATS D2; nothing was written)."""

    status: str
    version: int
    sha256: str


def _empty_state() -> dict:
    return {"format": _STATE_FORMAT, "version": 0, "time_floor": 0, "installed": {},
            "active": None, "previous": None}


def _canonical(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("ascii")


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic_install(directory: str, name: str, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to ``directory/name``: temp file, fsync, rename, fsync directory.

    On any failure the temp file is removed and ``directory/name`` is as it was."""
    tmp = os.path.join(directory, f"{_TMP_PREFIX}{name}.{os.getpid()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def _read_regular(path: str, cap: int) -> bytes:
    """:func:`read_regular` with a FIFO, device or directory refused as :class:`StateError`."""
    try:
        return read_regular(path, cap)
    except NotRegularFile as exc:
        raise StateError(str(exc)) from None


class DeviceState:
    """A device's state directory, opened (and created if absent) for one keyring.

    Parameters
    ----------
    path : str | os.PathLike
        The state directory; created with mode 0700 if missing (parents included).
    keyring : Keyring
        The pinned trusted keys; every bundle is verified with them, at install and at use.
    limits : Limits
        Resource limits passed to the loader.
    clock : callable () -> float
        Unix seconds; ``time.time`` by default (tests pass a fake clock).
    max_skew, grace : int
        Seconds; see :data:`MAX_CLOCK_SKEW` and :data:`EXPIRY_GRACE`.
    binding : Binding | None
        The device's private attribute and feature schema; a bundle for another is refused
        at install and at use (``WrongDomainError``).

    Raises
    ------
    StateError
        The directory is group/world-writable or not a directory; the state file or secret is
        missing while bundles are installed, corrupt, fails its MAC, or cannot be created.
    """

    def __init__(self, path, keyring: Keyring, *, limits: Limits = Limits(), clock=time.time,
                 max_skew: int = MAX_CLOCK_SKEW, grace: int = EXPIRY_GRACE,
                 binding: Binding | None = None) -> None:
        if not isinstance(keyring, Keyring):
            raise TypeError("keyring must be a privmap.device.Keyring")
        if not isinstance(limits, Limits):
            raise TypeError("limits must be a privmap.device.Limits")
        for name, value in (("max_skew", max_skew), ("grace", grace)):
            if type(value) is not int or value < 0:
                raise ValueError(f"{name} must be an int >= 0 (seconds)")
        self.path = os.fspath(path)
        self.keyring, self.limits, self._clock = keyring, limits, clock
        self.max_skew, self.grace, self.binding = max_skew, grace, binding
        self.last_error: str | None = None
        self._bundles = os.path.join(self.path, BUNDLE_DIR)
        try:
            self._open()
        except OSError as exc:
            raise StateError(f"state directory {self.path!r}: {exc.strerror or exc}") from None

    # -- opening --------------------------------------------------------------------------------

    def _open(self) -> None:
        os.makedirs(self.path, mode=0o700, exist_ok=True)
        os.makedirs(self._bundles, mode=0o700, exist_ok=True)
        for directory in (self.path, self._bundles):
            info = os.lstat(directory)
            if not stat.S_ISDIR(info.st_mode):
                raise StateError(f"{directory!r} is not a directory")
            if info.st_mode & 0o022:
                raise StateError(f"state directory {directory!r} is group- or world-writable "
                                 f"(mode {stat.S_IMODE(info.st_mode):04o}); run: chmod 700 {directory!r}")
        state_path = os.path.join(self.path, STATE_NAME)
        secret_path = os.path.join(self.path, SECRET_NAME)
        has_state = os.path.lexists(state_path)
        has_bundles = any(not n.startswith(_TMP_PREFIX) for n in os.listdir(self._bundles))
        if not has_state and has_bundles:
            raise StateError(f"{state_path!r} is missing but bundles are installed; refusing "
                             "(the version and time floor cannot be trusted)")
        if not os.path.lexists(secret_path):
            if has_state:
                raise StateError(f"{secret_path!r} is missing; refusing (releases would change)")
            _atomic_install(self.path, SECRET_NAME, os.urandom(SECRET_BYTES))
        self._secret = _read_regular(secret_path, SECRET_BYTES)
        if len(self._secret) != SECRET_BYTES:
            raise StateError(f"{secret_path!r} is not a {SECRET_BYTES}-byte device secret")
        if not has_state:
            self._write_state(_empty_state())
        self._state = self._read_state()
        self._clean()

    def _mac(self, body: bytes) -> str:
        return hmac.new(self._secret, _MAC_TAG + body, hashlib.sha256).hexdigest()

    def _read_state(self) -> dict:
        raw = _read_regular(os.path.join(self.path, STATE_NAME), _MAX_STATE_BYTES)
        try:
            if len(raw) > _MAX_STATE_BYTES:
                raise ValueError("state file too large")
            outer = json.loads(raw.decode("ascii"))
            body, mac = outer["body"], outer["mac"]
            ok = (type(outer) is dict and set(outer) == {"body", "mac"} and type(mac) is str
                  and hmac.compare_digest(mac, self._mac(_canonical(body))))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            ok = False
        if not ok or not _valid_body(body):
            raise StateError(f"state file in {self.path!r} is corrupt or fails its MAC; refusing")
        return body

    def _write_state(self, body: dict) -> None:
        data = _canonical(body)
        _atomic_install(self.path, STATE_NAME, _canonical({"body": body, "mac": self._mac(data)}))

    def _clean(self) -> None:
        """Remove temp files and bundle files the state does not reference (best effort)."""
        keep = {f"{s}.bundle" for s in (self._state["active"], self._state["previous"]) if s}
        for directory, names in ((self.path, None), (self._bundles, keep)):
            for name in os.listdir(directory):
                if name.startswith(_TMP_PREFIX) or (names is not None and name not in names):
                    try:
                        os.unlink(os.path.join(directory, name))
                    except OSError:
                        pass

    # -- what the state says ----------------------------------------------------------------------

    @property
    def installed_version(self) -> int:
        """Version of the active bundle (0 if none was ever installed)."""
        return self._state["version"]

    @property
    def time_floor(self) -> int:
        """Latest ``issued_at`` of any verified bundle, unix seconds (never decreases)."""
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

    # -- installing -------------------------------------------------------------------------------

    def install(self, data, *, now=None) -> InstallResult:
        """Verify ``data`` (a whole bundle file) and make it the active bundle, atomically.

        The clock is read once. Checks, in order: same bytes as the active bundle -> no-op
        (``"no_update"``, nothing written); everything :func:`load_bundle` checks, at
        ``now_eff`` with ``min_version`` = the installed version (``RollbackError``,
        ``ExpiredBundleError``, ...; the version floor restarts at 1 if the keyring no longer
        accepts the installed bundle's signatures: fast-forward recovery after a rotation); ``issued_at`` beyond the clock plus ``max_skew``
        (:class:`FutureBundleError`); a version installed before with other bytes
        (:class:`EquivocationError`). On any error nothing on disk changes and the error is
        also kept in ``last_error`` for :meth:`status`. Raises :class:`StateError` if the
        directory cannot be written (the state is then still the old one).
        """
        try:
            return self._install(data, now)
        except (BundleError, StateError) as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            raise

    def _install(self, data, now) -> InstallResult:
        clock = self._read_clock(now)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("data must be bytes")
        data = bytes(data)
        sha = hashlib.sha256(data).hexdigest()
        state = self._state
        if sha == state["active"]:
            return InstallResult("no_update", state["version"], sha)
        floor_version, installed = state["version"], dict(state["installed"])
        if state["active"] is not None and not self._active_signed_by_keyring():
            # Fast-forward recovery (THREATS C8): a keyring rotation revoked the keys that signed
            # the installed bundle, so every bundle they signed (however high its version) is
            # refused anyway; the version floor restarts for the new key epoch.
            floor_version, installed = 0, {}
        bundle = load_bundle(data, self.keyring, now=self.now_eff(clock),  # skew checked below
                             min_version=max(1, floor_version), limits=self.limits, max_skew=None)
        check_binding(bundle, self.binding)
        if self._clock_plausible(clock) and bundle.issued_at > clock + self.max_skew:
            raise FutureBundleError(
                f"bundle issued_at {bundle.issued_at} is more than {self.max_skew} s after the clock")
        known = installed.get(str(bundle.version))
        if known is not None and known != sha:
            raise EquivocationError(
                f"version {bundle.version} was installed with sha256 {known[:16]}..., "
                f"this bundle has {sha[:16]}...")
        installed[str(bundle.version)] = sha
        for old in sorted(installed, key=int)[:-MAX_HISTORY]:
            del installed[old]
        new = {"format": _STATE_FORMAT, "version": bundle.version,
               "time_floor": max(state["time_floor"], bundle.issued_at), "installed": installed,
               "active": sha, "previous": state["active"]}
        name = f"{sha}.bundle"
        try:
            _atomic_install(self._bundles, name, data, 0o644)
            self._write_state(new)
        except OSError as exc:
            if sha not in (state["active"], state["previous"]):
                try:
                    os.unlink(os.path.join(self._bundles, name))
                except OSError:
                    pass
            raise StateError(f"cannot write the state directory: {exc.strerror or exc}") from None
        self._state = new
        self._clean()
        self.last_error = None
        return InstallResult("installed", bundle.version, sha)

    def _active_signed_by_keyring(self) -> bool:
        """False only if the active bundle's bytes are intact and its signatures no longer meet
        the keyring (its keys were revoked); a damaged file never lowers the floor."""
        sha = self._state["active"]
        try:
            data = _read_regular(os.path.join(self._bundles, f"{sha}.bundle"), self.limits.max_bundle_bytes)
        except (OSError, StateError):
            return True
        if hashlib.sha256(data).hexdigest() != sha:
            return True
        try:
            verify_envelope(decode_envelope(data, self.limits), self.keyring)
        except BundleSignatureError:
            return False
        except BundleError:
            return True
        return True

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

    # -- using ----------------------------------------------------------------------------------

    def active(self, *, now=None) -> Bundle:
        """The bundle to release with: the active one re-verified from disk, or the previous
        known-good copy if the active file fails (THREATS G3).

        Each copy must hash to the sha256 the state recorded and pass :func:`load_bundle` again
        (at ``now_eff - grace``, so an expired bundle is still used within the grace period).
        Raises :class:`NoValidBundleError` if none is installed or neither copy passes.
        """
        clock = self._read_clock(now)
        state = self._state
        if state["active"] is None:
            raise NoValidBundleError("no bundle is installed in this state directory")
        problems = []
        for role in ("active", "previous"):
            sha = state[role]
            if sha is None:
                continue
            try:
                data = _read_regular(os.path.join(self._bundles, f"{sha}.bundle"), self.limits.max_bundle_bytes)
            except (OSError, StateError) as exc:  # a too-long file fails the hash check below
                problems.append(f"{role}: unreadable ({getattr(exc, 'strerror', None) or exc})")
                continue
            if hashlib.sha256(data).hexdigest() != sha:
                problems.append(f"{role}: bytes on disk do not match the recorded sha256")
                continue
            try:
                bundle = load_bundle(data, self.keyring, now=self.now_eff(clock) - self.grace, limits=self.limits,
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
        ``"no_bundle"`` (nothing is released), plus version, sha256, time floor, and the last
        error seen (its class name names the attack or fault, THREATS G7)."""
        clock = self._read_clock(now)
        report = {"version": self.installed_version, "time_floor": self.time_floor,
                  "active_sha256": self.active_sha256, "clock": clock,
                  "clock_plausible": self._clock_plausible(clock)}
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
        report["last_error"] = self.last_error
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


def _valid_body(body) -> bool:
    if type(body) is not dict or set(body) != set(_empty_state()) or body["format"] != _STATE_FORMAT:
        return False
    if type(body["version"]) is not int or type(body["time_floor"]) is not int:
        return False
    if type(body["installed"]) is not dict:
        return False
    for sha in (body["active"], body["previous"], *body["installed"].values()):
        if sha is not None and (type(sha) is not str or len(sha) != 64):
            return False
    return all(type(k) is str and k.isdigit() for k in body["installed"])
