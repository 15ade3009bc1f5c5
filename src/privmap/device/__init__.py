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

Every error raised on purpose is a :class:`PrivmapDeviceError` (the tree, by who is at fault, is
in :mod:`privmap.device.errors`); when one is raised nothing is released.

The face, here, is what a firmware integrator needs; the rest is public in the layer that holds
it. The package is a strict stack, each layer importing only from the layers below it
(``tests/test_architecture.py`` checks it), lowest first:

1. :mod:`~privmap.device.errors`, :mod:`~privmap.device.constants` and
   :mod:`~privmap.device.files` (reading, writing and locking small files);
2. :mod:`~privmap.device.format`: the wire format (limits, the pre-scan, strict msgpack
   decoding, the header and the schema's field validators);
3. :mod:`~privmap.device.trust`: whom the device trusts (signature envelopes, Ed25519 key
   checks, keyrings, rotation, binding to a device class);
4. :mod:`~privmap.device.randomness`: the OS CSPRNG's bits, derived bits, the exact sampler;
5. :mod:`~privmap.device.kinds`: per mechanism, its body's parse and its release, dispatched by
   a registry (``table``, ``funnel``, ``max_correlation``, ``recommender``, ``ranking``, ``nullspace``, ``gaussian``);
6. :mod:`~privmap.device.load`: the one load workflow (size, signatures before the payload is
   parsed, work caps, header, floors and clock, the kind's body, policy): :func:`load_bundle`,
   :func:`read_bundle_file`;
7. :mod:`~privmap.device.state`: a device that remembers (:class:`DeviceState`: store and lock,
   clock and floors, install and rotation, release).
"""
from __future__ import annotations

from .errors import PrivmapDeviceError
from .format import Limits
from .kinds import Bundle
from .load import load_bundle, read_bundle_file
from .randomness import SystemRandomBits
from .state import DeviceState, InstallResult, MonotonicCounter
from .trust import Binding, Keyring, KeyringChain

__all__ = [
    # loading a bundle
    "Keyring", "KeyringChain", "Binding", "Limits", "load_bundle", "read_bundle_file", "Bundle",
    # a device that remembers
    "DeviceState", "InstallResult", "MonotonicCounter",
    # randomness and errors
    "SystemRandomBits", "PrivmapDeviceError",
]
