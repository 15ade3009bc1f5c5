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
"""
from __future__ import annotations

from ._bundle import (
    Bundle,
    check_declared_leakage,
    check_declared_metrics,
    load_bundle,
    read_bundle_file,
    recompute_leakage_bits,
)
from ._codec import MIN_MSGPACK_VERSION
from ._errors import (
    BundleError,
    BundleFormatError,
    BundleSignatureError,
    BundleTooLargeError,
    ExpiredBundleError,
    InputError,
    KeyringError,
    MetricsError,
    PrivmapDeviceError,
    RandomnessError,
    RollbackError,
    TableError,
    WrongTypeError,
)
from ._keyring import Keyring, key_id_of
from ._leakage import table_leakage_bits
from ._limits import (
    DOMAIN_TAG,
    FORMAT_VERSION,
    MAX_BUNDLE_BYTES,
    MAX_VERSION,
    PAYLOAD_TYPE,
    SCHEMA_VERSION,
    SIGNATURE_ALGORITHM,
    Limits,
)
from ._sampler import InsecureTestBits, SystemRandomBits
from ._schema import PAYLOAD_KEYS, REQUIRED_METRICS, REQUIRED_PROVENANCE, Feature

__all__ = [
    # loading
    "load_bundle", "read_bundle_file", "Bundle", "Feature", "Keyring", "key_id_of", "Limits",
    # verify-side helpers
    "recompute_leakage_bits", "table_leakage_bits", "check_declared_leakage", "check_declared_metrics",
    # randomness
    "SystemRandomBits", "InsecureTestBits",
    # format constants
    "FORMAT_VERSION", "SIGNATURE_ALGORITHM", "DOMAIN_TAG", "PAYLOAD_TYPE", "SCHEMA_VERSION",
    "MAX_VERSION", "MAX_BUNDLE_BYTES", "PAYLOAD_KEYS", "REQUIRED_METRICS", "REQUIRED_PROVENANCE",
    "MIN_MSGPACK_VERSION",
    # errors
    "PrivmapDeviceError", "BundleError", "BundleTooLargeError", "BundleFormatError",
    "WrongTypeError", "BundleSignatureError", "ExpiredBundleError", "RollbackError",
    "TableError", "MetricsError", "KeyringError", "InputError", "RandomnessError",
]
