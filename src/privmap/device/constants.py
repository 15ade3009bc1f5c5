"""The device runtime's public constants: the wire format's fixed values and the runtime's caps.

Each is defined once, here, at the bottom of the device's stack, and read by the layers above it
(docs/bundle-format.md gives their meaning on the wire).
"""
from __future__ import annotations

__all__ = [
    # the envelope and its signatures
    "FORMAT_VERSION", "SIGNATURE_ALGORITHM", "DOMAIN_TAG", "MULTISIG_FORMAT_VERSION", "MULTISIG_DOMAIN_TAG",
    "MAX_SIGNATURES",
    # the payload
    "PAYLOAD_TYPE", "SCHEMA_VERSION", "MAX_VERSION", "MAX_BUNDLE_BYTES", "MAX_ABS_CELL", "MAX_MISSING_TOKEN",
    "PAYLOAD_KEYS", "REQUIRED_METRICS", "REQUIRED_PROVENANCE", "REAL_PAYLOAD_KEYS",
    "MAX_RANK", "MIN_MSGPACK_VERSION",
    # declared figures
    "PAYLOAD_FLOAT_DIGITS", "PAYLOAD_FLOAT_RELATIVE_ERROR", "LEAKAGE_RELATIVE_SLACK", "LEAKAGE_ABSOLUTE_SLACK",
    # keyring documents
    "KEYRING_TYPE", "KEYRING_DOMAIN_TAG", "MAX_ROTATIONS", "MAX_KEYRING_BYTES",
    # time and the state directory
    "MAX_CLOCK_SKEW", "EXPIRY_GRACE", "PLAUSIBLE_CLOCK", "LATEST_ISSUED_AT", "DEFAULT_LOCK_WAIT",
]

# -- the envelope and its signatures ---------------------------------------------------------------

#: Envelope format version (first element of the envelope array).
FORMAT_VERSION = 1
#: The one supported signature algorithm (second element of the envelope array).
SIGNATURE_ALGORITHM = "ed25519"
#: Domain-separation tag prepended to the payload bytes before signing / verifying.
DOMAIN_TAG = b"privmap-bundle-v1\x00"
#: Envelope format with k-of-n signatures: ``[2, alg, [[key_id, signature], ...], payload]``.
MULTISIG_FORMAT_VERSION = 2
#: Its domain tag (a format-1 signature never verifies as format 2, and back).
MULTISIG_DOMAIN_TAG = b"privmap-bundle-v2\x00"
#: Most signatures a format-2 envelope may carry.
MAX_SIGNATURES = 8

# -- the payload -----------------------------------------------------------------------------------

#: Value of the payload's ``type`` field.
PAYLOAD_TYPE = "privmap/bundle"
#: Value of the payload's ``schema_version`` field.
SCHEMA_VERSION = 2
#: Largest allowed bundle ``version`` (versions are 1 .. 2**63 - 1).
MAX_VERSION = 2**63 - 1
#: Default cap on the size of a whole bundle file, in bytes (16 MiB: device-sized; see
#: benchmarks/bench_load_limits.py for the load time and memory of the largest bundle admitted).
MAX_BUNDLE_BYTES = 16 * 1024 * 1024
#: Largest magnitude of a numeric cell: of a row a device reads, of a declared domain's bounds and
#: so of every representative. A distance sums d squared differences of at most 2e100 each, far
#: below float64's 1.8e308 for any d a bundle may hold, so no distance overflows to inf.
MAX_ABS_CELL = 1e100
#: Longest missing-value token (a CSV spelling such as "NA"; "" = blank only).
MAX_MISSING_TOKEN = 16
#: Top-level payload keys, in canonical (encoding) order. All are required; no others allowed.
PAYLOAD_KEYS = (
    "type", "schema_version", "version", "issued_at", "expires", "device_class", "mechanism", "metric",
    "features", "private", "inputs", "outputs", "table", "prior", "metrics", "provenance",
)
#: Metrics every bundle declares (more keys are allowed; all values finite numbers).
REQUIRED_METRICS = (
    "leakage_bits", "distortion", "delta", "r", "delta_plus_r", "clusters", "n",
    "perfect_privacy_distortion",
)
#: Provenance entries every bundle declares (more keys are allowed; values str or int).
REQUIRED_PROVENANCE = ("tool_version", "seed", "data_sha256")
#: The closed key set of a real-valued kind's payload (nullspace, gaussian: their ``parameters``
#: are parsed by the kind's module, privmap.device.kinds.nullspace and .gaussian).
REAL_PAYLOAD_KEYS = (
    "type", "schema_version", "version", "issued_at", "expires", "device_class", "mechanism", "features",
    "parameters", "metrics", "provenance",
)
#: Largest latent rank of a recommender bundle: bounds the fold-in's O(m rank^2) and the
#: release's O(m rank) work.
MAX_RANK = 64
#: Oldest msgpack whose defaults and limits the runtime relies on (checked at import).
MIN_MSGPACK_VERSION = (1, 2, 1)

