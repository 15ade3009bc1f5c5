"""The real-valued bundle kinds on the device: nullspace (seed 001) and gaussian
(seed 004). Release values, tampering, limits, the Gaussian sampler, the per-record memo against
an averaging attack, and isolation from the offline stack."""
from __future__ import annotations

import copy
import math
import random

import msgpack
import pytest
from harness import NOW, FixedBits, raw_public
from isolation import release_in_isolation

from privmap.device import Binding, DeviceState, Limits, SystemRandomBits
from privmap.device.constants import SCHEMA_VERSION
from privmap.device.errors import (
    BundleFormatError,
    BundleSignatureError,
    BundleTooLargeError,
    ExpiredBundleError,
    InputError,
    MetricsError,
    RandomnessError,
    ReleaseRefusedError,
    TheoremCheckError,
    WrongDomainError,
)
from privmap.device.kinds import GaussianBundle, NullspaceBundle, gaussian, nullspace
from privmap.device.kinds.gaussian import canonical_record, gaussian_information, standard_normals
from privmap.device.randomness import InsecureTestBits

R2, R5 = math.sqrt(2), math.sqrt(5)
COV_P1 = [[138.27, 165.66, 26.36], [165.66, 240.07, 43.86], [26.36, 43.86, 8.76]]
COV_U1 = [[138.27, 165.66, 11.28], [165.66, 240.07, 6.84], [11.28, 6.84, 2.26]]
PROVENANCE = {"tool_version": "privmap-test", "seed": 0, "data_sha256": "00" * 32}


class SeededBits:
    """TEST ONLY: a reproducible bit source (Mersenne Twister) so the statistical tests cannot flake."""

    def __init__(self, seed):
        self.generator = random.Random(seed)

    def randbits(self, k):
        return self.generator.getrandbits(k)


def _header(mechanism):
    return {"type": "privmap/bundle", "schema_version": SCHEMA_VERSION, "version": 3, "issued_at": NOW - 60,
            "expires": NOW + 86400, "device_class": "generic", "mechanism": mechanism,
            "features": ["x1", "x2"]}


def nullspace_payload():
    """Seed 001's toy: A_d = (1, -1), A_c = (1, 2), epsilon = 0.01, unit-norm directions."""
    p = _header("nullspace")
    p["parameters"] = {"epsilon": 0.01, "desired": ["yd"], "confidential": ["yc"],
                       "directions": [[1 / R2, 1 / R2], [2 / R5, -1 / R5]],
                       "lambda_d": [0.0, (3 / R5) ** 2], "a_d": [[1.0], [-1.0]]}
    p["metrics"] = {"epsilon": 0.01, "n": 3}
    p["provenance"] = dict(PROVENANCE)
    return p


def with_gaussian_metrics(p):
    par = p["parameters"]
    zero = [0.0] * len(par["sigma2"])
    leak = gaussian_information(par["cov_private"], par["sigma2"], len(zero))
    p["metrics"] = {"leakage_bits": leak / math.log(2), "leakage_nats": leak,
                    "leakage_before_bits": gaussian_information(par["cov_private"], zero, len(zero)) / math.log(2),
                    "utility_loss_nats": gaussian_information(par["cov_utility"], zero, len(zero))
                    - gaussian_information(par["cov_utility"], par["sigma2"], len(zero)),
                    "delta": par["delta"], "gamma": par["gamma"], "n": 1000}
    return p


def gaussian_payload():
    """Seed 004's dataset 1 with the greedy's noise at delta = 0.5."""
    p = _header("gaussian")
    p["parameters"] = {"sigma2": [0.0, 31.52929688], "private": ["p"], "utility": ["u"],
                       "cov_private": COV_P1, "cov_utility": COV_U1, "delta": 0.5, "gamma": 0.0,
                       "utility_measure": "mutual_information"}
    p["provenance"] = dict(PROVENANCE)
    return with_gaussian_metrics(p)


def test_nullspace_bundle_releases_the_briefs_exact_toy_values(sim):
    bundle = sim.load(sim.sign_obj(nullspace_payload()))
    assert isinstance(bundle, NullspaceBundle) and bundle.withheld_columns == ("yd", "yc")
    expected = {("3", "1"): (14 / 15, -29 / 30), ("4", "2"): (14 / 15, -29 / 30), (5, 1.0): (29 / 15, -59 / 30)}
    for row, want in expected.items():
        got = bundle.sanitize(list(row))
        assert got == pytest.approx(want, abs=1e-14)
        x = [float(c) for c in row]
        assert ((x[0] - got[0]) - (x[1] - got[1])) ** 2 == pytest.approx(0.01, abs=1e-15)  # Theorem 1


