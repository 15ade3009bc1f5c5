"""Reproduce seed 004 (Sharma & Amariucai, greedy Gaussian noise) Fig. 3 on its dataset 1, and
measure the mechanism on real held-out data.

Part 1, Fig. 3: min I(X_p;Y) (nats) against delta for several gamma on the seed's sample
dataset 1 (covariances printed in the seed), with the seed's eps_0 = 1e-6, initial increment
dtheta = 1 and stop at dtheta < 1e-3. The Fisher-information variant is run at gamma = 0 too
(the brief: its curve must coincide with the MI one at gamma = 0).

Part 2, real data: UCI Adult (``data/adult/adult.data``), released X = the 6 numeric columns
(standardised on the training split), private X_p = male (0/1), utility X_u = income > 50K (0/1).
The covariance is the sample covariance of the training rows (70 %); the greedy runs for several
delta; then a logistic-regression attacker trained on noisy training rows predicts sex and
income on noisy held-out rows (ROC AUC), next to the Gaussian model's I(X_p;Y). Real data are
not Gaussian, so the model's bits and the attacker can disagree: both are reported.

Writes ``docs/figures/gaussian_dataset1_curves.{csv,png}`` and ``docs/figures/gaussian_adult.csv``.
Run from the repository root: ``python examples/gaussian_curves.py`` (about a minute).
"""
from __future__ import annotations

import csv
import math
import pathlib
import sys

import numpy as np

from privmap.offline.mechanisms.gaussian import GaussianModel, greedy_noise
from privmap.offline.mechanisms.nullspace import attack_scores

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIG = ROOT / "docs" / "figures"
COV_P1 = [[138.27, 165.66, 26.36], [165.66, 240.07, 43.86], [26.36, 43.86, 8.76]]
COV_U1 = [[138.27, 165.66, 11.28], [165.66, 240.07, 6.84], [11.28, 6.84, 2.26]]
GAMMAS = (0.0, 2.0, 2.5, 3.0, 4.0, 5.0)
DELTAS = tuple(round(0.05 * i, 2) for i in range(22))  # 0 .. 1.05 nats (I(X_u;X) = 1.0647)


def curves():
    model = GaussianModel.from_blocks(COV_P1, COV_U1, 2)
    rows = []
    for gamma in GAMMAS:
        for delta in DELTAS:
            r = greedy_noise(model, delta, gamma)
            rows.append({"variant": "mi", "gamma": gamma, "delta": delta, "min_I_Xp_Y": r.private_after,
                         "utility_loss": r.utility_loss, "sigma2_1": r.sigma2[0], "sigma2_2": r.sigma2[1],
                         "iterations": r.iterations})
    for delta in DELTAS:
        r = greedy_noise(model, delta, 0.0, fisher=True)
        rows.append({"variant": "fisher", "gamma": 0.0, "delta": delta, "min_I_Xp_Y": r.private_after,
                     "utility_loss": r.utility_loss, "sigma2_1": r.sigma2[0], "sigma2_2": r.sigma2[1],
                     "iterations": r.iterations})
    return model, rows


def plot(model, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for gamma in GAMMAS:
        pts = [r for r in rows if r["variant"] == "mi" and r["gamma"] == gamma]
        ax.plot([p["delta"] for p in pts], [p["min_I_Xp_Y"] for p in pts], marker="o", ms=3, label=f"gamma = {gamma:g}")
    pts = [r for r in rows if r["variant"] == "fisher"]
    ax.plot([p["delta"] for p in pts], [p["min_I_Xp_Y"] for p in pts], ls="none", marker="x", color="k",
            label="Fisher variant, gamma = 0")
    ax.axhline(model.information("private", [0, 0]), color="grey", lw=0.8, ls=":")
    ax.set_xlabel("delta: utility-loss cap I(X_u;X) - I(X_u;Y) (nats)")
    ax.set_ylabel("min I(X_p;Y) (nats)")
    ax.set_title("Seed 004, sample dataset 1: greedy noise (eps0 = 1e-6)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIG / "gaussian_dataset1_curves.png", dpi=120)


def load_adult():
    x, p, u = [], [], []
    with (ROOT / "data" / "adult" / "adult.data").open(newline="") as f:
        for row in csv.reader(f, skipinitialspace=True):
            if len(row) != 15:
                continue
            x.append([float(row[i]) for i in (0, 2, 4, 10, 11, 12)])
            p.append(float(row[9] == "Male"))
            u.append(float(row[14].startswith(">50K")))
    return np.array(x), np.array(p), np.array(u)


def adult(deltas=(0.0, 0.02, 0.05, 0.1, 0.2)):
    from sklearn.model_selection import train_test_split
    x, p, u = load_adult()
    tr, te = train_test_split(np.arange(len(x)), test_size=0.3, random_state=0)
    z = (x - x[tr].mean(axis=0)) / x[tr].std(axis=0)
    model = GaussianModel.estimate(z[tr], p[tr, None], u[tr, None])
    rng = np.random.default_rng(4)  # evaluation only: simulated releases
    rows = []
    for delta in deltas:
        r = greedy_noise(model, delta, 0.0)
        y = z + rng.normal(size=z.shape) * np.sqrt(r.sigma2)
        sex = attack_scores(z[tr], p[tr], z[te], p[te], y[tr], y[te])
        income = attack_scores(z[tr], u[tr], z[te], u[te], y[tr], y[te])
        rows.append({"delta": delta, "model_I_Xp_Y_bits": r.private_after / math.log(2),
                     "model_I_Xp_X_bits": r.private_before / math.log(2), "model_utility_loss_nats": r.utility_loss,
                     "sex_auc_raw": sex["raw"], "sex_auc_retrained": sex["retrained"],
                     "income_auc_raw": income["raw"], "income_auc_retrained": income["retrained"],
                     "sigma": " ".join(f"{s:.3g}" for s in np.sqrt(r.sigma2))})
    return rows


def write(path, rows):
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    print(f"wrote {path}", file=sys.stderr)


def main():
    model, rows = curves()
    write(FIG / "gaussian_dataset1_curves.csv", rows)
    plot(model, rows)
    for gamma in GAMMAS:
        pts = {r["delta"]: r["min_I_Xp_Y"] for r in rows if r["variant"] == "mi" and r["gamma"] == gamma}
        print(f"gamma {gamma:g}: " + "  ".join(f"d={d:g}:{pts[d]:.4f}" for d in (0.0, 0.1, 0.25, 0.5, 0.75, 1.0)))
    mi = [r for r in rows if r["variant"] == "mi" and r["gamma"] == 0.0]
    fi = [r for r in rows if r["variant"] == "fisher"]
    print("Fisher = MI at gamma 0 (max |difference|, nats):",
          max(abs(a["min_I_Xp_Y"] - b["min_I_Xp_Y"]) for a, b in zip(mi, fi)))
    real = adult()
    write(FIG / "gaussian_adult.csv", real)
    for r in real:
        print(f"adult delta {r['delta']:g}: model I(sex;Y) {r['model_I_Xp_Y_bits']:.4f} bits "
              f"(before {r['model_I_Xp_X_bits']:.4f}), loss {r['model_utility_loss_nats']:.4f} nats | "
              f"sex AUC raw {r['sex_auc_raw']:.3f} -> {r['sex_auc_retrained']:.3f}, "
              f"income AUC raw {r['income_auc_raw']:.3f} -> {r['income_auc_retrained']:.3f}")


if __name__ == "__main__":
    main()