# -- declared figures ------------------------------------------------------------------------------

#: The builder writes every computed float of a payload (declared figures, the prior, p_x,
#: released cells of real-valued features, real-valued parameters) rounded to this many
#: significant digits, so that BLAS, CPU and library versions do not move the bundle's bytes
#: (docs/bundle-format.md, "Float precision"). The device never rounds; it only has to accept
#: a declared figure that differs from its recomputation by that rounding.
PAYLOAD_FLOAT_DIGITS = 12
#: The largest relative change that rounding makes to one number: half a unit in the last kept
#: digit (5e-12 for 12 digits).
PAYLOAD_FLOAT_RELATIVE_ERROR = 0.5 * 10.0 ** (1 - PAYLOAD_FLOAT_DIGITS)
#: A declared leakage may be below the recomputed one by at most this relative amount ...
#: It covers float round-off and the rounding of payload floats: the declared value and every
#: prior entry are each off by at most PAYLOAD_FLOAT_RELATIVE_ERROR, which moves the recomputed
#: leakage by a few times that (tests/offline/bundle/test_float_precision.py), two orders of
#: magnitude below this slack.
LEAKAGE_RELATIVE_SLACK = 1e-9
#: ... or this absolute amount in bits (whichever is larger), to absorb float round-off.
LEAKAGE_ABSOLUTE_SLACK = 1e-12

# -- keyring documents -----------------------------------------------------------------------------

#: Value of a keyring document's ``type`` field.
KEYRING_TYPE = "privmap/keyring"
#: Domain-separation tag of keyring signatures (no bundle signature verifies as a keyring's).
KEYRING_DOMAIN_TAG = b"privmap-keyring-v1\x00"
#: Most rotations walked by one ``KeyringChain.rotate_chain`` call.
MAX_ROTATIONS = 32
#: Largest keyring document, bytes.
MAX_KEYRING_BYTES = 64 * 1024

# -- time and the state directory ------------------------------------------------------------------

#: How far, in seconds, a bundle's ``issued_at`` may be ahead of the clock (1 day): clocks of
#: builder and device disagree by minutes, not days, so a bundle dated later was mis-built or is
#: meant to be held back; it is refused (``FutureBundleError``).
MAX_CLOCK_SKEW = 86400
#: An expired active bundle keeps releasing (status "stale") for this many seconds (3 days).
EXPIRY_GRACE = 3 * 86400
#: A clock reading before this (2020-09-13) is taken as unset (a box without a clock battery).
PLAUSIBLE_CLOCK = 1_600_000_000
#: A bundle issued after this instant (2100-01-01T00:00:00Z) is refused whatever the clock says:
#: no genuine bundle is dated there, and accepting one would raise the time floor past it.
LATEST_ISSUED_AT = 4_102_444_800
#: Seconds a state-directory lock is waited for before ``StateLockedError`` (settable per call).
DEFAULT_LOCK_WAIT = 5.0
