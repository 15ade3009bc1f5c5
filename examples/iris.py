"""Reproduce seed 000, Section VI-B (Fig. 6-8): Iris, Algorithm 1 vs Algorithm 2 (K = 5, 15, 50).

Private attribute: Virginica or not; public data: the 4 measurements (cm).
Prior: for each species a Gaussian kernel density estimate whose bandwidth is
chosen by 5-fold cross-validated likelihood; N points are sampled from the
mixture (N/3 per species, species equally likely as in the data) and each
sample b gets mass 1/N split over the species by the KDE posterior
p(species | b) = f_s(b) / sum_s' f_s'(b). That discrete p(a, b) is the prior
of program (19), with the L2 (Euclidean) distance as distortion.

- Algorithm 1 ("no quantization"): the N samples are both inputs and outputs.
- Algorithm 2: k-means on the samples (K = 5, 15, 50), p(a, c) summed over each
  cluster (equation 20), the centers are inputs and outputs.

Each mapping is measured on the N samples: leakage (exact, Theorem 2), the
distortion E d(C, C^) between symbols that the program constrains, and the
distortion on the samples themselves (quantization included). The
logistic-regression attacker's ROC AUC is measured on the 150 real flowers
(each flower goes to its nearest symbol, a release is drawn, the attacker is
trained on 70 % of the released flowers and tested on the rest).

Writes to ``docs/figures/``: ``iris_privacy_distortion.png`` (two panels: against
the symbol distortion, as the paper plots, and against the distortion on the
samples), ``iris_privacy_distortion.csv``, ``iris_mapping_low.png`` and
``iris_mapping_high.png`` (arrows between K = 15 cluster centers in the first two
principal components of the 150 flowers, Fig. 6-7).

Run from the repository root (about 10 minutes; the unquantized program has N^2
variables)::

    python examples/iris.py
"""
from __future__ import annotations

import argparse
import csv
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from privmap.offline import SolverError, measures, mutual_information_bits, pairwise, quantize  # noqa: E402
from privmap.offline.mechanisms.table import evaluate_view, view_from_table  # noqa: E402
from privmap.offline.solvers import perfect_privacy_distortion, solve  # noqa: E402

DATA = ROOT / "data" / "iris" / "iris.csv"
FIGURES = ROOT / "docs" / "figures"
SPECIES = ("setosa", "versicolor", "virginica")
COLORS = {"setosa": "tab:red", "versicolor": "tab:blue", "virginica": "tab:green"}