def test_nullspace_release_is_refused_when_the_theorem1_check_fails(sim):
    bundle = sim.load(sim.sign_obj(nullspace_payload()))
    params = dict(bundle._params)
    params["columns"] = ((1.0, -1.0 + 1e-3),)  # an A_d other than the one the directions fit
    with pytest.raises(TheoremCheckError):
        nullspace.clean_row((3.0, 1.0), params)


def test_gaussian_bundle_recomputes_the_declared_leakage(sim):
    bundle = sim.load(sim.sign_obj(gaussian_payload()))
    assert isinstance(bundle, GaussianBundle)
    assert bundle.recomputed_leakage_bits * math.log(2) == pytest.approx(0.8277854, abs=1e-6)
    assert bundle.withheld_columns == ("p", "u")


def _mutated(payload, path, value):
    p = copy.deepcopy(payload)
    target = p
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return p


NULLSPACE_BAD = [
    (("parameters", "extra"), 1, BundleFormatError),
    (("parameters", "a_d"), KeyError, BundleFormatError),
    (("metric",), "l2", BundleFormatError),  # a table-kind key in a real-valued payload
    (("parameters", "epsilon"), -0.1, BundleFormatError),
    (("parameters", "epsilon"), True, BundleFormatError),
    (("parameters", "epsilon"), float("nan"), BundleFormatError),
    (("parameters", "lambda_d"), [0.0, 2.0], MetricsError),
    (("parameters", "directions"), [[1.0, 0.0], [2 / R5, -1 / R5]], MetricsError),  # not B_d-orthogonal
    (("parameters", "directions"), [[1.0, 1.0], [2 / R5, -1 / R5]], MetricsError),  # not unit norm
    (("parameters", "directions"), [[1 / R2, 1 / R2]] * 3, BundleFormatError),  # k > n
    (("parameters", "a_d"), [[1.0, 0.0], [-1.0, 0.0]], BundleFormatError),  # N_d != len(desired)
    (("features",), ["x1", "x1"], BundleFormatError),
    (("features",), [f"x{i}" for i in range(300)], BundleFormatError),  # > MAX_REAL_DIM
    (("metrics", "epsilon"), 0.02, MetricsError),
    (("parameters", "confidential"), ["x1"], BundleFormatError),  # a released column
    (("parameters", "confidential"), ["yd"], BundleFormatError),  # also desired
    (("mechanism",), "quantized", BundleFormatError),
]


@pytest.mark.parametrize("path,value,error", NULLSPACE_BAD, ids=lambda v: str(v)[:30])
def test_tampered_nullspace_payloads_are_refused(sim, path, value, error):
    sim.refused(sim.sign_obj(_mutated(nullspace_payload(), path, value)), error)


GAUSSIAN_BAD = [
    (("parameters", "sigma2"), [0.0, -1.0], BundleFormatError),
    (("parameters", "sigma2"), [0.0], BundleFormatError),
    (("parameters", "utility_measure"), "r2", BundleFormatError),
    (("parameters", "private"), ["x1"], BundleFormatError),  # a released column
    (("parameters", "cov_private"), [[138.27, 165.66, 26.36], [165.66, 240.07, 43.86], [26.36, 43.8, 8.76]],
     BundleFormatError),  # asymmetric
    (("parameters", "cov_private"), [[138.27, 165.66, 26.36], [165.66, 240.07, 43.86], [26.36, 43.86, 0.5]],
     MetricsError),  # not positive definite
    (("parameters", "cov_utility"), [[138.0, 165.66, 11.28], [165.66, 240.07, 6.84], [11.28, 6.84, 2.26]],
     BundleFormatError),  # cov(X) differs between the blocks
    (("metrics", "leakage_bits"), 0.5, MetricsError),  # declared below the model's
    (("metrics", "utility_loss_nats"), 0.1, MetricsError),
    (("metrics", "leakage_bits"), KeyError, BundleFormatError),
    (("parameters", "delta"), 0.1, MetricsError),  # the noise spends more than delta
]


