"""Derive ``data/adult_funnel/adult_funnel.csv`` from the UCI Adult files (CC BY 4.0, Becker &
Kohavi 1996) for seed 003's Fig. 1 (the privacy funnel on the 1994 US Census).

Seed 003 uses income (2), gender (2), education (4) and age (7 categories); which are private
is stripped from its text. We read "private attributes" (plural) as S = (income, gender), one
private column ``income_sex`` with 4 classes, and X = (age, education) public, 28 tuples.
Cut-points (the seed gives none):

- age (7): <25, 25-34, 35-44, 45-54, 55-64, 65-74, >=75
- education (4): the groups of ``examples/prepare_census.py`` (high-school, college, masters,
  doctorate)

All 48,842 rows of ``adult.data`` and ``adult.test`` are kept. Run from the repository root:
``python examples/prepare_adult_funnel.py``.
"""
from __future__ import annotations

import argparse
import csv
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from prepare_census import education_group, read_adult  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = ROOT / "data" / "adult_funnel" / "adult_funnel.csv"
AGE_EDGES = (25, 35, 45, 55, 65, 75)
AGE_NAMES = ("<25", "25-34", "35-44", "45-54", "55-64", "65-74", ">=75")


def age_group(age: int) -> str:
    """One of the 7 groups of AGE_NAMES."""
    return AGE_NAMES[sum(age >= edge for edge in AGE_EDGES)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=TARGET)
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["age", "education", "income_sex"])
        for row in read_adult():
            income = row[14].rstrip(".")
            writer.writerow([age_group(int(row[0])), education_group(row[3]), f"{income}/{row[9]}"])
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
