"""Benchmark: builds that protect a many-valued attribute, or several attributes at once.

Run from the repository root:

    python benchmarks/bench_many_classes.py                 # both parts
    python benchmarks/bench_many_classes.py --part gss      # the joint sex x age bands only (a minute)
    python benchmarks/bench_many_classes.py --part adult --private race occupation
    python benchmarks/bench_many_classes.py --part solves    # one program each, the solvers side by side

**Adult** (``--part adult``). UCI Adult (data/adult; the rows and columns of
``benchmarks/bench_build.py``: age, education-num, capital-gain, capital-loss, hours-per-week,
first ``--n`` rows of its seeded shuffle) built once per private attribute, ``privmap build
--clusters K --delta-fraction F --json`` with the default cross-fitting folds: sex (two classes),
the binary reference, always first, then each of ``--private`` (default race, marital-status and
occupation: five, seven and fifteen classes). Each build is a fresh child process (the command as
an operator runs it); its CPU seconds are those of the whole process tree, read with
``resource.getrusage(RUSAGE_CHILDREN)`` before and after it (user + system of the child and of
every descendant it reaped: the fold workers). Printed: each attribute's classes, CPU seconds,
wall seconds, and the ratio of its CPU seconds to the binary build's in the same run, with the
declared in-sample and cross-fitted leakage. This part takes minutes per attribute at K = 256
on two cores: the solver's cost grows with the classes.

**Solves** (``--part solves``). One program per attribute (sex, then each of ``--private``): UCI
Adult's five numeric columns quantized to ``--clusters`` K (k-means, seed 0) on all rows, the
prior p(a, c), l2 distances between the centres, Delta = ``--delta-fraction`` x Delta0. In one
process, one after the other on the same program, CPU seconds of each (their BLAS held to one
thread as in a build): ``solve`` as a build calls it (from six classes it starts from the interior
point, offered the outputs of the Delta0 table), the interior point alone on every output and the
fast solver's polish of its answer (certified as given, or by following the path), the interior
point alone from the Delta0 table's outputs (column generation over the outputs, from
``MIN_OUTPUTS`` outputs; its rounds), the fast path alone from a cold start (``solve_fast``; "gave
up" when it finds no certificate in its steps; left out with ``--without-fast-path``), and with
``--reference`` the conic reference (Clarabel) alone. Printed: CPU seconds, Newton steps, the
certified leakage, the ratio of the interior point's CPU seconds on every output to those from the
Delta0 table's outputs, and that of the fast path's to ``solve``'s. Not included: Delta0 (computed
first, once per program).

**GSS joint** (``--part gss``). The bundled GSS 1993 music module (data/gss1993_music/music.csv:
18 ratings 1-5 with blank cells, the private ``sex`` and ``age``, cut here into seven bands:
18-24, 25-34, 35-44, 45-54, 55-64, 65-74, 75+), its users split by a seeded shuffle into
``--train-fraction`` training users and the rest held out. ``privmap build --private sex,age_band
--clusters 64`` (``--delta-fraction``, default folds) on the training users protects the joint
attribute (fourteen classes). Printed: the build's CPU seconds (as above), and for the joint and
each column its in-sample leakage and cross-fitted (new-user) leakage with its interval, beside
an independent estimate on the held-out users the build never saw: their plug-in I(A; C^) under
the bundle (looked up by the device's rule, exact over the table's probabilities), less its
permutation bias (mean over ``--permutations`` shuffles of the column), with the centred
bootstrap interval cross-fitting uses (200 resamples of the held-out users), and the ROC AUC of
a logistic-regression attacker trained on half of the held-out users' simulated releases and
tested on the other half (one-vs-rest macro for age bands).
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_build import COLUMNS, adult_rows, write_csv  # noqa: E402

#: Age bands of the GSS part: (label, lowest age, highest age).
AGE_BANDS = (("18-24", 18, 24), ("25-34", 25, 34), ("35-44", 35, 44), ("45-54", 45, 54), ("55-64", 55, 64),
             ("65-74", 65, 74), ("75+", 75, 200))
#: The GSS music module's rating columns (its public data here).
MUSIC = ("bigb", "blug", "coun", "blue", "musi", "clas", "folk", "gosp", "jazz", "lati", "mood", "newa", "oper",
         "rap", "regg", "conr", "oldi", "hvym")


#: A child process running the ``privmap`` command line on its arguments.
PRIVMAP = [sys.executable, "-c", "import sys; from privmap.offline.cli import main; "
                                 "sys.argv = ['privmap'] + sys.argv[1:]; main()"]


def tree_cpu_seconds() -> float:
    """User + system CPU seconds of this process and of every child it reaped (the process tree's)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_build(args: list[str]) -> tuple[dict, float, float]:
    """``privmap build ARGS --json`` in a child process: its summary, the process tree's CPU
    seconds and the wall seconds. Raises RuntimeError with the child's last error line on failure."""
    cpu, wall = tree_cpu_seconds(), time.perf_counter()
    done = subprocess.run([*PRIVMAP, "build", *args, "--json"],
                          capture_output=True, text=True, cwd=ROOT)
    cpu, wall = tree_cpu_seconds() - cpu, time.perf_counter() - wall
    if done.returncode != 0:
        raise RuntimeError((done.stderr.strip().splitlines() or ["(no output)"])[-1])
    return json.loads(done.stdout), cpu, wall


def keygen(folder: pathlib.Path) -> pathlib.Path:
    """A signing key made by ``privmap keygen`` in ``folder``; the private key's path."""
    subprocess.run([*PRIVMAP, "keygen", str(folder / "k")], check=True,
                   capture_output=True, cwd=ROOT)
    return folder / "k" / "private.pem"


# -- UCI Adult: one build per attribute, the binary one first ---------------------------------------

def adult_part(args, work: pathlib.Path, key: pathlib.Path) -> None:
    print(f"UCI Adult, n = {args.n}, K = {args.clusters}, Delta = {args.delta_fraction} x Delta0, default folds")
    print(f"{'private':>15} {'classes':>7} {'CPU s':>9} {'wall s':>8} {'x binary':>9} {'leak bits':>10} "
          f"{'new users':>10}")
    binary = None
    for private in ["sex", *[p for p in args.private if p != "sex"]]:
        data = write_csv(adult_rows(seed=0, private=private)[:args.n], work / f"adult_{private}.csv", private)
        summary, cpu, wall = run_build([str(data), "--private", private, "--clusters", str(args.clusters),
                                        "--delta-fraction", str(args.delta_fraction), "--key", str(key),
                                        "--out", str(work / f"adult_{private}.bundle")])
        binary = cpu if binary is None else binary
        classes = len(json.loads(subprocess.run(
            [*PRIVMAP, "inspect", str(work / f"adult_{private}.bundle"), "--json"],
            capture_output=True, text=True, check=True, cwd=ROOT).stdout)["classes"])
        print(f"{private:>15} {classes:>7} {cpu:>9.1f} {wall:>8.1f} {cpu / binary:>9.2f} "
              f"{summary['leakage_bits']:>10.5f} {summary.get('holdout_leakage_bits', float('nan')):>10.5f}",
              flush=True)
    print(f"(columns: {', '.join(COLUMNS)}; CPU s of the whole process tree, getrusage of self and children)")


# -- GSS: sex x seven age bands, declared against held-out users ------------------------------------

def age_band(age: float) -> str:
    return next(label for label, lo, hi in AGE_BANDS if lo <= age <= hi)


def gss_split(args, work: pathlib.Path) -> tuple[pathlib.Path, list[dict]]:
    """The training CSV (ratings, sex, age_band) and the held-out users' rows, by a seeded shuffle."""
    with (ROOT / "data" / "gss1993_music" / "music.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["age_band"] = age_band(float(r["age"]))
        r["sex"] = {"1.0": "male", "2.0": "female"}.get(r["sex"], r["sex"])
    order = np.random.default_rng(args.seed).permutation(len(rows))
    cut = int(round(args.train_fraction * len(rows)))
    train, held = [rows[i] for i in order[:cut]], [rows[i] for i in order[cut:]]
    path = work / "gss_train.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow([*MUSIC, "sex", "age_band"])
        w.writerows([*(r[c] for c in MUSIC), r["sex"], r["age_band"]] for r in train)
    return path, held


def held_out_estimate(payload: dict, held: list[dict], args) -> dict:
    """The independent estimate on held-out users (module docstring): per private attribute (the
    joint, then each column) the bias-corrected plug-in leakage, its bootstrap interval and the
    logistic-regression attacker's ROC AUC on simulated releases."""
    from privmap.offline._information import leakage_bits
    from privmap.offline.bundle import payload_table
    from privmap.offline.data import joint_prior
    from privmap.offline.measures import logistic_attack, split_rows
    from privmap.offline.mechanisms.table import view_from_payload

    view = view_from_payload(payload)
    public = np.array([[float(r[c]) if r[c].strip() else np.nan for c in MUSIC] for r in held])
    symbols = view.lookup(public)
    served = symbols >= 0
    q = payload_table(payload)
    k_in = q.shape[0]
    rng = np.random.default_rng(args.seed)
    released = view.released_rows(view.release(symbols[served], rng))
    labels = {"joint": [json.dumps([r["sex"], r["age_band"]], separators=(",", ":")) for r in held],
              "sex": [r["sex"] for r in held], "age_band": [r["age_band"] for r in held]}
    out = {}
    for name, values in labels.items():
        classes, codes = np.unique(np.asarray(values)[served], return_inverse=True)
        k = len(classes)

        def plug_in(a, k=k):
            return leakage_bits(joint_prior(a, symbols[served], k, k_in), q)

        bias = float(np.mean([plug_in(rng.permutation(codes)) for _ in range(args.permutations)]))
        estimate = plug_in(codes) - bias
        boot = np.array([plug_in(codes[pick]) for pick in (rng.integers(0, codes.size, codes.size) for _ in range(200))])
        low, high = estimate + np.quantile(boot - boot.mean(), [0.025, 0.975])     # centred, as cross-fitting's
        train, test = split_rows(codes.size, codes, 0.5, args.seed)
        auc = logistic_attack(released[train], codes[train], released[test], codes[test], k, seed=args.seed).roc_auc
        out[name] = {"leakage_bits": max(estimate, 0.0), "low_bits": max(float(low), 0.0),
                     "high_bits": max(float(high), 0.0), "auc": auc, "classes": k, "users": int(codes.size)}
    return out


def gss_part(args, work: pathlib.Path, key: pathlib.Path) -> None:
    from privmap.offline.bundle import read_bytes, read_unverified

    train, held = gss_split(args, work)
    out = work / "gss_joint.bundle"
    summary, cpu, wall = run_build([str(train), "--private", "sex,age_band", "--clusters", str(args.gss_clusters),
                                    "--delta-fraction", str(args.delta_fraction), "--key", str(key),
                                    "--out", str(out)])
    payload = read_unverified(read_bytes(out))[0]
    m = payload["metrics"]
    estimate = held_out_estimate(payload, held, args)
    print(f"GSS 1993 music, sex x age in {len(AGE_BANDS)} bands ({len(payload['private']['classes'])} joint classes), "
          f"{summary['n']} training users, {len(held)} held out; K = {args.gss_clusters}, "
          f"Delta = {args.delta_fraction} x Delta0, {m['holdout_folds']:g} folds")
    print(f"build: {cpu:.1f} CPU s (process tree), {wall:.1f} s wall; distortion {m['distortion']:.4f}")
    print(f"{'private':>10} {'classes':>7} {'in-sample':>10} {'cross-fitted [interval]':>32} "
          f"{'held-out estimate [interval]':>32} {'held-out AUC':>12}")
    for name in ("joint", "sex", "age_band"):
        suffix = "" if name == "joint" else f"[{name}]"
        e = estimate[name]
        crossed = (f"{m['holdout_leakage_bits' + suffix]:.5f} [{m['holdout_leakage_low_bits' + suffix]:.5f}, "
                   f"{m['holdout_leakage_high_bits' + suffix]:.5f}]")
        independent = f"{e['leakage_bits']:.5f} [{e['low_bits']:.5f}, {e['high_bits']:.5f}]"
        print(f"{name:>10} {e['classes']:>7} {m['leakage_bits' + suffix]:>10.5f} {crossed:>32} {independent:>32} "
              f"{e['auc']:>12.4f}")
    print("(leakage in bits; held-out: plug-in I(A; C^) of the held-out users under the bundle less its "
          "permutation bias, bootstrap 95 %; AUC of a logistic regression on their simulated releases, "
          "one-vs-rest macro beyond two classes)")


def adult_program(private: str, clusters: int):
    """UCI Adult's program for one private column (the module docstring's solves part): its classes,
    the prior p(a, c) (|A|, K), the l2 distances D (K, K) between the k-means centres (seed 0, all
    rows), Delta0, and the outputs of the Delta0 table (those a build offers program (19)'s solve)."""
    from privmap.offline.data import joint_prior, pairwise, quantize
    from privmap.offline.solvers import perfect_privacy_table

    rows = adult_rows(private=private)
    X = np.array([[float(v) for v in r[:5]] for r in rows])
    classes, labels = np.unique([r[5] for r in rows], return_inverse=True)
    found = quantize(X, clusters, seed=0)
    p_ac = joint_prior(labels, found.labels, len(classes), found.k)
    D = pairwise(found.centers, found.centers, "l2")
    perfect, d_perfect = perfect_privacy_table(p_ac, D)
    return classes, p_ac, D, d_perfect, np.flatnonzero(p_ac.sum(axis=0) @ perfect > 0)


def solves_part(args) -> None:
    """The ``--part solves`` table (module docstring)."""
    from privmap.offline._errors import SolverError
    from privmap.offline.solvers import solve, solve_cvxpy, solve_fast, solve_interior

    def timed(call, *args, **kwargs):
        cpu = time.process_time()
        try:
            return call(*args, **kwargs), time.process_time() - cpu
        except SolverError as failure:
            return failure, time.process_time() - cpu

    print(f"UCI Adult, K = {args.clusters}, Delta = {args.delta_fraction} x Delta0, one program per attribute")
    print(f"{'private':>15} {'classes':>7} {'solve s':>8} {'start':>16} {'every s':>8} {'steps':>5} "
          f"{'columns s':>9} {'rounds':>6} {'every/col':>9} {'polish s':>8} {'polish':>8} {'fast s':>8} "
          f"{'steps':>5} {'fast/solve':>10} {'leak bits':>11}" + (f" {'conic s':>8}" if args.reference else ""))
    for private in ["sex", *args.private]:
        classes, p_ac, D, d_perfect, offered = adult_program(private, args.clusters)
        program = (p_ac, D, args.delta_fraction * d_perfect)
        built, built_s = timed(solve, *program, start_outputs=offered)
        start, start_s = timed(solve_interior, *program)
        columns, columns_s = timed(solve_interior, *program, start_outputs=offered)
        polished, polish_s = ((start, 0.0) if isinstance(start, SolverError)
                              else timed(solve_fast, *program, polish=start))
        fast, fast_s = (None, math.nan) if args.without_fast_path else timed(solve_fast, *program)
        line = (f"{private:>15} {len(classes):>7} {built_s:>8.1f} {_started(built):>16} "
                f"{start_s:>8.1f} {_steps(start):>5} {columns_s:>9.1f} {_rounds(columns):>6} "
                f"{start_s / columns_s:>9.2f} {polish_s:>8.2f} {_polish(polished):>8} "
                f"{fast_s:>8.1f} {_steps(fast):>5} {fast_s / built_s:>10.2f} {_leakage(built):>11}")
        if args.reference:
            line += f" {timed(solve_cvxpy, *program)[1]:>8.1f}"
        print(line, flush=True)
    print("(CPU s of this process; every: the interior point on every output; columns: from the Delta0 "
          "table's outputs, as a build starts it (rounds '-' below the size where it applies); steps: Newton "
          "steps, '-' where the solver gave up or did not run; polish: how the fast solver certified the "
          "interior point's answer on every output)")


def _started(result) -> str:
    return "failed" if isinstance(result, Exception) else str(result.info.get("started_from", "cold fast"))


def _leakage(result) -> str:
    return "failed" if isinstance(result, Exception) else f"{result.leakage_bits:.8f}"


def _steps(result) -> str:
    return "-" if result is None or isinstance(result, Exception) else str(result.info.get("newton_steps", ""))


def _rounds(result) -> str:
    if isinstance(result, Exception):
        return "failed"
    columns = result.info.get("columns")
    return "-" if columns is None else f"{columns['rounds']}{'+all' if columns['whole'] else ''}"


def _polish(result) -> str:
    return "failed" if isinstance(result, Exception) else str(result.info.get("polish", ""))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="See the module docstring for what each part measures.")
    parser.add_argument("--part", choices=("adult", "gss", "both", "solves"), default="both",
                        help="both: adult then gss; solves is run only when named (default: %(default)s).")
    parser.add_argument("--private", nargs="+", default=["race", "marital-status", "occupation"],
                        help="Adult: many-valued attributes built beside the binary sex (default: %(default)s).")
    parser.add_argument("--n", type=int, default=48842, help="Adult: rows of the seeded shuffle (default: all).")
    parser.add_argument("--clusters", type=int, default=256, help="Adult: K (default: %(default)s).")
    parser.add_argument("--gss-clusters", type=int, default=64, help="GSS: K (default: %(default)s).")
    parser.add_argument("--delta-fraction", type=float, default=0.5,
                        help="Delta as a fraction of Delta0 (default: %(default)s).")
    parser.add_argument("--train-fraction", type=float, default=0.7,
                        help="GSS: share of the users the bundle is built on (default: %(default)s).")
    parser.add_argument("--permutations", type=int, default=50,
                        help="GSS: shuffles behind the held-out estimate's bias (default: %(default)s).")
    parser.add_argument("--seed", type=int, default=0, help="GSS: the split, the releases (default: %(default)s).")
    parser.add_argument("--reference", action="store_true", help="Solves: time the conic reference too.")
    parser.add_argument("--without-fast-path", action="store_true",
                        help="Solves: leave out the fast path alone (minutes with fifteen classes from K = 512).")
    args = parser.parse_args(argv)
    if args.part == "solves":
        solves_part(args)
        return
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        key = keygen(work)
        if args.part in ("adult", "both"):
            adult_part(args, work, key)
        if args.part in ("gss", "both"):
            gss_part(args, work, key)


if __name__ == "__main__":
    main()
