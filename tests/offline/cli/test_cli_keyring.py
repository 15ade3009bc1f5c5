"""``privmap keyring create|rotate`` and ``privmap cosign``: k-of-n signing from the command line."""
import json
import os
import signal

import pytest

from privmap.device import KeyringChain, load_bundle
from privmap.device.errors import BundleSignatureError


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


# -- k of n from the command line: the forms outside checks rely on ------------------------------

def _key_id(holders, name):
    from privmap.device import Keyring
    return next(iter(Keyring.from_pem_files(holders / name / "public.pem"))).hex()


@pytest.fixture(scope="module")
def two_of_two(holders, ratings_csv, tmp_path_factory, run):
    """B: a bundle from ``privmap build`` (format 1, key a); RING: a 2-of-2 keyring of a and b."""
    folder = tmp_path_factory.mktemp("two_of_two")
    run("build", ratings_csv, "--private", "gender", "--clusters", 4, "--delta-fraction", 0.5, "--holdout-folds", 0,
        "--key", holders / "a" / "private.pem", "--out", folder / "B.bundle")
    run("keyring", "create", "--public", holders / "a" / "public.pem", "--public", holders / "b" / "public.pem",
        "--threshold", 2, "--key", holders / "a" / "private.pem", "--key", holders / "b" / "private.pem",
        "--out", folder / "RING")
    return folder


def test_cosign_keeps_the_builders_signature_and_verify_enforces_the_keyring(holders, two_of_two, run):
    h, f = holders, two_of_two
    run("cosign", f / "B.bundle", "--key", h / "b" / "private.pem", "--out", f / "C.bundle")
    run("verify", f / "C.bundle", "--trusted", h / "a" / "public.pem")
    run("verify", f / "C.bundle", "--keyring", f / "RING")
    one = run("verify", f / "B.bundle", "--keyring", f / "RING", ok=False)
    assert one.exit_code == 1 and one.stderr == "error: 1 distinct trusted signature(s), the keyring needs 2\n"


def test_cosign_of_a_format_2_bundle_keeps_every_signature(holders, two_of_two, run):
    h, f = holders, two_of_two
    run("cosign", f / "B.bundle", "--key", h / "b" / "private.pem", "--out", f / "C2.bundle")
    run("cosign", f / "C2.bundle", "--key", h / "c" / "private.pem", "--out", f / "C3.bundle")
    for name in "abc":
        run("verify", f / "C3.bundle", "--trusted", h / name / "public.pem")
    info = json.loads(run("inspect", f / "C3.bundle", "--json").stdout)
    assert info["envelope_format"] == 2 and info["signature_verified"] is False
    assert info["signatures"] == sorted(_key_id(h, name) for name in "abc")


def test_inspect_reads_format_2_and_verifies_with_a_keyring(holders, two_of_two, run):
    h, f = holders, two_of_two
    run("cosign", f / "B.bundle", "--key", h / "b" / "private.pem", "--out", f / "C4.bundle")
    plain = json.loads(run("inspect", f / "B.bundle", "--json").stdout)
    cosigned = json.loads(run("inspect", f / "C4.bundle", "--keyring", f / "RING", "--json").stdout)
    assert plain["envelope_format"] == 1 and plain["signatures"] == [_key_id(h, "a")]
    assert cosigned["signature_verified"] is True and cosigned["envelope_format"] == 2
    assert {k: v for k, v in cosigned.items() if k not in ("signature_verified", "envelope_format", "signatures")} \
        == {k: v for k, v in plain.items() if k not in ("signature_verified", "envelope_format", "signatures")}
    refused = run("inspect", f / "B.bundle", "--keyring", f / "RING", ok=False)
    assert refused.exit_code == 1 and "needs 2" in refused.stderr


def test_sanitize_with_a_keyring_releases_only_a_bundle_that_meets_its_threshold(holders, two_of_two, ratings_csv,
                                                                               tmp_path, run):
    h, f = holders, two_of_two
    run("cosign", f / "B.bundle", "--key", h / "b" / "private.pem", "--out", f / "C5.bundle")
    users = tmp_path / "users.csv"
    users.write_text("".join(ratings_csv.read_text().splitlines(keepends=True)[:6]))
    for state in ((), ("--state", tmp_path / "state")):
        out = tmp_path / "out.csv"
        refused = run("sanitize", f / "B.bundle", users, out, "--keyring", f / "RING", *state, ok=False)
        assert refused.exit_code == 1 and "needs 2" in refused.stderr and not out.exists()
        run("sanitize", f / "C5.bundle", users, out, "--keyring", f / "RING", *state)
        assert len(out.read_text().splitlines()) == 6
        out.unlink()


def test_repeated_keyrings_are_walked_as_rotations_and_revoke_left_out_keys(holders, two_of_two, tmp_path, run):
    h, f = holders, two_of_two
    run("keyring", "rotate", f / "RING", "--public", h / "b" / "public.pem", "--public", h / "c" / "public.pem",
        "--threshold", 2, "--key", h / "a" / "private.pem", "--key", h / "b" / "private.pem",
        "--key", h / "c" / "private.pem", "--out", tmp_path / "RING2")
    run("cosign", f / "B.bundle", "--key", h / "b" / "private.pem", "--out", tmp_path / "ab.bundle")
    run("cosign", tmp_path / "ab.bundle", "--key", h / "c" / "private.pem", "--out", tmp_path / "abc.bundle")
    chain = ("--keyring", f / "RING", "--keyring", tmp_path / "RING2")
    run("verify", tmp_path / "abc.bundle", *chain)
    revoked = run("verify", tmp_path / "ab.bundle", *chain, ok=False)  # a was rotated out: b alone is 1 of 2
    assert revoked.exit_code == 1 and "needs 2" in revoked.stderr
    backwards = run("verify", tmp_path / "abc.bundle", "--keyring", tmp_path / "RING2", "--keyring", f / "RING",
                    ok=False)
    assert backwards.exit_code == 1 and "RING" in backwards.stderr and "version" in backwards.stderr


# -- file arguments: regular files only, never blocked on nor read without bound -------------------

@pytest.fixture(params=["fifo", "device"])
def special(request, tmp_path):
    """A FIFO nobody writes to (an open that blocks would hang) or /dev/zero (endless)."""
    if request.param == "device":
        return "/dev/zero"
    fifo = tmp_path / "special"
    os.mkfifo(fifo)
    return fifo


@pytest.mark.parametrize("command", ["keyring-create", "keyring-rotate", "cosign"])
def test_a_file_argument_that_is_a_fifo_or_device_is_refused_before_it_is_read(holders, special, tmp_path, run,
                                                                              command):
    key, pub = holders / "a" / "private.pem", holders / "a" / "public.pem"
    args = {"keyring-create": ("keyring", "create", "--public", special),
            "keyring-rotate": ("keyring", "rotate", special, "--public", pub),
            "cosign": ("cosign", special)}[command]
    extra = ("--key", key, "--out", tmp_path / "out") + (("--threshold", 1) if command != "cosign" else ())
    signal.alarm(20)                     # a blocking open or an endless read would hang: fail instead
    try:
        result = run(*args, *extra, ok=False)
    finally:
        signal.alarm(0)
    assert result.exit_code == 1 and "is not a regular file" in result.stderr, result.output
    assert result.stderr.count("\n") == 1 and not (tmp_path / "out").exists()