@pytest.mark.parametrize("path,value,error", GAUSSIAN_BAD, ids=lambda v: str(v)[:30])
def test_tampered_gaussian_payloads_are_refused(sim, path, value, error):
    sim.refused(sim.sign_obj(_mutated(gaussian_payload(), path, value)), error)


@pytest.mark.parametrize("make", [nullspace_payload, gaussian_payload])
def test_signature_is_checked_before_the_real_valued_payload_is_parsed(sim, make):
    data = sim.pack(make())
    envelope = msgpack.unpackb(sim.sign_obj(data), raw=False)
    envelope[4] = data.replace(b"x1", b"y1")
    sim.refused(sim.pack(envelope), BundleSignatureError)
    sim.refused(sim.sign_obj(make(), key=sim.untrusted), BundleSignatureError)
    sim.refused(sim.sign_obj(make()), ExpiredBundleError, now=NOW + 86400)
    sim.refused(sim.sign_obj(make()), BundleTooLargeError, limits=Limits(max_bundle_bytes=200))


@pytest.mark.parametrize("make", [nullspace_payload, gaussian_payload])
@pytest.mark.parametrize("row", [["1"], ["1", "2", "3"], ["nan", "1"], ["1e400", "1"], [True, 1.0],
                                 ["1e101", "0"], ["0x10", "1"], "12", [None, 1]])
def test_bad_rows_are_refused_without_echoing_the_value(sim, make, row):
    bundle = sim.load(sim.sign_obj(make()))
    with pytest.raises(InputError) as info:
        bundle.sanitize(row)
    assert "1e400" not in str(info.value) and "0x10" not in str(info.value)


def test_box_muller_moments_and_ks_on_a_fixed_source():
    from scipy import stats
    z = standard_normals(InsecureTestBits(SeededBits(2024), test_mode=True), 40000)
    n = len(z)
    mean = sum(z) / n
    var = sum((v - mean) ** 2 for v in z) / (n - 1)
    assert abs(mean) < 5 / math.sqrt(n)
    assert abs(var - 1) < 5 * math.sqrt(2 / n)
    assert stats.kstest(z, "norm").pvalue > 1e-3


def test_box_muller_on_the_os_csprng_passes_ks():
    from scipy import stats
    z = standard_normals(SystemRandomBits(), 20000)
    assert stats.kstest(z, "norm").pvalue > 1e-6  # false alarm once in a million runs


def test_box_muller_guards_log_zero_at_the_extreme_draws():
    for value in (0, (1 << 53) - 1):
        z = standard_normals(InsecureTestBits(FixedBits(value), test_mode=True), 2)
        assert all(math.isfinite(v) and abs(v) <= math.sqrt(2 * 53 * math.log(2)) + 1e-12 for v in z)


def test_gaussian_noise_has_the_bundled_variance(sim):
    bundle = sim.load(sim.sign_obj(gaussian_payload()))
    source = InsecureTestBits(SeededBits(7), test_mode=True)
    released = [bundle.sanitize([1.0, float(i)], rng=source) for i in range(20000)]
    noise0 = [r[0] - 1.0 for r in released]
    noise1 = [r[1] - i for i, r in enumerate(released)]
    assert noise0 == [0.0] * len(noise0)  # sigma2 = 0: released unchanged
    n = len(noise1)
    var = sum(v * v for v in noise1) / n
    assert abs(sum(noise1) / n) < 5 * math.sqrt(31.52929688 / n)
    assert var == pytest.approx(31.52929688, rel=5 * math.sqrt(2 / n))


def test_memo_defeats_the_averaging_attack(sim):
    bundle = sim.load(sim.sign_obj(gaussian_payload()))
    x = [3.0, 10.0]
    releases = [bundle.sanitize(x) for _ in range(400)]  # the OS CSPRNG
    assert all(r == releases[0] for r in releases)
    average = sum(r[1] for r in releases) / len(releases)
    assert abs(average - x[1]) == pytest.approx(abs(releases[0][1] - x[1]), rel=1e-12)  # no more than one
    # Without the memo, fresh noise averages out: the attacker's error shrinks by sqrt(400).
    fresh = [gaussian.add_noise(tuple(x), (0.0, math.sqrt(31.52929688)), SystemRandomBits())[1] for _ in range(400)]
    assert abs(sum(fresh) / 400 - x[1]) < 5 * math.sqrt(31.52929688 / 400)
    # Equal records in another spelling are the same record; another bundle starts a new memo.
    assert bundle.sanitize(["3", "1e1"]) == releases[0]
    other = sim.load(sim.sign_obj(gaussian_payload()))
    assert other.sanitize(x) != releases[0]


