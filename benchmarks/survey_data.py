"""A seeded survey-shaped data set: the 14,000 users x 50 answers of the whole-build targets.

No such survey is bundled, so this draws one with the shape of a 50-item personality
questionnaire (like a public one of 13,715 users): five latent traits per user (standard
normal), ten items per trait, each item z = loading x trait (sign alternating, loading
0.5..0.8) + noise of unit total variance, cut into Likert answers 1..5 at item-specific
thresholds; a binary private attribute (gender) that shifts two of the traits (Cohen's d of
0.45 and 0.30, the size of the larger gender differences reported for personality traits);
and blank cells, each answer missing with probability ``blank`` (2 % by default) at random.
The questionnaire (loadings, cut points) is the same for every seed, so another seed draws
fresh users of the same survey (new users for a bundle built on seed 0).

    python benchmarks/survey_data.py OUT.csv [--n 14000] [--items 50] [--seed 0] [--blank 0.02]

writes a CSV with columns q1..q50 and gender (f / m). Same arguments, same bytes.
"""
from __future__ import annotations

import argparse
import pathlib

import numpy as np

TRAITS = 5
#: Users whose seed-0 draw fixes the questionnaire (:func:`_questionnaire`).
QUESTIONNAIRE_USERS = 14000
#: Standardised shift of each trait between the two private classes (Cohen's d); 0 = unrelated.
TRAIT_SHIFT = (0.0, 0.45, 0.0, 0.30, 0.0)


def survey(n: int = 14000, items: int = 50, *, seed: int = 0, blank: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    """Answers (n, items) as floats 1..5 with NaN for a blank cell, and the private class (n,) in {0, 1}.

    Raises ValueError for n < 2, items < 1 or ``blank`` outside [0, 1).
    """
    if n < 2 or items < 1 or not 0 <= blank < 1:
        raise ValueError(f"need n >= 2, items >= 1 and 0 <= blank < 1; got {n}, {items}, {blank}")
    rng = np.random.default_rng(seed)
    private = rng.integers(0, 2, n)
    traits = rng.standard_normal((n, TRAITS)) + np.outer(private - 0.5, TRAIT_SHIFT)
    which = np.arange(items) % TRAITS
    rng.uniform(0.5, 0.8, items)                 # the questionnaire's draws, replayed by _questionnaire
    noise = rng.standard_normal((n, items))
    rng.normal(0.0, 0.3, (items, 1))
    loading, cuts = _questionnaire(items)
    z = traits[:, which] * loading + noise * np.sqrt(1.0 - loading ** 2)
    answers = 1.0 + (z[:, :, None] > cuts[None, :, :]).sum(axis=2)
    answers[rng.random((n, items)) < blank] = np.nan
    empty = np.isnan(answers).all(axis=1)
    answers[empty, 0] = 3.0                      # keep every user (a fully blank row would be left out)
    return answers, private


def _questionnaire(items: int) -> tuple[np.ndarray, np.ndarray]:
    """The items' loadings (items,) and Likert cut points (items, 4), the same for every seed (fresh
    users of one questionnaire): drawn as ``survey(QUESTIONNAIRE_USERS, items, seed=0)`` draws them, so
    that data set is what this module wrote before the questionnaire was fixed."""
    rng = np.random.default_rng(0)
    rng.integers(0, 2, QUESTIONNAIRE_USERS)
    rng.standard_normal((QUESTIONNAIRE_USERS, TRAITS))
    loading = rng.uniform(0.5, 0.8, items) * np.where((np.arange(items) // TRAITS) % 2 == 0, 1.0, -1.0)
    rng.standard_normal((QUESTIONNAIRE_USERS, items))
    # cut points per item: a common Likert spread moved by an item-specific difficulty
    cuts = np.array([-1.5, -0.5, 0.4, 1.3]) + rng.normal(0.0, 0.3, (items, 1))
    return loading, cuts


def write_csv(path, answers: np.ndarray, private: np.ndarray) -> pathlib.Path:
    """``answers`` (n, items) with NaN = blank and ``private`` (n,) as a CSV: q1..qN, gender."""
    path = pathlib.Path(path)
    lines = [",".join([f"q{j + 1}" for j in range(answers.shape[1])] + ["gender"])]
    for row, a in zip(answers, private):
        lines.append(",".join("" if np.isnan(v) else str(int(v)) for v in row) + ("," + ("m" if a else "f")))
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=14000)
    ap.add_argument("--items", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--blank", type=float, default=0.02)
    args = ap.parse_args(argv)
    write_csv(args.out, *survey(args.n, args.items, seed=args.seed, blank=args.blank))


if __name__ == "__main__":
    main()
