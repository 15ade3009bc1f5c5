"""The operator's signing key files."""
from __future__ import annotations

import os
import signal
import stat

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from privmap.device import Keyring
from privmap.offline._errors import BuildError
from privmap.offline.bundle._keys import generate_keypair, load_private_key


def test_generate_writes_a_0600_private_key_and_a_public_key(tmp_path):
    keydir = tmp_path / "keys"
    pair = generate_keypair(keydir)
    assert pair.private_path == keydir / "private.pem" and pair.public_path == keydir / "public.pem"
    assert stat.S_IMODE(os.stat(pair.private_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(keydir).st_mode) == 0o700
    assert pair.private_path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    key = load_private_key(pair.private_path)
    keyring = Keyring.from_pem_files(pair.public_path)
    assert keyring.key_ids == {bytes.fromhex(pair.key_id)}
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert Keyring([raw]).key_ids == keyring.key_ids


def test_private_key_is_created_0600_even_with_a_permissive_umask(tmp_path):
    old = os.umask(0)
    try:
        pair = generate_keypair(tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(pair.private_path).st_mode) == 0o600


def test_existing_keys_are_never_overwritten(tmp_path):
    pair = generate_keypair(tmp_path)
    before = pair.private_path.read_bytes(), pair.public_path.read_bytes()
    with pytest.raises(BuildError, match="overwrite"):
        generate_keypair(tmp_path)
    pair.public_path.unlink()
    with pytest.raises(BuildError, match="overwrite"):
        generate_keypair(tmp_path)
    assert pair.private_path.read_bytes() == before[0]
    assert not pair.public_path.exists()


def test_existing_public_key_blocks_generation_without_leaving_a_private_key(tmp_path):
    (tmp_path / "public.pem").write_text("someone else's key")
    with pytest.raises(BuildError, match="overwrite"):
        generate_keypair(tmp_path)
    assert not (tmp_path / "private.pem").exists()


def test_symlinked_private_key_path_is_refused(tmp_path):
    target = tmp_path / "elsewhere"
    (tmp_path / "keys").mkdir()
    os.symlink(target, tmp_path / "keys" / "private.pem")
    with pytest.raises(BuildError):
        generate_keypair(tmp_path / "keys")
    assert not target.exists()


def test_password_protected_key(tmp_path):
    pair = generate_keypair(tmp_path, password=b"correct horse")
    assert b"ENCRYPTED" in pair.private_path.read_bytes()
    assert isinstance(load_private_key(pair.private_path, password=b"correct horse"), Ed25519PrivateKey)
    with pytest.raises(BuildError, match="password"):
        load_private_key(pair.private_path)
    with pytest.raises(BuildError, match="password"):
        load_private_key(pair.private_path, password=b"wrong")


def test_load_errors_are_clear(tmp_path):
    with pytest.raises(BuildError, match="not found"):
        load_private_key(tmp_path / "missing.pem")
    garbage = tmp_path / "garbage.pem"
    garbage.write_bytes(b"not a key")
    garbage.chmod(0o600)
    with pytest.raises(BuildError, match="PEM"):
        load_private_key(garbage)
    loose = generate_keypair(tmp_path / "loose").private_path
    loose.chmod(0o644)
    with pytest.raises(BuildError, match="chmod 600"):
        load_private_key(loose)
    assert isinstance(load_private_key(loose, check_permissions=False), Ed25519PrivateKey)
    ec_path = tmp_path / "ec.pem"
    ec_path.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    ec_path.chmod(0o600)
    with pytest.raises(BuildError, match="not an Ed25519"):
        load_private_key(ec_path)
    with pytest.raises(BuildError):
        load_private_key(tmp_path)
    with pytest.raises(BuildError, match="password"):
        load_private_key(generate_keypair(tmp_path / "plain").private_path, password=b"x")


def test_a_public_key_given_as_the_signing_key_is_named_a_public_key_not_a_permission_problem(tmp_path):
    public = generate_keypair(tmp_path / "k").public_path
    for mode in (0o644, 0o600):  # the usual public.pem mode, and one that passes the permission check
        public.chmod(mode)
        with pytest.raises(BuildError, match="holds a public key; signing needs the private key") as info:
            load_private_key(public)
        assert "chmod" not in str(info.value)


def test_keygen_refuses_a_group_or_world_writable_directory(tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    with pytest.raises(BuildError, match="writable by group or others"):
        generate_keypair(loose)
    assert not list(loose.iterdir())


def test_private_key_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "private.pem"
    os.mkfifo(fifo, 0o600)
    signal.alarm(10)
    try:
        with pytest.raises(BuildError, match="not a regular file"):
            load_private_key(fifo)
    finally:
        signal.alarm(0)


def test_passphrase_file_encrypts_the_key_and_build_needs_it(tmp_path, run, ratings_csv):
    secret = tmp_path / "pass.txt"
    secret.write_text("correct horse battery staple\n")
    run("keygen", tmp_path / "k", "--passphrase-file", secret)
    assert b"ENCRYPTED PRIVATE KEY" in (tmp_path / "k" / "private.pem").read_bytes()
    args = ("build", ratings_csv, "--private", "gender", "--clusters", 4, "--delta-fraction", 0.5,
            "--key", tmp_path / "k" / "private.pem", "--out", tmp_path / "b.bundle")
    failed = run(*args, ok=False)
    assert failed.exit_code == 1 and "password is needed" in failed.output and not (tmp_path / "b.bundle").exists()
    run(*args, "--passphrase-file", secret)
    assert (tmp_path / "b.bundle").exists()