def load_iris():
    with open(DATA, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    names = list(rows[0])[:4]
    X = np.array([[float(r[k]) for k in names] for r in rows])
    species = np.array([r["species"] for r in rows])
    return X, species, names


def kde_prior(X, species, n_samples: int, seed: int):
    """Samples S (N, 4) of the species mixture and p(species, b) (3, N) from cross-validated KDEs."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.neighbors import KernelDensity
    rng = np.random.RandomState(seed)
    kdes, bandwidths = [], []
    for s in SPECIES:
        search = GridSearchCV(KernelDensity(kernel="gaussian"), {"bandwidth": np.logspace(-1.3, 0, 30)}, cv=5)
        search.fit(X[species == s])
        kdes.append(search.best_estimator_)
        bandwidths.append(float(search.best_params_["bandwidth"]))
    per = n_samples // len(SPECIES)
    S = np.vstack([k.sample(per, random_state=rng) for k in kdes])
    logf = np.array([k.score_samples(S) for k in kdes])
    post = np.exp(logf - logf.max(axis=0))
    post /= post.sum(axis=0)
    return S, post / S.shape[0], bandwidths


def solve_any(p_ac, D, delta, solver):
    """The fast solver, or the cvxpy reference where the fast one gives up."""
    if solver == "fast":
        try:
            return solve(p_ac, D, delta, solver="fast")
        except (SolverError, ImportError):
            pass
    return solve(p_ac, D, delta, solver="cvxpy")


def equal_leakage_gaps(ref, other, x):
    """other[x] - ref[x] at equal leakage: ref's x interpolated at each of other's leakages (inside ref's range)."""
    ref = sorted(ref, key=lambda p: p["leakage_bits"])
    lx = np.array([p["leakage_bits"] for p in ref])
    xx = np.array([p[x] for p in ref])
    gaps = []
    for p in other:
        if lx[0] <= p["leakage_bits"] <= lx[-1]:
            gaps.append(p[x] - float(np.interp(p["leakage_bits"], lx, xx)))
    return gaps


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Iris reproduction (seed 000, Fig. 6-8)")
    parser.add_argument("--samples", type=int, default=300, help="N, the unquantized alphabet (multiple of 3)")
    parser.add_argument("--clusters", default="5,15,50")
    parser.add_argument("--deltas", default="0,0.025,0.05,0.1,0.15,0.2,0.3,0.4,0.5,0.6,0.8")
    parser.add_argument("--map-clusters", type=int, default=15)
    parser.add_argument("--low", type=float, default=0.1, help="Delta of the low-distortion picture")
    parser.add_argument("--high", type=float, default=0.5, help="Delta of the high-distortion picture")
    parser.add_argument("--solver", default="fast", choices=["fast", "cvxpy"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, default=FIGURES)
    args = parser.parse_args(argv)
    deltas = [float(d) for d in args.deltas.split(",")]
    ks = [int(k) for k in args.clusters.split(",")]

    X, species, names = load_iris()
    a_rows = (species == "virginica").astype(np.int64)
    S, p_sb, bandwidths = kde_prior(X, species, args.samples, args.seed)
    p_ab = np.vstack([p_sb[:2].sum(axis=0), p_sb[2]])          # (not Virginica, Virginica) x N
    p_b = p_ab.sum(axis=0)
    print("KDE bandwidths (cm): " + ", ".join(f"{s} {b:.3f}" for s, b in zip(SPECIES, bandwidths)))
    print(f"N = {S.shape[0]} samples; I(A; B) on the sampled prior = {mutual_information_bits(p_ab):.4f} bits, "
          f"H(A) = {mutual_information_bits(np.diag(p_ab.sum(axis=1))):.4f} bits")
    D_none = pairwise(S, S, "l2")
    print(f"perfect privacy without quantization at Delta = {perfect_privacy_distortion(p_ab, D_none):.4f}")

    points, maps = [], {}
    for k in [0, *ks]:
        if k == 0:
            centers, labels = S, np.arange(S.shape[0])
        else:
            qz = quantize(S, k, metric="l2", seed=args.seed)
            centers, labels = qz.centers, qz.labels
        K = centers.shape[0]
        p_ac = np.zeros((2, K))
        np.add.at(p_ac.T, labels, p_ab.T)                      # equation (20)
        p_sc = np.zeros((3, K))
        np.add.at(p_sc.T, labels, p_sb.T)
        D = pairwise(centers, centers, "l2")
        to_out = pairwise(S, centers, "l2")                    # d(b, c_hat) on the samples
        quant = float(p_b @ to_out[np.arange(S.shape[0]), labels])
        for delta in deltas:
            started = time.perf_counter()
            res = solve_any(p_ac, D, delta, args.solver)
            table = np.asarray(res.table)
            raw = float(np.sum(p_b[:, None] * table[labels] * to_out))
            view = view_from_table("quantized", "l2", centers, centers, table, ["not virginica", "virginica"],
                                   names, delta=delta)
            ev = evaluate_view(view, X, a_rows, seed=args.seed, permutations=3).summary
            points.append({"k": k, "clusters": K, "delta": delta, "leakage_bits": res.leakage_bits,
                           "distortion_symbols": res.distortion, "distortion": raw, "quantization_mean": quant,
                           "lr_auc": ev["attacker"]["after"]["roc_auc"],
                           "lr_auc_before": ev["attacker"]["before"]["roc_auc"],
                           "solver": res.solver, "status": res.status,
                           "seconds": time.perf_counter() - started})
            print(f"K {'none' if k == 0 else k:>4} ({K:>3} symbols)  Delta {delta:<6} leakage {res.leakage_bits:.4f} "
                  f"bits  E d(C,C^) {res.distortion:.4f}  on samples {raw:.4f}  attacker AUC "
                  f"{ev['attacker']['after']['roc_auc']:.3f}  [{res.solver}, {time.perf_counter() - started:.1f} s]",
                  flush=True)
            if k == args.map_clusters and delta in (args.low, args.high):
                maps[delta] = (centers, table, p_sc)

    args.out.mkdir(parents=True, exist_ok=True)
    cols = ["k", "clusters", "delta", "leakage_bits", "distortion_symbols", "distortion", "quantization_mean",
            "lr_auc", "lr_auc_before", "solver", "seconds"]
    with open(args.out / "iris_privacy_distortion.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols)
        for p in points:
            w.writerow([f"{p[c]:.6g}" if isinstance(p[c], float) else p[c] for c in cols])

    none = [p for p in points if p["k"] == 0]
    for k in ks:
        line = [p for p in points if p["k"] == k]
        g_sym = equal_leakage_gaps(none, line, "distortion_symbols")
        g_raw = equal_leakage_gaps(none, line, "distortion")
        print(f"K = {k:>2}: extra distortion at equal leakage vs no quantization: "
              f"symbols max {max(g_sym):+.4f} (min {min(g_sym):+.4f}); "
              f"on samples max {max(g_raw):+.4f} (min {min(g_raw):+.4f})")

    if not measures.have_matplotlib():
        print("matplotlib not installed: tables only")
        return
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True)
    for ax, x, label in ((axes[0], "distortion_symbols", "E d(C, C^) between symbols (the program's Delta)"),
                         (axes[1], "distortion", "E d(B, C^) on the samples (quantization included)")):
        for k in [0, *ks]:
            line = sorted([p for p in points if p["k"] == k], key=lambda p: p[x])
            ax.plot([p[x] for p in line], [p["leakage_bits"] for p in line], "o-", ms=3,
                    label=f"no quantization (N = {S.shape[0]})" if k == 0 else f"K = {k}")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("leakage I(Virginica; released) [bits]")
    axes[0].legend(fontsize=8)
    axes[0].set_title("Iris: as the paper plots it (Fig. 8)")
    axes[1].set_title("Iris: distortion measured on the samples")
    fig.tight_layout()
    fig.savefig(args.out / "iris_privacy_distortion.png", dpi=120)
    plt.close(fig)

    from sklearn.decomposition import PCA
    pca = PCA(n_components=2).fit(X)
    for name, delta in (("low", args.low), ("high", args.high)):
        if delta not in maps:
            continue
        centers, table, p_sc = maps[delta]
        colors = [COLORS[SPECIES[i]] for i in np.argmax(p_sc, axis=0)]
        measures.plot_mapping_2d(pca.transform(centers), table, colors, args.out / f"iris_mapping_{name}.png",
                               sizes=p_sc.sum(axis=0), legend=[(s, COLORS[s]) for s in SPECIES],
                               title=f"Iris, K = {args.map_clusters}, Delta = {delta}: c -> c^ for q >= 0.05",
                               axis_labels=(f"PC 1 ({pca.explained_variance_ratio_[0]:.0%})",
                                            f"PC 2 ({pca.explained_variance_ratio_[1]:.0%})"))
    print(f"wrote {args.out}/iris_privacy_distortion.{{png,csv}}, iris_mapping_low.png, iris_mapping_high.png")


if __name__ == "__main__":
    main()
