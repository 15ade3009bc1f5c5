"""Payload floats are written to 12 significant digits, and that never breaks a device check."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privmap.device.constants import LEAKAGE_RELATIVE_SLACK, PAYLOAD_FLOAT_RELATIVE_ERROR
from privmap.device.kinds import table_leakage_bits
from privmap.offline.bundle._write import canonical_float

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


@given(finite)
def test_rounding_keeps_twelve_digits_and_is_idempotent(value):
    rounded = canonical_float(value)
    assert abs(rounded - value) <= PAYLOAD_FLOAT_RELATIVE_ERROR * abs(value) * (1 + 1e-3)
    assert canonical_float(rounded) == rounded
    assert len(format(rounded, ".11e").split("e")[0].replace("-", "").replace(".", "")) == 12


@given(finite)
def test_outward_rounding_brackets_the_value(value):
    down, up = canonical_float(value, "down"), canonical_float(value, "up")
    assert down <= value <= up
    assert canonical_float(down) == down and canonical_float(up) == up
    assert up - down <= 2.1 * PAYLOAD_FLOAT_RELATIVE_ERROR * 2 * abs(value) + 0.0


def test_unknown_direction_is_refused():
    with pytest.raises(ValueError, match="direction"):
        canonical_float(1.5, "sideways")


@settings(max_examples=50)
@given(st.lists(st.integers(1, 10**6), min_size=8, max_size=8), st.integers(2, 200))
def test_rounding_the_prior_moves_the_leakage_far_less_than_the_devices_slack(counts, w):
    total = sum(counts)
    prior = [[c / total for c in counts[:4]], [c / total for c in counts[4:]]]
    rounded = [[canonical_float(v) for v in row] for row in prior]
    index = [[0, 1], [0, 1], [1, 2], [2]]
    weight = [[w, 256 - w], [256 - w, w], [128, 128], [256]]
    exact = table_leakage_bits(prior, index, weight, 8)
    moved = table_leakage_bits(rounded, index, weight, 8)
    declared = canonical_float(exact)
    slack = max(LEAKAGE_RELATIVE_SLACK * exact, 1e-12)
    assert abs(declared - moved) <= slack / 100 or math.isclose(declared, moved, abs_tol=1e-14)


ANES = __import__("pathlib").Path(__file__).resolve().parents[3] / "data" / "anes96" / "anes96.csv"


@pytest.mark.parametrize("delta", [0.05, 0.1, 0.5])
def test_rounded_gaussian_bundles_pass_every_device_check(delta):
    """Covariances, noise and figures rounded to 12 digits still load: positive definite, the
    declared leakage and utility loss agree with the device's recomputation, loss <= delta."""
    from privmap.device import Limits
    from privmap.device.format import decode_payload
    from privmap.device.kinds.gaussian import parse_gaussian
    from privmap.offline.bundle import encode_payload
    from privmap.offline.mechanisms import gaussian
    build = gaussian.build(ANES, gaussian.GaussianOptions(private=("PID",), utility=("educ",), delta=delta))
    obj = decode_payload(encode_payload(build.payload), Limits())
    params = obj["parameters"]
    assert all(canonical_float(v) == v for row in params["cov_private"] for v in row)
    parse_gaussian(params, obj["metrics"], build.payload["features"], Limits())


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 5.0])
def test_rounded_nullspace_bundles_pass_every_device_check_and_release(epsilon):
    """Rounded directions stay unit-norm and A_d A_d^T-orthogonal within the device's tolerance,
    and a release passes the Theorem 1 check."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from privmap.device import Keyring, load_bundle
    from privmap.offline.bundle import encode_payload, sign_bundle
    from privmap.offline.mechanisms import nullspace
    build = nullspace.build(ANES, nullspace.NullspaceOptions(desired=("educ",), confidential=("PID",), epsilon=epsilon))
    key = Ed25519PrivateKey.generate()
    bundle = load_bundle(sign_bundle(encode_payload(build.payload), key), Keyring([key.public_key()]))
    assert all(canonical_float(v) == v for row in bundle.directions for v in row)
    columns = build.payload["features"]
    assert len(bundle.sanitize([1.0] * len(columns))) == len(columns)


def test_a_covariance_that_rounding_makes_indefinite_is_refused_not_written():
    """A covariance that is positive definite in float64 but whose least eigenvalue is far
    below its rounding error: the builder refuses it (the device loader, run on the rounded
    bytes, says why) rather than write a bundle every device would refuse."""
    from privmap.device.kinds._real import cholesky_logdet
    from privmap.offline import BuildError
    from privmap.offline.bundle import encode_payload
    from privmap.offline.mechanisms import gaussian
    payload = gaussian.build(ANES, gaussian.GaussianOptions(private=("PID",), utility=("educ",), delta=0.1)).payload
    n = len(payload["parameters"]["cov_private"])
    v = [1.0 + i / 3.0 for i in range(n)]   # rank one plus 1e-13 on the diagonal
    near = [[v[i] * v[j] + (1e-13 if i == j else 0.0) for j in range(n)] for i in range(n)]
    assert cholesky_logdet(near) is not None
    assert cholesky_logdet([[canonical_float(x) for x in row] for row in near]) is None
    payload["parameters"]["cov_private"] = payload["parameters"]["cov_utility"] = near
    with pytest.raises(BuildError, match="not positive definite"):
        encode_payload(payload)
