"""Averaging attack on repeated releases: fresh draws per call vs one permanent draw per input.

For each example bundle in tables/ (verified with tables/public.pem), users are drawn from the
bundle's own prior p(a, c). Each user is asked CALLS times:

- ``fresh``: what a device without state does, a new draw per call (the counts of a user's
  CALLS releases are multinomial(CALLS, q(. | c)); numpy draws them, offline only);
- ``permanent``: what ``DeviceState`` does, one draw per (device secret, bundle, c) derived by
  ``privmap.device.release_bits`` and the device's exact sampler, repeated CALLS times.

The attacker knows the table and the prior and computes the exact posterior p(a | view). The
script prints the attacker's accuracy and the leakage I(A; view) = H(A) - E H(A | view)
(Monte Carlo over users, exact posterior), next to the exact one-release leakage I(A; C_hat)
and the raw-cluster leakage I(A; C) that averaging converges to.

    python benchmarks/bench_repeated_release.py [--users 20000] [--calls 1 2 3 10 1000]
"""
from __future__ import annotations

import argparse
import hashlib
import pathlib

import numpy as np

from privmap.device import Keyring, read_bundle_file
from privmap.device.randomness import release_bits, sample_row

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUNDLES = ("ssi2012-gender-k64.bundle", "census-income-erasures.bundle")


def entropy_bits(p: np.ndarray) -> np.ndarray:
    """Row-wise entropy in bits of the probability rows of ``p`` (shape (n, |A|))."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.nansum(np.where(p > 0, p * np.log2(p), 0.0), axis=1)


def posterior(joint: np.ndarray, log_q: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """p(a | view) for views given as release counts (n, K_out); joint p(a, c) (|A|, K_in)."""
    safe = np.where(np.isfinite(log_q), log_q, 0.0)
    impossible = (counts[:, None, :] > 0) & ~np.isfinite(log_q)[None, :, :]
    log_like = counts @ safe.T                                  # (n, K_in)
    log_like[impossible.any(axis=2)] = -np.inf
    log_like -= log_like.max(axis=1, keepdims=True)
    like = np.exp(log_like)                                     # (n, K_in)
    post = like @ joint.T                                       # (n, |A|)
    return post / post.sum(axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20000)
    parser.add_argument("--calls", type=int, nargs="+", default=[1, 2, 3, 10, 1000])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    keyring = Keyring.from_pem_files(ROOT / "tables" / "public.pem")
    rng = np.random.default_rng(args.seed)  # simulation only; the device never sees it
    for name in BUNDLES:
        bundle = read_bundle_file(ROOT / "tables" / name, keyring)
        joint = np.array(bundle.prior, dtype=float)
        joint /= joint.sum()
        k_in, k_out = len(bundle.inputs), len(bundle.outputs)
        q = np.zeros((k_in, k_out))
        for c in range(k_in):
            q[c, list(bundle.index[c])] = np.array(bundle.weight[c], dtype=float) / (1 << bundle.bits)
        with np.errstate(divide="ignore"):
            log_q = np.log(q)
        p_a = joint.sum(axis=1)
        h_a = float(entropy_bits(p_a[None, :])[0])
        p_c = joint.sum(axis=0)
        raw = h_a - float(np.sum(p_c * entropy_bits((joint / np.where(p_c > 0, p_c, 1)).T)))
        p_ahat = joint @ q
        p_out = p_ahat.sum(axis=0)
        one = h_a - float(np.sum(p_out * entropy_bits((p_ahat / np.where(p_out > 0, p_out, 1)).T)))
        flat = rng.choice(joint.size, size=args.users, p=joint.ravel())
        a, c = np.divmod(flat, k_in)
        print(f"{name}: |A| = {len(bundle.classes)}, K_in = {k_in}, K_out = {k_out}, {args.users} users")
        print(f"  exact: declared {bundle.metrics['leakage_bits']:.4f} bits, one release I(A;C^) = {one:.4f}, "
              f"raw cluster I(A;C) = {raw:.4f} bits; MAP accuracy from C: "
              f"{float(joint.max(axis=0).sum()):.4f}, from one C^: {float(p_ahat.max(axis=0).sum()):.4f}")
        # permanent: one derived draw per user (each user a device with its own secret)
        draws = np.array([sample_row(bundle.index[ci], bundle.weight[ci],
                                     release_bits(hashlib.sha256(b"bench device %d" % u).digest(),
                                                  bundle.sha256, int(ci)).randbits(bundle.bits))
                          for u, ci in enumerate(c)])
        print(f"  {'calls':>6} {'fresh acc':>10} {'fresh I bits':>13} {'perm acc':>9} {'perm I bits':>12}")
        for calls in args.calls:
            counts = np.array([rng.multinomial(calls, q[ci]) for ci in c], dtype=float)
            post = posterior(joint, log_q, counts)
            fresh_acc = float(np.mean(post.argmax(axis=1) == a))
            fresh_i = h_a - float(np.mean(entropy_bits(post)))
            perm_counts = np.zeros((args.users, k_out))
            perm_counts[np.arange(args.users), draws] = 1.0  # the attacker knows the releases repeat
            perm_post = posterior(joint, log_q, perm_counts)
            perm_acc = float(np.mean(perm_post.argmax(axis=1) == a))
            perm_i = h_a - float(np.mean(entropy_bits(perm_post)))
            print(f"  {calls:>6} {fresh_acc:>10.4f} {fresh_i:>13.4f} {perm_acc:>9.4f} {perm_i:>12.4f}")


if __name__ == "__main__":
    main()