def test_a_failed_draw_releases_and_memoises_nothing(sim):
    class Broken:
        def randbits(self, k):
            raise OSError("pool empty")

    bundle = sim.load(sim.sign_obj(gaussian_payload()))
    with pytest.raises(RandomnessError):
        bundle.sanitize([1.0, 2.0], rng=InsecureTestBits(Broken(), test_mode=True))
    assert len(bundle._memo) == 0
    with pytest.raises(TypeError):
        bundle.sanitize([1.0, 2.0], rng=random.Random(0))


def test_memo_full_refuses_new_records_but_repeats_stay_identical(sim, monkeypatch):
    monkeypatch.setattr(gaussian, "MAX_MEMO_RECORDS", 2)
    bundle = sim.load(sim.sign_obj(gaussian_payload()))
    first = bundle.sanitize([1, 1])
    bundle.sanitize([2, 2])
    with pytest.raises(ReleaseRefusedError):
        bundle.sanitize([3, 3])
    assert bundle.sanitize([1, 1]) == first


def test_canonical_record_identifies_equal_records_only():
    from privmap.device.kinds._real import parse_real_row
    a = canonical_record(parse_real_row(["1.0", "-0"], 2))
    assert a == canonical_record(parse_real_row([1, 0.0], 2))
    assert a != canonical_record(parse_real_row([1, 5e-324], 2))
    assert a != canonical_record(parse_real_row([1, 0, 0], 3))


def test_add_noise_with_a_per_record_source_gives_the_same_release_for_the_same_record(sim):
    """What a persistent device does: a bit source derived from the record repeats the release."""
    import hashlib

    class DerivedBits:  # stands in for the device state's keyed source (HMAC of secret, bundle, record)
        def __init__(self, record):
            self.generator = random.Random(hashlib.sha256(b"secret" + record).digest())

        def randbits(self, k):
            return self.generator.getrandbits(k)

    bundle = sim.load(sim.sign_obj(gaussian_payload()))
    sigma = tuple(math.sqrt(s) for s in bundle.sigma2)
    x = [3.0, 10.0]
    first = gaussian.add_noise(tuple(x), sigma, DerivedBits(bundle.record(x)))
    again = gaussian.add_noise(tuple(x), sigma, DerivedBits(bundle.record(["3", "10.0"])))
    other = gaussian.add_noise((3.0, 11.0), sigma, DerivedBits(bundle.record([3, 11])))
    assert first == again and other[1] - 11.0 != first[1] - 10.0




def test_real_valued_kinds_load_and_release_without_the_offline_stack(sim, tmp_path):
    paths = []
    for name, make in (("nullspace", nullspace_payload), ("gaussian", gaussian_payload)):
        path = tmp_path / f"{name}.bin"
        path.write_bytes(sim.sign_obj(make()))
        paths.append(path)
    out = release_in_isolation(paths, [["3", "1"], ["3", "1"]], key_hex=raw_public(sim.key).hex(), now=NOW)
    assert out["loaded_forbidden"] == []
    nullspace, gaussian = (b["released"] for b in out["bundles"])
    assert nullspace == pytest.approx([14 / 15, -29 / 30], abs=1e-14)
    assert gaussian[0] == 3.0 and math.isfinite(gaussian[1])


@pytest.mark.parametrize("make", [nullspace_payload, gaussian_payload])
def test_a_device_bound_to_private_classes_refuses_a_real_valued_bundle(sim, tmp_path, make):
    """A real-valued bundle has no classes: a device bound to some refuses it as another domain
    (WrongDomainError, nothing installed), and one bound to its class and attribute alone takes it."""
    data = sim.sign_obj(make())
    bound = DeviceState(tmp_path / "bound", sim.keyring, clock=lambda: NOW, binding=Binding(classes=("a", "b")))
    with pytest.raises(WrongDomainError):
        bound.install(data)
    assert bound.active_sha256 is None
    loaded = sim.load(data)
    assert loaded.classes == ()
    free = DeviceState(tmp_path / "free", sim.keyring, clock=lambda: NOW,
                       binding=Binding(device_class=loaded.device_class, private_name=loaded.private_name))
    assert free.install(data).status == "installed"
