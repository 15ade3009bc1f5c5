"""``privmap keyring create|rotate`` and ``privmap cosign``: k-of-n signing from the command line."""
import pytest
from privmap.device import BundleSignatureError, KeyringChain, load_bundle


@pytest.fixture(scope="module")
def holders(tmp_path_factory, run):
    folder = tmp_path_factory.mktemp("holders")
    for name in "abcd":
        run("keygen", folder / name)
    return folder


def test_create_rotate_and_cosign_as_a_device_checks_them(holders, ratings_csv, tmp_path, run):
    h = holders
    pub = [arg for n in "abc" for arg in ("--public", h / n / "public.pem")]
    run("keyring", "create", *pub, "--threshold", 2, "--key", h / "a" / "private.pem",
        "--key", h / "b" / "private.pem", "--out", tmp_path / "k1.bin")
    refused = run("keyring", "rotate", tmp_path / "k1.bin", *pub, "--threshold", 2,
                  "--key", h / "a" / "private.pem", "--out", tmp_path / "k2.bin", ok=False)
    assert refused.exit_code == 1 and "refuse this rotation" in refused.output
    assert not (tmp_path / "k2.bin").exists()
    new_pub = [arg for n in "abd" for arg in ("--public", h / n / "public.pem")]
    run("keyring", "rotate", tmp_path / "k1.bin", *new_pub, "--threshold", 2, "--key", h / "a" / "private.pem",
        "--key", h / "b" / "private.pem", "--key", h / "d" / "private.pem", "--out", tmp_path / "k2.bin")
    chain = KeyringChain((tmp_path / "k1.bin").read_bytes())
    chain.rotate((tmp_path / "k2.bin").read_bytes())
    run("build", ratings_csv, "--private", "gender", "--clusters", 4, "--delta-fraction", 0.5,
        "--key", h / "a" / "private.pem", "--out", tmp_path / "b1.bundle")
    one = run("cosign", tmp_path / "b1.bundle", "--key", h / "a" / "private.pem", "--out", tmp_path / "b2.bundle",
              "--keyring", tmp_path / "k2.bin", ok=False)
    assert one.exit_code == 1 and "needs 2" in one.output and not (tmp_path / "b2.bundle").exists()
    run("cosign", tmp_path / "b1.bundle", "--key", h / "a" / "private.pem", "--out", tmp_path / "b2.bundle")
    run("cosign", tmp_path / "b2.bundle", "--key", h / "d" / "private.pem", "--out", tmp_path / "b3.bundle",
        "--keyring", tmp_path / "k2.bin")
    keyring = chain.current(0)
    assert load_bundle((tmp_path / "b3.bundle").read_bytes(), keyring).version == 1
    with pytest.raises(BundleSignatureError):
        load_bundle((tmp_path / "b2.bundle").read_bytes(), keyring)
