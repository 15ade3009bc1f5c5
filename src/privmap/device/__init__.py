"""privmap device runtime: verify a signed bundle, then sanitize the user's rows with it.

Runs with ``msgpack`` and ``cryptography`` alone (never numpy, scipy, cvxpy, scikit-learn, click
or ``privmap.offline``; an optional numpy fast path for large nearest-neighbour lookups is
imported lazily and gives identical answers). The bundle format is specified in
``docs/bundle-format.md``.

Typical use::

    from privmap.device import Keyring, read_bundle_file

    keyring = Keyring.from_pem_files("/etc/privmap/operator.pub.pem")
    bundle = read_bundle_file("/var/lib/privmap/bundle.bin", keyring, min_version=installed)
    released = bundle.sanitize(["4", "2.5", 3])   # list of d released cells (never the raw row)

Every error raised on purpose is a :class:`PrivmapDeviceError`; when one is raised nothing is
released.

The package is grouped by concern; every public name is exported here, the sub-packages are private:

- ``trust/``: whom the device trusts (signature envelopes, Ed25519 key checks, keyrings, rotation,
  binding to a device class);
- ``format/``: what a bundle is (limits, the pre-scan, msgpack decoding, the schema, the declared
  figures recomputed, :func:`load_bundle`);
- ``release/``: releasing a row (lookup, the exact sampler, derived bits for permanent releases);
- ``state/``: a device that remembers (:class:`DeviceState`, the monotonic counter);
- ``mechanisms/``: the other seeds' release paths (funnel, max-correlation, null-space, Gaussian);
- ``_errors`` and ``_files`` at the root serve them all.
"""
from __future__ import annotations

from .trust._binding import (
    Binding,
    WrongDomainError,
    WrongTargetError,
    check_binding,
    schema_sha256,
)
from .format._bundle import (
    Bundle,
    check_declared_leakage,
    check_declared_metrics,
    load_bundle,
    read_bundle_file,
    recompute_leakage_bits,
)
from .format._codec import MIN_MSGPACK_VERSION
from .release._derived import DerivedBits, record_bits, release_bits
from ._errors import (
    BundleError,
    BundleFormatError,
    BundleSignatureError,
    BundleTooLargeError,
    EquivocationError,
    ExpiredBundleError,
    FutureBundleError,
    InputError,
    KeyringError,
    MetricsError,
    NoValidBundleError,
    PolicyError,
    PrivmapDeviceError,
    RandomnessError,
    RollbackError,
    StateError,
    StateLockedError,
    TableError,
    WorkLimitError,
    WrongTypeError,
)
from .mechanisms._gaussian import GaussianBundle, ReleaseRefusedError, add_noise, canonical_record
from .trust._keyring import Keyring, key_id_of
from .format._leakage import table_leakage_bits
from .format._limits import (
    DOMAIN_TAG,
    FORMAT_VERSION,
    MAX_ABS_CELL,
    MAX_BUNDLE_BYTES,
    MAX_SIGNATURES,
    MAX_VERSION,
    MULTISIG_DOMAIN_TAG,
    MULTISIG_FORMAT_VERSION,
    PAYLOAD_TYPE,
    SCHEMA_VERSION,
    SIGNATURE_ALGORITHM,
    Limits,
)
from .mechanisms._nullspace import NullspaceBundle, TheoremCheckError
from .trust._rotation import (
    KEYRING_DOMAIN_TAG,
    KEYRING_TYPE,
    MAX_ROTATIONS,
    KeyringChain,
    KeyringExpiredError,
    KeyringVersionError,
)
from .release._sampler import InsecureTestBits, SystemRandomBits
from .format._schema import (
    PAYLOAD_KEYS,
    REAL_MECHANISMS,
    REAL_PAYLOAD_KEYS,
    REQUIRED_METRICS,
    REQUIRED_PROVENANCE,
    Feature,
)
from .state._counter import MonotonicCounter, StateReplayError
from .state._state import (
    EXPIRY_GRACE,
    LATEST_ISSUED_AT,
    MAX_CLOCK_SKEW,
    DeviceState,
    InstallResult,
    KeyringMismatchError,
)

__all__ = [
    # loading
    "load_bundle", "read_bundle_file", "Bundle", "Feature", "Keyring", "key_id_of", "Limits",
    # verify-side helpers
    "recompute_leakage_bits", "table_leakage_bits", "check_declared_leakage", "check_declared_metrics",
    # binding to the device's configuration
    "Binding", "WrongTargetError", "WrongDomainError", "schema_sha256", "check_binding",
    # keyring rotation
    "KeyringChain", "KeyringVersionError", "KeyringExpiredError", "KEYRING_TYPE", "KEYRING_DOMAIN_TAG",
    "MAX_ROTATIONS",
    # installed state and permanent releases
    "DeviceState", "InstallResult", "MAX_CLOCK_SKEW", "EXPIRY_GRACE", "LATEST_ISSUED_AT",
    "KeyringMismatchError", "MonotonicCounter", "StateReplayError",
    # randomness
    "SystemRandomBits", "InsecureTestBits", "DerivedBits", "release_bits", "record_bits",
    # format constants
    "FORMAT_VERSION", "SIGNATURE_ALGORITHM", "DOMAIN_TAG", "PAYLOAD_TYPE", "SCHEMA_VERSION",
    "MAX_VERSION", "MAX_BUNDLE_BYTES", "MAX_ABS_CELL", "MULTISIG_FORMAT_VERSION", "MULTISIG_DOMAIN_TAG", "MAX_SIGNATURES", "PAYLOAD_KEYS", "REQUIRED_METRICS", "REQUIRED_PROVENANCE",
    "MIN_MSGPACK_VERSION",
    # errors
    "PrivmapDeviceError", "BundleError", "BundleTooLargeError", "BundleFormatError",
    "WrongTypeError", "BundleSignatureError", "ExpiredBundleError", "RollbackError",
    "TableError", "MetricsError", "KeyringError", "InputError", "RandomnessError",
    "EquivocationError", "FutureBundleError", "WorkLimitError", "PolicyError", "StateError",
    "NoValidBundleError", "StateLockedError",
    # real-valued kinds (load_bundle returns one of these for mechanism nullspace/gaussian)
    "NullspaceBundle", "GaussianBundle", "TheoremCheckError", "ReleaseRefusedError", "add_noise",
    "canonical_record", "REAL_MECHANISMS", "REAL_PAYLOAD_KEYS",
]
