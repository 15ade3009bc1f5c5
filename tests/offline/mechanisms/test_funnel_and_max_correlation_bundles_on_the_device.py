"""Funnel and max-correlation bundles on the device: verified without numpy or privmap.offline,
refused when tampered with or when a declared figure disagrees with the table."""
import json

import msgpack
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from isolation import release_in_isolation

from privmap.device import Keyring, load_bundle
from privmap.device.errors import BundleSignatureError, MetricsError, TableError
from privmap.offline import BuildError
from privmap.offline.bundle._write import canonical_float, encode_payload, sign_bundle
from privmap.offline.mechanisms import funnel, max_correlation

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
NOW = 1_700_000_000


@pytest.fixture(scope="module")
def data(toy_csv):
    return toy_csv(400, 0)


@pytest.fixture(scope="module")
def payloads(data):
    return {"funnel": funnel.build(data, funnel.FunnelOptions(private="secret", disclosure_fraction=0.5,
                                                              issued_at=NOW)).payload,
            "max-correlation": max_correlation.build(data, max_correlation.MaxCorrelationOptions(
                delta=0.2, public=("colour",), issued_at=NOW, starts=2)).payload}


def _sign(payload):
    return sign_bundle(encode_payload(payload), KEY)


def _resign_raw(payload):
    """Sign a payload WITHOUT the builder's checks (what a hostile or buggy builder could do)."""
    from cryptography.hazmat.primitives import serialization

    from privmap.device.constants import DOMAIN_TAG, FORMAT_VERSION, SIGNATURE_ALGORITHM
    from privmap.device.trust import key_id_of
    raw = msgpack.packb(payload, use_bin_type=True)
    pub = KEY.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return msgpack.packb([FORMAT_VERSION, SIGNATURE_ALGORITHM, key_id_of(pub), KEY.sign(DOMAIN_TAG + raw), raw],
                         use_bin_type=True)


def _load(data):
    return load_bundle(data, Keyring([KEY.public_key()]), now=NOW + 1)




def test_both_bundles_verify_and_release_on_the_device_without_numpy_or_offline(payloads, tmp_path):
    from cryptography.hazmat.primitives import serialization
    paths = []
    for name, payload in payloads.items():
        path = tmp_path / f"{name}.bin"
        path.write_bytes(_sign(payload))
        paths.append(str(path))
    pub = KEY.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    found = release_in_isolation(paths, [0] * len(paths), key_hex=pub.hex(), now=NOW + 1)
    out = {b["mechanism"]: b for b in found["bundles"]}
    out["loaded_forbidden"] = found["loaded_forbidden"]
    assert out["loaded_forbidden"] == []
    # the device reports the declared figures exactly as written: 12 significant digits
    assert out["funnel"]["metrics"]["disclosure_bits"] == canonical_float(
        payloads["funnel"]["metrics"]["disclosure_bits"])
    assert out["max-correlation"]["metrics"]["rho_m_squared"] == canonical_float(
        payloads["max-correlation"]["metrics"]["rho_m_squared"])
    assert len(out["max-correlation"]["released"]) == 1


def test_device_recomputes_rho_m_squared_as_the_offline_svd_does(payloads):
    bundle = _load(_sign(payloads["max-correlation"]))
    from privmap.device.kinds.max_correlation import rho_m_squared_pure
    assert rho_m_squared_pure(bundle.p_x, bundle.index, bundle.weight, bundle.bits) == pytest.approx(
        payloads["max-correlation"]["metrics"]["rho_m_squared"], abs=1e-9)
    assert bundle.private_name is None and bundle.prior is None


@pytest.mark.parametrize("name", ["funnel", "max-correlation"])
def test_a_flipped_payload_byte_is_refused_before_parsing(payloads, name):
    data = bytearray(_sign(payloads[name]))
    data[-20] ^= 0x01
    with pytest.raises(BundleSignatureError):
        _load(bytes(data))


@pytest.mark.parametrize("name, key, change", [
    ("funnel", "leakage_bits", -1e-3),
    ("funnel", "disclosure_bits", +1e-3),
    ("max-correlation", "rho_m_squared", -1e-3),
    ("max-correlation", "rho_m_squared", +1e-3),
    ("max-correlation", "s_star_upper_bound", -0.5),
    ("max-correlation", "distortion", -0.1),
])
def test_a_disagreeing_declared_metric_is_refused_by_builder_and_device(payloads, name, key, change):
    payload = json.loads(json.dumps(payloads[name]))
    payload["metrics"][key] = max(payload["metrics"][key] + change, 0.0)
    with pytest.raises(BuildError):
        encode_payload(payload)
    with pytest.raises(MetricsError):
        _load(_resign_raw(_canonical_dict(payload)))


def _canonical_dict(payload):
    from privmap.offline.bundle._write import _canonical
    return _canonical(payload)


def test_s_star_verified_is_refused_where_the_certified_bound_does_not_meet_rho(payloads):
    payload = json.loads(json.dumps(payloads["max-correlation"]))
    if payload["metrics"]["s_star_upper_bound"] <= payload["metrics"]["rho_m_squared"] + 1e-6:
        pytest.skip("this design happens to be verified")
    payload["metrics"]["s_star_verified"] = 1
    with pytest.raises(MetricsError, match="s_star_verified"):
        _load(_resign_raw(_canonical_dict(payload)))


def test_a_randomised_funnel_row_is_refused(payloads):
    payload = json.loads(json.dumps(payloads["funnel"]))
    payload["table"]["index"][0] = [0, 1] if len(payload["outputs"]) > 1 else [0]
    payload["table"]["weight"][0] = [1, 1] if len(payload["outputs"]) > 1 else [2]
    if len(payload["outputs"]) == 1:
        pytest.skip("one group")
    with pytest.raises(TableError):
        _load(_resign_raw(_canonical_dict(payload)))


def test_a_max_correlation_payload_with_a_prior_or_private_key_is_refused(payloads):
    from privmap.device.errors import BundleFormatError
    payload = _canonical_dict(json.loads(json.dumps(payloads["max-correlation"])))
    payload["prior"] = [[1.0]]
    with pytest.raises(BundleFormatError, match="unknown keys"):
        _load(_resign_raw(payload))


@pytest.mark.parametrize("name, metric", [("funnel", "hamming"), ("funnel", "erasures"),
                                          ("max-correlation", "log-loss"), ("max-correlation", "l2")])
def test_a_metric_that_does_not_fit_the_mechanism_is_refused(payloads, name, metric):
    from privmap.device.errors import BundleFormatError
    payload = _canonical_dict(json.loads(json.dumps(payloads[name])))
    payload["metric"] = metric
    with pytest.raises(BundleFormatError, match="does not fit"):
        _load(_resign_raw(payload))


def test_log_loss_is_refused_for_the_seed_000_mechanisms(payloads):
    from privmap.device.errors import BundleFormatError
    payload = _canonical_dict(json.loads(json.dumps(payloads["funnel"])))
    payload["mechanism"] = "exact"
    with pytest.raises(BundleFormatError, match="does not fit"):
        _load(_resign_raw(payload))
