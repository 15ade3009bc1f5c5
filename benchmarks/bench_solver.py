"""Benchmark: privmap's fast solver against cvxpy + Clarabel on program (19).

Run from the repository root:

    python benchmarks/bench_solver.py                      # full table (slow: cvxpy at K = 512)
    python benchmarks/bench_solver.py --ks 64 128 --large-ks 1024 --hard-ks 64 --adult-ks

Every budget is a fraction of the perfect-privacy distortion Delta0, computed exactly
(:func:`privmap.offline.perfect_privacy_distortion`, certified to 1e-9 relative) by
:func:`delta_for`. The best constant-output distortion min_j sum_c p(c) d(c, j), an upper
bound on Delta0 that earlier versions of this script used in part 2 by mistake,
is printed only as the labelled column ``const_D``.

Part 1 solves the same instances with both solvers in this one process: SSI-2012 taste
ratings (data/ssi2012/tastes_gender.csv, private attribute gender) quantized to K
clusters with privmap's own quantizer, L2 distortion between representatives, and
Delta at 0.1, 0.3 and 0.6 of the perfect-privacy distortion. It prints K, Delta, the
time of each solver, their ratio, the objective difference in bits, the fast solver's
certified gap and the distortion slack (Delta - E d) of the fast table.

Part 2 runs the fast solver alone on synthetic 50-dimensional ratings (a latent-class
model whose ratings depend on a binary private attribute) for larger K, with time,
gap, Newton steps and memory (the size of D and the process's maximum resident set
size so far; the solve is timed without memory tracing, which would slow it), and fits
one growth exponent of time in K per budget, naming the K it was fitted on.

Part 3 (hard instances) draws few users per cluster from the same latent-class
model (``--hard-users`` per cluster on average, so most clusters hold a single private
class) and solves them with both solvers side by side, like part 1.

Part 4 (real data) runs the fast solver alone on UCI Adult (data/adult, the
48,842 rows of adult.data and adult.test; age, education-num, capital-gain, capital-loss
and hours-per-week, standardized; private attribute ``--adult-private``, sex or income),
quantized by scikit-learn's MiniBatchKMeans (seed 0) to K centers, L2 distortion.

Part 5 solves instances saved from a real ``privmap build`` (``--saved FILE.npz``,
arrays ``p_ac`` and ``D``: UCI Adult's raw columns, the build's integer k-means representatives,
L2 distortion), timed in CPU seconds, new and reference revision side by side.

``--reference-rev REV`` also times ``solve_fast`` as it was at git revision REV (that revision's
whole package, loaded into this process: :func:`modules_at`) right after each fast solve in every part, and prints its
time, the ratio ref/new, its gap and its Newton steps: on a shared machine only such
same-process ratios compare two versions. ``--cache DIR`` keeps Delta0 per instance in DIR
between runs (keyed by a hash of p(a, c) and D), for repeated experiments.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import importlib
import importlib.util
import math
import pathlib
import resource
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent


def real_instance(K: int):
    from privmap.offline.data._dataset import load_dataset
    from privmap.offline.data._distortion import pairwise
    from privmap.offline.data._prior import joint_prior
    from privmap.offline.data._quantize import quantize

    ds = load_dataset(ROOT / "data" / "ssi2012" / "tastes_gender.csv", private="gender")
    qz = quantize(ds.public, K, seed=0)
    p_ac = joint_prior(ds.private, qz.labels, len(ds.classes), qz.k)
    return p_ac, pairwise(qz.centers, qz.centers, "l2")


def synthetic_instance(K: int, seed: int = 0, dim: int = 50, n_latent: int = 8, n: int | None = None):
    """Latent-class 50-dim ratings in 1..5 correlated with a binary private attribute.

    ``n`` users (default max(20 K, 20000)), quantized by MiniBatchKMeans to K clusters.
    """
    from sklearn.cluster import MiniBatchKMeans

    rng = np.random.default_rng(seed)
    n = max(20 * K, 20000) if n is None else n
    private = (rng.random(n) < 0.5).astype(int)
    latent = rng.integers(0, n_latent, n)
    shift = rng.normal(0.0, 1.0, (n_latent, dim))
    gshift = rng.normal(0.0, 0.6, dim)
    X = 3.0 + shift[latent] + np.where(private[:, None] == 1, gshift, -gshift) + rng.normal(0.0, 1.0, (n, dim))
    X = np.clip(np.round(X), 1, 5)
    km = MiniBatchKMeans(n_clusters=K, random_state=0, n_init=1, batch_size=4096).fit(X)
    return _instance(private, km.labels_, km.cluster_centers_)


def hard_instance(K: int, users_per_cluster: float = 3.0, seed: int = 0):
    """The latent-class ratings of :func:`synthetic_instance` with few users per cluster."""
    return synthetic_instance(K, seed=seed, n=int(round(users_per_cluster * K)))


def adult_instance(K: int, private: str = "sex"):
    """UCI Adult, 5 standardized numeric features, k-means centers, L2 distortion."""
    from bench_build import adult_fields
    from sklearn.cluster import MiniBatchKMeans

    rows = adult_fields()
    X = np.array([[float(r[i]) for i in (0, 4, 10, 11, 12)] for r in rows])
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    if private == "sex":
        a = np.array([r[9] == "Male" for r in rows], dtype=int)
    else:
        a = np.array([r[14] == ">50K" for r in rows], dtype=int)
    km = MiniBatchKMeans(n_clusters=K, random_state=0, n_init=1, batch_size=4096).fit(X)
    return _instance(a, km.labels_, km.cluster_centers_)


def _instance(private, labels, centers):
    """p(a, c) from labels and the L2 distortion between the K centers."""
    K = centers.shape[0]
    p_ac = np.zeros((int(private.max()) + 1, K))
    np.add.at(p_ac, (private, labels), 1.0)
    p_ac /= p_ac.sum()
    sq = (centers ** 2).sum(axis=1)
    D = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2.0 * centers @ centers.T, 0.0))
    np.fill_diagonal(D, 0.0)
    return p_ac, D


CACHE: pathlib.Path | None = None     # set by --cache: where delta_for keeps Delta0 per instance


def delta_for(p_ac, D, frac):
    """The budget ``frac`` x Delta0, with Delta0 the exact perfect-privacy distortion.

    With ``--cache DIR`` (module global ``CACHE``), Delta0 is read from DIR when this exact
    instance (SHA-1 of p_ac and D) was solved before, and stored there otherwise; a cached
    Delta0 reports the time its computation took then.

    Returns
    -------
    (delta, delta0, seconds) : the budget, Delta0 and the time its computation took
    """
    from privmap.offline.solvers import perfect_privacy_distortion
    path = None
    if CACHE is not None:
        key = hashlib.sha1(np.ascontiguousarray(p_ac).tobytes() + np.ascontiguousarray(D).tobytes())
        path = CACHE / f"delta0_{key.hexdigest()}.npy"
        if path.exists():
            delta0, seconds = np.load(path)
            return frac * float(delta0), float(delta0), float(seconds)
    delta0, seconds = timed(perfect_privacy_distortion, p_ac, D)
    if path is not None:
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, np.array([delta0, seconds]))
    return frac * delta0, delta0, seconds


@functools.cache
def modules_at(rev):
    """Every ``privmap`` module of git revision ``rev`` that ``privmap.offline.solvers`` imports, loaded
    into this process: {dotted name: module}.

    The whole package of that revision is extracted (:func:`bench_build.package_at`, either layout)
    and imported with this process's ``privmap`` modules set aside, which are put back afterwards;
    so each solver of ``rev`` runs with that revision's parts throughout (its instance checks,
    result, information measures), whatever files they were split into then.
    """
    import bench_build
    folder = bench_build.package_at(rev, pathlib.Path(tempfile.mkdtemp(prefix="privmap-rev-")))
    ours = {name: sys.modules.pop(name) for name in list(sys.modules)
            if name == "privmap" or name.startswith("privmap.")}
    sys.path.insert(0, str(folder))
    try:
        importlib.import_module("privmap.offline.solvers")
        for private in ("_fast_solver", "_perfect"):      # revisions before the solvers' sub-packages
            if importlib.util.find_spec(f"privmap.offline.solvers.{private}") is not None:
                importlib.import_module(f"privmap.offline.solvers.{private}")
    finally:
        sys.path.remove(str(folder))
        theirs = {name: sys.modules.pop(name) for name in list(sys.modules)
                  if name == "privmap" or name.startswith("privmap.")}
        sys.modules.update(ours)
    return theirs


def function_at(rev, name):
    """``privmap.offline.solvers``' function ``name`` as it was at git revision ``rev`` (:func:`modules_at`):
    from its face, or, before the face exported it, from the private module that held it."""
    modules = modules_at(rev)
    for module in ("privmap.offline.solvers", "privmap.offline.solvers._fast_solver",
                   "privmap.offline.solvers._perfect"):
        if module in modules and hasattr(modules[module], name):
            return getattr(modules[module], name)
    raise LookupError(f"privmap.offline.solvers.{name} not found at {rev}")


def solver_at(rev):
    """``solve_fast`` as it was at git revision ``rev`` (:func:`function_at`)."""
    return function_at(rev, "solve_fast")


def constant_output_distortion(p_ac, D):
    """min_j sum_c p(c) d(c, j): mapping everyone to one output (an upper bound on Delta0)."""
    return float((p_ac.sum(axis=0) @ D).min())


def timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def _reference_columns(reference, p_ac, D, delta, t_fast, **kw):
    """Header-less columns: the reference revision's time, its ratio to ``t_fast``, gap, steps.

    Empty when ``reference`` is None; ``nan`` where the reference could not certify.
    """
    from privmap.offline._errors import SolverError
    if reference is None:
        return ""
    try:
        ref, t_ref = timed(reference, p_ac, D, delta, **kw)
    except SolverError:
        return f" {'failed':>9} {math.nan:>7.2f} {math.nan:>9.2e} {'-':>6}"
    return (f" {t_ref:>9.3f} {t_ref / t_fast:>7.2f} {ref.gap_bits:>9.2e} "
            f"{ref.info.get('newton_steps', 0):>6}")


def _reference_header(reference):
    return f" {'ref_s':>9} {'ref/new':>7} {'ref_gap':>9} {'ref_nt':>6}" if reference else ""


def side_by_side(title, make, ks, fracs, tol_bits, cvxpy_limit_s, reference=None):
    """Both solvers on the same instances in this process (parts 1 and 3); with
    ``reference`` (a ``solve_fast``), that one too.

    Besides the columns of part 1 it prints Clarabel's status (``Solved`` or
    ``AlmostSolved``), the reference's leakage above the fast solver's proven lower
    bound (``ref-LB``, bits: a real agreement is small and not below about -1e-7)
    and the reference table's relative overshoot of the budget (``ref_over``).
    """
    from privmap.offline._errors import SolverError
    from privmap.offline.solvers import solve_cvxpy, solve_fast

    print(f"{title}, cvxpy + Clarabel vs fast, same process, Delta = frac x Delta0, "
          f"tol {tol_bits:g} bits")
    print(f"{'K':>5} {'frac':>5} {'Delta':>9} {'Delta0':>9} {'const_D':>9} {'cvxpy_s':>9} "
          f"{'fast_s':>9} {'ratio':>8} {'dJ_bits':>10} {'gap_bits':>9} {'slack':>9} {'newton':>6} "
          f"{'clarabel':>12} {'ref-LB':>9} {'ref_over':>9}" + _reference_header(reference))
    for K in ks:
        p_ac, D = make(K)
        const = constant_output_distortion(p_ac, D)
        for frac in fracs:
            delta, delta0, _ = delta_for(p_ac, D, frac)
            try:
                ref, t_ref = timed(solve_cvxpy, p_ac, D, delta, time_limit_s=cvxpy_limit_s)
            except SolverError as exc:          # the reference itself can fail; say so
                ref, t_ref = None, math.nan
                print(f"      cvxpy failed at K={K}, frac={frac}: {exc}")
            try:
                fast, t_fast = timed(solve_fast, p_ac, D, delta, tol_bits=tol_bits)
            except SolverError as exc:          # so can the fast solver (it could not certify)
                print(f"      fast failed at K={K}, frac={frac}: {exc}")
                continue
            diff = math.nan if ref is None else fast.leakage_bits - ref.leakage_bits
            above_lb = math.nan if ref is None else ref.leakage_bits - fast.lower_bound_bits
            over = math.nan if ref is None else ref.distortion / delta - 1.0
            status = "failed" if ref is None else ref.info["clarabel_status"]
            print(f"{K:>5} {frac:>5.2f} {delta:>9.4f} {delta0:>9.4f} {const:>9.4f} {t_ref:>9.3f} "
                  f"{t_fast:>9.3f} {t_ref / t_fast:>8.2f} {diff:>10.2e} {fast.gap_bits:>9.2e} "
                  f"{delta - fast.distortion:>9.2e} {fast.info.get('newton_steps', 0):>6} "
                  f"{status:>12} {above_lb:>9.1e} {over:>9.1e}"
                  + _reference_columns(reference, p_ac, D, delta, t_fast, tol_bits=tol_bits),
                  flush=True)


def alone(title, make, ks, fracs, tol_bits, max_iter, reference=None):
    """The fast solver alone at large K (parts 2 and 4); one growth exponent per budget. With
    ``reference`` (a ``solve_fast``), that one too on each instance, right after."""
    from privmap.offline._errors import SolverError
    from privmap.offline.solvers import solve_fast

    print(f"\n{title}, fast solver alone, Delta = frac x Delta0, tol {tol_bits:g} bits")
    print(f"{'K':>6} {'frac':>5} {'Delta':>9} {'Delta0':>9} {'const_D':>9} {'delta0_s':>8} "
          f"{'time_s':>9} {'gap_bits':>9} {'J_bits':>9} {'nnz/row':>8} {'newton':>6} "
          f"{'D_MiB':>7} {'maxrss_MiB':>10}" + _reference_header(reference))
    times = {frac: [] for frac in fracs}
    for K in ks:
        p_ac, D = make(K)
        const = constant_output_distortion(p_ac, D)
        _, delta0, t0 = delta_for(p_ac, D, 1.0)
        for frac in fracs:
            started = time.perf_counter()
            try:
                res, t = timed(solve_fast, p_ac, D, frac * delta0, tol_bits=tol_bits, max_iter=max_iter)
            except SolverError as exc:
                print(f"{K:>6} {frac:>5.2f} failed after {time.perf_counter() - started:.0f} s: {exc}",
                      flush=True)
                continue
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            times[frac].append((K, t))
            print(f"{K:>6} {frac:>5.2f} {frac * delta0:>9.4f} {delta0:>9.4f} {const:>9.4f} {t0:>8.2f} "
                  f"{t:>9.2f} {res.gap_bits:>9.2e} {res.leakage_bits:>9.5f} "
                  f"{res.info.get('nonzeros_per_row', float('nan')):>8.2f} "
                  f"{res.info.get('newton_steps', 0):>6} {D.nbytes / 2 ** 20:>7.0f} {rss:>10.1f}"
                  + _reference_columns(reference, p_ac, D, frac * delta0, t, tol_bits=tol_bits,
                                       max_iter=max_iter),
                  flush=True)
    for frac, pairs in times.items():
        if len(pairs) >= 2:
            slope = np.polyfit(np.log([k for k, _ in pairs]), np.log([t for _, t in pairs]), 1)[0]
            print(f"fitted growth exponent of time in K at frac {frac}: {slope:.2f} "
                  f"(K = {', '.join(str(k) for k, _ in pairs)})")


def saved(title, paths, fracs, tol_bits, reference):
    """Part 5: instances saved by a real build (``.npz`` with ``p_ac`` (|A|, K) and ``D`` (K, K)),
    the fast solver and, with ``reference``, the reference revision's right after it, both timed
    in CPU seconds of this process (on a shared machine wall time says little), with the ratio
    ref/new, both leakages and their difference, both gaps, Newton steps and the budget's slack.
    """
    from privmap.offline._errors import SolverError
    from privmap.offline.solvers import solve_fast

    def cpu(fn, *args, **kw):
        t0 = time.process_time()
        try:
            return fn(*args, **kw), time.process_time() - t0
        except SolverError as exc:
            print(f"      failed: {exc}", flush=True)
            return None, time.process_time() - t0

    print(f"\n{title}, CPU seconds, Delta = frac x Delta0, tol {tol_bits:g} bits")
    print(f"{'K':>6} {'frac':>5} {'Delta':>10} {'new_cpu':>8} {'ref_cpu':>8} {'ref/new':>7} "
          f"{'J_new':>11} {'J_ref':>11} {'dJ_bits':>9} {'gap_new':>8} {'gap_ref':>8} "
          f"{'nt_new':>6} {'nt_ref':>6} {'nnz/row':>7} {'slack':>9}")
    for path in paths:
        data = np.load(path)
        p_ac, D = data["p_ac"], data["D"]
        for frac in fracs:
            delta, _, _ = delta_for(p_ac, D, frac)
            new, t_new = cpu(solve_fast, p_ac, D, delta, tol_bits=tol_bits)
            ref, t_ref = cpu(reference, p_ac, D, delta, tol_bits=tol_bits) if reference else (None, math.nan)
            if new is None:
                continue
            j_ref = ref.leakage_bits if ref is not None else math.nan
            print(f"{D.shape[0]:>6} {frac:>5.2f} {delta:>10.4f} {t_new:>8.2f} {t_ref:>8.2f} "
                  f"{t_ref / t_new:>7.2f} {new.leakage_bits:>11.8f} {j_ref:>11.8f} "
                  f"{new.leakage_bits - j_ref:>9.1e} {new.gap_bits:>8.1e} "
                  f"{ref.gap_bits if ref is not None else math.nan:>8.1e} "
                  f"{new.info.get('newton_steps', 0):>6} "
                  f"{ref.info.get('newton_steps', 0) if ref is not None else 0:>6} "
                  f"{new.info.get('nonzeros_per_row', math.nan):>7.2f} {delta - new.distortion:>9.2e}",
                  flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", type=int, nargs="*", default=[64, 128, 256, 512],
                    help="part 1 (SSI-2012, both solvers)")
    ap.add_argument("--fracs", type=float, nargs="*", default=[0.1, 0.3, 0.6],
                    help="budgets as fractions of Delta0, every part")
    ap.add_argument("--large-ks", type=int, nargs="*", default=[1024, 2048, 4096, 8192],
                    help="part 2 (synthetic, fast solver alone)")
    ap.add_argument("--hard-ks", type=int, nargs="*", default=[64, 128, 256, 512, 1024],
                    help="part 3 (few users per cluster, both solvers)")
    ap.add_argument("--hard-users", type=float, default=3.0,
                    help="users per cluster on average in part 3")
    ap.add_argument("--adult-ks", type=int, nargs="*", default=[256, 1024, 4096, 8192],
                    help="part 4 (UCI Adult, fast solver alone)")
    ap.add_argument("--adult-private", choices=["sex", "income"], default="sex")
    ap.add_argument("--saved", type=pathlib.Path, nargs="*", default=[],
                    help="part 5: .npz instances saved from a real build (arrays p_ac and D), "
                         "timed in CPU seconds, with --reference-rev side by side")
    ap.add_argument("--max-iter", type=int, default=None,
                    help="most Newton steps of the fast solver in parts 2 and 4 (default: the "
                         "solver's, max(1000, K / 4))")
    ap.add_argument("--cvxpy-time-limit", type=float, default=600.0,
                    help="most seconds Clarabel may iterate per instance in parts 1 and 3")
    ap.add_argument("--reference-rev", default=None,
                    help="also time solve_fast as of this git revision in this process, right "
                         "after each fast solve, and print ref_s, ref/new (time ratio), ref_gap "
                         "and ref_nt (Newton steps); parts 1 to 4")
    ap.add_argument("--cache", type=pathlib.Path, default=None,
                    help="directory keeping Delta0 per instance between runs (default: none, "
                         "computed every run)")
    ap.add_argument("--tol-bits", type=float, default=1e-5,
                    help="gap the fast solver certifies in parts 1 and 3 (the builder's default)")
    ap.add_argument("--large-tol-bits", type=float, default=1e-6,
                    help="gap the fast solver certifies in parts 2 and 4 (the large-K target)")
    args = ap.parse_args(argv)
    global CACHE
    CACHE = args.cache
    ref = solver_at(args.reference_rev) if args.reference_rev else None
    if ref is not None:
        print(f"reference: solve_fast at {args.reference_rev}; ref/new > 1 means this tree is faster")
    if args.ks:
        side_by_side("Part 1: SSI-2012 ratings", real_instance, args.ks, args.fracs, args.tol_bits,
                     args.cvxpy_time_limit, ref)
    if args.large_ks:
        alone("Part 2: synthetic 50-dim ratings", synthetic_instance, args.large_ks, args.fracs,
              args.large_tol_bits, args.max_iter, ref)
    if args.hard_ks:
        print()
        side_by_side(f"Part 3: hard instances, {args.hard_users:g} users per cluster",
                     lambda K: hard_instance(K, args.hard_users), args.hard_ks, args.fracs,
                     args.tol_bits, args.cvxpy_time_limit, ref)
    if args.adult_ks:
        alone(f"Part 4: UCI Adult, private {args.adult_private}",
              lambda K: adult_instance(K, args.adult_private), args.adult_ks, args.fracs,
              args.large_tol_bits, args.max_iter, ref)
    if args.saved:
        saved("Part 5: instances saved from real builds", args.saved, args.fracs, args.tol_bits, ref)
    return 0


if __name__ == "__main__":
    sys.exit(main())
