"""Reproduce seed 000, Section VI-A (Fig. 4 and Fig. 5): Census, Algorithm 1 with erasures.

Public data: sex, age (3 groups), education (4 groups); private: income > 50K; all
48,842 rows of UCI Adult (``data/census/census.csv``, cut-points in
``data/census/README.md``). Outputs keep or erase each cell; d = number of
erasures; a mapping may only erase. Program (19) is solved for Delta in [0, 2]
and each solved mapping is measured on the data (leakage, distortion, MAP and
logistic-regression attackers).

Writes ``docs/figures/census_privacy_distortion.{png,csv}`` and
``docs/figures/census_mapping.csv`` (the most probable release of the 8 most
frequent tuples, like Fig. 5) and prints both tables.

Run from the repository root::

    python examples/census_erasures.py
"""
from __future__ import annotations

import argparse
import csv
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from privmap.offline import evaluation, measures  # noqa: E402
from privmap.offline.data import load_dataset  # noqa: E402
from privmap.offline.mechanisms.table import erasure_problem, format_cell, most_probable_mapping  # noqa: E402

DATA = ROOT / "data" / "census" / "census.csv"
FIGURES = ROOT / "docs" / "figures"
#: The paper's reported points (Section VI-A text), drawn for comparison only.
PAPER = {"x": [0.0, 1.0, 1.5], "y": [0.142, 0.025, 0.0], "label": "paper (reported in the text)"}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Census erasure reproduction (seed 000, Fig. 4-5)")
    parser.add_argument("--deltas", default="0:2:21", help="START:STOP:COUNT or a comma list")
    parser.add_argument("--mapping-delta", type=float, default=1.0, help="Delta of the Fig. 5 table")
    parser.add_argument("--out", type=pathlib.Path, default=FIGURES)
    parser.add_argument("--solver", default="fast", choices=["fast", "cvxpy"])
    args = parser.parse_args(argv)
    from privmap.offline.commandline import parse_floats
    deltas = sorted(set(parse_floats(args.deltas, "--deltas")) | {args.mapping_delta})

    ds = load_dataset(DATA, private="income", categorical=True)
    problem = erasure_problem(ds.public, ds.private, len(ds.classes), ds.features)
    print(f"{DATA.relative_to(ROOT)}: {ds.n} rows, {len(problem.inputs)} input tuples, "
          f"{len(problem.outputs)} outputs; classes {ds.classes}")
    points = evaluation.sweep(ds.public, ds.private, ds.classes, ds.features, deltas=deltas, mechanism="exact",
                          metric="erasures", solver=args.solver, private_name="income", permutations=5)
    args.out.mkdir(parents=True, exist_ok=True)
    evaluation.write_csv(points, args.out / "census_privacy_distortion.csv")
    print(evaluation.format_table(points))
    if measures.have_matplotlib():
        measures.plot_curve(points, args.out / "census_privacy_distortion.png", x="distortion",
                          xlabel="average number of erasures", reference=PAPER, label_fmt="erasures ({k} tuples)",
                          title="Census: income vs (sex, age, education), erasures (Fig. 4)")

    chosen = next(p for p in points if abs(p["delta"] - args.mapping_delta) < 1e-12)
    rows = most_probable_mapping(problem, chosen["table"], ds.classes, top=8)
    header = ["tag", "share", "P(>50K|tuple)", *ds.features, *[f"released {f}" for f in ds.features], "probability"]
    with open(args.out / "census_mapping.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["delta", *header])
        for r in rows:
            w.writerow([args.mapping_delta, r["tag"], f"{r['share']:.4f}", f"{r['posterior'][1]:.3f}", *r["input"],
                        *["" if v is None else v for v in r["output"]], f"{r['probability']:.3f}"])
    print(f"\nMost probable mapping of the 8 most frequent tuples at Delta = {args.mapping_delta} "
          f"(tag: class the tuple leans to, N = within 0.1 of the base rate; '-' = erased)")
    print(f"{'tag':>6} {'share':>6} {'P(>50K)':>8}  {'original':<32} {'released':<32} {'prob':>5}")
    for r in rows:
        original = " ".join(r["input"])
        released = " ".join(format_cell(v) for v in r["output"])
        print(f"{r['tag']:>6} {r['share']:>6.3f} {r['posterior'][1]:>8.3f}  {original:<32} {released:<32} "
              f"{r['probability']:>5.2f}")
    print(f"\nwrote {args.out / 'census_privacy_distortion.csv'}, {args.out / 'census_mapping.csv'}"
          + (f", {args.out / 'census_privacy_distortion.png'}" if measures.have_matplotlib() else ""))


if __name__ == "__main__":
    main()
