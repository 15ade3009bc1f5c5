"""Derive ``data/census/census.csv`` from the UCI Adult files (CC BY 4.0, Becker & Kohavi 1996).

Seed 000, Section VI-A: public data (gender, age in 3 groups, education in 4
groups), private attribute income > 50K. The paper does not state its
cut-points; ours are

- age:       young (< 35), adult (35-55, both ends included), old (> 55)
- education: high-school (Preschool .. 12th and HS-grad),
             college (Some-college, Assoc-voc, Assoc-acdm, Bachelors),
             masters (Masters, Prof-school),
             doctorate (Doctorate)
- sex:       female / male, as in the source
- income:    <=50K / >50K (the trailing dot of ``adult.test`` labels removed)

All 48,842 rows of ``adult.data`` (32,561) and ``adult.test`` (16,281) are kept:
none of the four columns used has a missing value.

Run from the repository root: ``python examples/prepare_census.py``.
"""
from __future__ import annotations

import argparse
import csv
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "data" / "adult" / "adult.data", ROOT / "data" / "adult" / "adult.test"]
TARGET = ROOT / "data" / "census" / "census.csv"

HIGH_SCHOOL = {"Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad"}
COLLEGE = {"Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors"}
MASTERS = {"Masters", "Prof-school"}
DOCTORATE = {"Doctorate"}


def age_group(age: int) -> str:
    """young < 35 <= adult <= 55 < old."""
    if age < 35:
        return "young"
    if age <= 55:
        return "adult"
    return "old"


def education_group(education: str) -> str:
    """Four groups of the 16 Adult education levels."""
    for name, members in (("high-school", HIGH_SCHOOL), ("college", COLLEGE),
                          ("masters", MASTERS), ("doctorate", DOCTORATE)):
        if education in members:
            return name
    raise ValueError(f"unknown education level {education!r}")


def read_adult(paths=SOURCES) -> list[list[str]]:
    """Rows of the raw Adult files as lists of stripped cells (the header line of adult.test skipped)."""
    rows = []
    for path in paths:
        with open(path, newline="", encoding="utf-8") as f:
            for line in csv.reader(f, skipinitialspace=True):
                if len(line) != 15:
                    continue  # blank lines and the "|1x3 Cross validator" line of adult.test
                rows.append([cell.strip() for cell in line])
    return rows


def prepare(paths=SOURCES) -> list[tuple[str, str, str, str]]:
    """(sex, age, education, income) for every row of the Adult files."""
    out = []
    for row in read_adult(paths):
        age, education, sex, income = int(row[0]), row[3], row[9], row[14].rstrip(".")
        if income not in ("<=50K", ">50K"):
            raise ValueError(f"unknown income label {row[14]!r}")
        out.append((sex, age_group(age), education_group(education), income))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=TARGET)
    args = parser.parse_args(argv)
    rows = prepare()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["sex", "age", "education", "income"])
        writer.writerows(rows)
    print(f"wrote {args.out}: {len(rows)} rows")


if __name__ == "__main__":
    main()
