"""Benchmark: what each release is worth to a recommender and to the top-10 lists users receive,
beside what it tells the strongest attacker.

Run from the repository root:

    python benchmarks/bench_recommender.py [--data insteval synthetic movies movies-age movies-joint gss] [--only NAME ...]
        [--seed 0] [--splits N] [--json] [--plot PATH]

For each data set (``insteval``: data/insteval, 2,972 students x 500 lecturers, ratings 1-5, 96 %
blank, private ``studage``, 4 classes; ``synthetic``: :func:`privmap.offline.data.synthetic_ratings`,
3,000 users x 500 items, density 0.04, 4 classes, seeded; ``movies``: the same generator in the
shape of a movie-ratings set, 3,000 users x 200 items, density 0.24, 2 classes; ``movies-wide``: the
same at 1,000 items, density 0.08; ``watch`` and ``watch-wide``: the same shapes at densities 0.10
and 0.03, people watching what suits their taste and what is popular (the generator's ``taste`` 1,
``popularity`` 1.5), so that the most popular items are a strong ranking baseline as on real
movie ratings (EASE on true profiles recalls about twice what popularity does); ``movies-age``: the
``movies`` shape with a private age band of 7 ordered classes; ``movies-joint``: the same with two
private columns, gender (2) and the age band (7), their joint class protected; ``gss``: data/gss1993_music, 1,597
respondents x 18 music styles, ratings 1-5, 7 % blank, private ``sex``, 2 classes) the protocol of
:func:`privmap.offline.measures.recommender_utility`:

- users split 70/30 into training and held-out users (stratified by the private class, seeded);
- 10 % of each held-out user's ratings hidden (at least one of two or more);
- each release of :data:`RELEASES` is fitted on the training users (their true ratings and
  classes) and applied to each held-out user's visible row;
- scikit-surprise's SVD (50 factors) is trained on the training users' true ratings plus the
  held-out rows as released and predicts the hidden ratings: RMSE, value kept = (RMSE nothing -
  RMSE) / (RMSE nothing - RMSE true), NDCG@10 over the hidden items, recall@10 among the items
  not rated;
- the top-10 lists users receive (:mod:`privmap.offline.measures`' ranking protocol, SERVICE.md):
  recall@10 and NDCG@10 of each held-out user's unseen items, relevant = hidden ratings >= 4, for
  EASE on the true visible profile, popularity, and the best reading of the released rows; ranking
  value kept = (recall released - recall popularity) / (recall true - recall popularity);
- the attacker (logistic regression choosing its regularisation by inner cross-validation,
  :mod:`privmap.offline._attacker`) is trained on the training users' rows as the release makes
  them (from their whole rows: it knows the mechanism) and tested on the held-out users' released
  rows: ROC AUC (one-vs-rest macro for 4 classes; 0.5 = chance). For the releases that perturb
  the user's own row (BlurMe, randomized response) a second attacker, trained on the training
  users' *true* rows (it does not know the mechanism), is scored on the same released rows. A
  third reads each released row as a symbol (:func:`identity_attack`): the strongest attacker
  against a release drawn from a finite set of rows, as privmap's are. A fourth is gradient
  boosting (scikit-learn's HistGradientBoostingClassifier, defaults) on the released values and
  rated/blank indicators. The *strongest* attacker's AUC is the largest of the three that know the
  release (SERVICE.md), written independently of the build's own attackers.

On a set of several private columns (``movies-joint``: gender and an age band) each attacker is
also trained and scored on each column's own classes, and the table gives the strongest per column
beside the joint class's. Each privmap build's CPU seconds (its child process's, from
``getrusage``) are printed and kept, so that builds on sets of many and of two classes compare
within one run.

The releases, side by side:

- the true ratings and no row at all (the two ends of value kept);
- k-means alone (no privacy) and privmap on the raw ratings (seed 000: ``privmap build --clusters K
  --delta-fraction 0.5``): a dense representative row per user;
- privmap's recommender mode (``privmap build --utility recommender``, run through the CLI): the
  user's latent taste is mapped and a full row of predicted ratings released; the pinned command
  (``--clusters auto --target-auc 0.55``) and fixed points; and its factor model alone (each
  user's own predicted ratings, no privacy), what the model is worth before the mapping;
- privmap's ranking mode (``privmap build --utility ranking``, the CLI): which items the user
  rated embedded as the direction of their EASE score row, the direction mapped, a full row of
  item scores released; the pinned command and a fixed point;
- BlurMe (Weinsberg et al. 2012): the user's own ratings plus a few added ones on items that
  indicate another class;
- randomized response per rated cell.

To add a row, add an entry to :data:`RELEASES`: a name and a function ``fit(train, private,
n_classes, seed, columns) -> release``, where ``train`` (n_train, m) holds the training users' true
ratings (NaN = not rated), ``private`` their class codes (on a set of several private columns, the
joint class), ``columns`` the private columns' names and class counts (:class:`RatingSet`; what a
build is given as ``--private COL1,COL2``), and ``release(rows, private) ->
released`` maps rows (n, m) with NaN blanks, and those users' own classes (a user knows their own
attribute; most releases ignore it, :func:`class_blind`), to released rows of the same shape (NaN
= blank, not a rating; a row may be dense). The release of a held-out user sees only their visible
cells. Mark the fit with :func:`perturbs_own_row` to score the attacker trained on true rows too.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from privmap.offline._attacker import choose_regularisation, logistic_attack  # noqa: E402
from privmap.offline.data import load_dataset, synthetic_ratings  # noqa: E402
from privmap.offline.measures import ServiceUtility  # noqa: E402
from privmap.offline.mechanisms.table import view_from_payload, view_from_table, view_release  # noqa: E402

#: ``release(rows, private) -> released rows`` (module docstring).
Release = Callable[[np.ndarray, np.ndarray], np.ndarray]
#: The seed-000 builds' budget: this fraction of the perfect-privacy distortion (the demo's).
DELTA_FRACTION = 0.5
#: The recommender mode's pinned operating point: the privacy wanted, the build picks K and budget.
PINNED_TARGET_AUC = 0.55
#: The value kept the plot marks beside the target AUC.
VALUE_KEPT_MARK = 0.75
#: The CLI, run in a child process with this interpreter.
PRIVMAP = (sys.executable, "-c", "from privmap.offline.cli import main; main()")
INSTEVAL = ROOT / "data" / "insteval" / "InstEval_wide_top500.csv"
GSS_MUSIC = ROOT / "data" / "gss1993_music" / "music.csv"
GSS_STYLES = ("bigb", "blug", "coun", "blue", "musi", "clas", "folk", "gosp", "jazz", "lati", "mood", "newa",
              "oper", "rap", "regg", "conr", "oldi", "hvym")


# --------------------------------------------------------------------------- shared helpers

def class_blind(release: Callable[[np.ndarray], np.ndarray]) -> Release:
    """A release that does not look at its user's class, in the ``release(rows, private)`` form."""
    return lambda rows, private: release(rows)


def perturbs_own_row(fit):
    """Mark ``fit`` as a release that keeps the user's row and perturbs it (the items rated pass
    through): an attacker who never heard of the mechanism, trained on true rows, is then a
    realistic threat, scored beside the one that knows it."""
    fit.perturbs_own_row = True
    return fit


def with_ratings(train: np.ndarray, private: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The training users who rated something (a build leaves the others out anyway)."""
    keep = ~np.isnan(train).all(axis=1)
    return train[keep], private[keep]


def rating_levels(train: np.ndarray) -> np.ndarray:
    """The distinct ratings of the training users, sorted (1..5 on every data set here)."""
    return np.unique(train[~np.isnan(train)])


def rating_domain(train: np.ndarray) -> str:
    """``LO:HI``, the ``--domain`` of the training ratings."""
    levels = rating_levels(train)
    return f"{levels[0]:g}:{levels[-1]:g}"


# --------------------------------------------------------------------------- releases

def true_ratings(train, private, n_classes, seed, columns) -> Release:
    """The user's own ratings, as they are."""
    return class_blind(lambda rows: np.array(rows, dtype=float))


def nothing(train, private, n_classes, seed, columns) -> Release:
    """No row at all (every cell blank)."""
    return class_blind(lambda rows: np.full(np.shape(rows), np.nan))


def kmeans_alone(k: int):
    """k-means at K on the training users, each row released as its nearest representative (the
    device's masked rule), no privacy: what quantizing alone costs."""
    def fit(train, private, n_classes, seed, columns) -> Release:
        from privmap.offline.data import quantize
        rows, _ = with_ratings(train, private)
        centers = quantize(rows, k, metric="l2", seed=seed).centers
        view = view_from_table("quantized", "l2", centers, centers, np.eye(len(centers)),
                               [str(c) for c in range(n_classes)], [f"c{j}" for j in range(train.shape[1])])
        return class_blind(view_release(view, np.random.default_rng(seed)))
    return fit


def privmap_quantized(k: int, delta_fraction: float = DELTA_FRACTION):
    """Seed 000 on the raw ratings: ``privmap build --clusters K --delta-fraction F --domain LO:HI
    --holdout-folds 0`` on the training users' rows (blanks masked), released as a device would
    (one simulated draw): a dense representative row."""
    def fit(train, private, n_classes, seed, columns) -> Release:
        from privmap.offline import Dataset, QuantizedOptions, declare
        from privmap.offline.mechanisms.quantized import build
        rows, classes = with_ratings(train, private)
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "train.csv"
            write_csv(path, rows, classes, RatingSet.one_column(n_classes))
            options = QuantizedOptions(clusters=k, delta_fraction=delta_fraction, seed=seed,
                                       declared=declare(domains=[rating_domain(train)]), cross_fitting=None,
                                       issued_at=1_795_000_000)
            result = build(Dataset.from_csv(path, private="private"), options)
        return class_blind(view_release(view_from_payload(result.payload), np.random.default_rng(seed)))
    return fit


def recommender_build(train, private, seed, options, columns, utility: str = "recommender") -> tuple:
    """``privmap build DATA.csv --private COL1,COL2 --domain LO:HI --utility UTILITY OPTIONS --seed S
    --key KEY --out B`` run as the operator runs it (the CLI, in a child process, with a fresh key)
    on the training users' rows, their private ``columns`` (:class:`RatingSet`) written out of the
    joint codes ``private``, the bundle read back as a device reads it (signature checked): its
    evaluation view (:func:`privmap.offline.mechanisms.view_of`), the build's ``--json`` summary
    and the child process's CPU seconds."""
    from privmap.device import Keyring, read_bundle_file
    from privmap.offline.mechanisms import MECHANISMS
    rows, classes = with_ratings(train, private)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        write_csv(tmp / "train.csv", rows, classes, columns)
        privmap_cli("keygen", tmp / "keys")
        before = children_cpu_seconds()
        summary = json.loads(privmap_cli(
            "build", tmp / "train.csv", "--private", ",".join(name for name, _ in columns), "--domain",
            rating_domain(train), "--utility", utility, *options, "--seed", str(seed), "--key",
            tmp / "keys" / "private.pem", "--out", tmp / "rec.bundle", "--json"))
        cpu_seconds = children_cpu_seconds() - before
        bundle = read_bundle_file(tmp / "rec.bundle", Keyring.from_pem_files(tmp / "keys" / "public.pem"))
    view = MECHANISMS[utility].view
    assert view is not None
    return view(bundle), summary, cpu_seconds


def children_cpu_seconds() -> float:
    """User plus system CPU seconds of this process's finished children (``getrusage``)."""
    import resource
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def privmap_recommender(*options: str, utility: str = "recommender"):
    """privmap's recommender or ranking mode (:func:`recommender_build` with ``OPTIONS``), released
    as a device would (the fold-in or embedding, the nearest centre, one simulated draw): a full row
    of predicted ratings or of item scores, nothing of the user's row but through the sampled
    output. The build's choice (K, budget) goes into the row's note."""
    def fit(train, private, n_classes, seed, columns) -> Release:
        started = time.process_time()
        view, summary, cpu_seconds = recommender_build(train, private, seed, options, columns, utility)
        release = class_blind(view_release(view, np.random.default_rng(seed)))
        release.build_cpu_seconds = cpu_seconds
        chosen = next((c for c in summary.get("auto", {}).get("candidates", ()) if c.get("chosen")), {})
        release.note = (f"K = {summary['clusters']}, Delta = {summary['delta']:.3f} "
                        + ("stars" if utility == "recommender" else "in scores")
                        + (f" (fraction {chosen['delta_fraction']:g})" if "delta_fraction" in chosen else "")
                        + ("; class-blind clusters" if chosen.get("class_blind") else "")
                        + (f"; the build's own held-out attacker AUC {chosen['holdout_attacker_auc']:.3f}"
                           if "holdout_attacker_auc" in chosen else "")
                        + f"; build {cpu_seconds:.0f} CPU-s ({summary['build_seconds']:.0f} s wall), the benchmark's own "
                          f"{time.process_time() - started:.1f} CPU-s besides the child's")
        return release
    return fit


def factor_model_alone(train, private, n_classes, seed, columns) -> Release:
    """The recommender mode's factor model without the mapping, no privacy: each user's own
    predicted-ratings row (their fold-in, clipped to the domain), what the model is worth before
    clustering and privacy cost anything (the model of :func:`recommender_build`; a cheap
    operating point, ``--clusters 4 --prior counts --holdout-folds 0``, since the mapping is
    not used)."""
    view, _, _ = recommender_build(train, private, seed, ("--clusters", "4", "--delta-fraction", "0.5",
                                                          "--prior", "counts", "--holdout-folds", "0"), columns)
    levels = rating_levels(train)
    return class_blind(lambda rows: np.clip(view.predicted(view.points(rows)), levels[0], levels[-1]))


def class_indicativeness(train: np.ndarray, private: np.ndarray, n_classes: int, seed: int) -> np.ndarray:
    """BlurMe's item scores, shape (n_classes, m): logistic-regression coefficients of each class on
    the training users' rated/not-rated indicators (which items a user rated is what gives the class
    away on these sets: InstEval's true rows reach AUC 0.97), its regularisation chosen by the
    attacker's inner cross-validation. A positive score for class c: rating the item raises the odds
    of c (two classes: the one coefficient vector, and its negative for the other class)."""
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits
    rated = (~np.isnan(train)).astype(float)
    with threadpool_limits(limits=1, user_api="blas"):
        c = choose_regularisation(rated, private, seed=seed)
        coef = LogisticRegression(C=c, max_iter=2000, random_state=seed).fit(rated, private).coef_
    return np.vstack([-coef[0], coef[0]]) if n_classes == 2 else coef


def blurme(fraction: float, strategy: str):
    """BlurMe (Weinsberg, Bhagat, Ioannidis and Taft, RecSys 2012): the user's own ratings pass
    unchanged and ``ceil(fraction * n_u)`` ratings are added (n_u: the user's ratings; at least one
    for a user who rated anything, so 1 % and 5 % both add one rating to a user with 20) on items
    they did not rate that indicate *another* class (:func:`class_indicativeness`; two classes: the
    opposite one; more: one chosen uniformly among the others, per user). ``greedy`` takes the most
    indicative items first; ``sampled`` draws them without replacement from the items with a
    positive score, with probability proportional to the score. An added rating is the item's mean
    training rating (the paper's average strategy), so it is not a whole number: an attacker who
    looks for non-integer cells finds the added ones, which the logistic attacker here does not."""
    if strategy not in ("greedy", "sampled"):
        raise ValueError(f"BlurMe strategy {strategy!r}: greedy or sampled")

    @perturbs_own_row
    def fit(train, private, n_classes, seed, columns) -> Release:
        scores = class_indicativeness(train, private, n_classes, seed)
        counts = np.sum(~np.isnan(train), axis=0)
        means = np.divide(np.nansum(train, axis=0), counts, out=np.full(train.shape[1], np.nan), where=counts > 0)
        rng = np.random.default_rng([seed, 2])

        def release(rows, classes):
            out = np.array(rows, dtype=float)
            for u in range(out.shape[0]):
                rated = ~np.isnan(out[u])
                k = math.ceil(fraction * rated.sum())
                if k == 0:
                    continue
                other = rng.choice([a for a in range(n_classes) if a != classes[u]])
                score = scores[other]
                items = np.flatnonzero(~rated & (score > 0) & (counts > 0))
                k = min(k, items.size)
                if k == 0:
                    continue
                if strategy == "greedy":
                    chosen = items[np.argsort(-score[items], kind="stable")[:k]]
                else:
                    chosen = rng.choice(items, size=k, replace=False, p=score[items] / score[items].sum())
                out[u, chosen] = means[chosen]
            return out
        return release
    return fit


def randomized_response(epsilon: float):
    """Randomized response per rated cell: each rating is kept with probability e^eps / (e^eps + L -
    1), otherwise replaced by one of the other L - 1 rating levels drawn uniformly (L: the training
    ratings' levels); blank cells stay blank, so which items a user rated passes through unchanged,
    as in BlurMe. Each cell is eps-locally differentially private; a row of n ratings spends n eps."""
    @perturbs_own_row
    def fit(train, private, n_classes, seed, columns) -> Release:
        levels = rating_levels(train)
        keep = math.exp(epsilon) / (math.exp(epsilon) + len(levels) - 1)
        rng = np.random.default_rng([seed, 3])

        def release(rows, classes):
            out = np.array(rows, dtype=float)
            rated = ~np.isnan(out)
            code = np.searchsorted(levels, out[rated])
            if np.any(levels[np.minimum(code, len(levels) - 1)] != out[rated]):
                raise ValueError("randomized response: a rating outside the training levels")
            moved = rng.random(code.size) >= keep
            shift = rng.integers(1, len(levels), size=code.size)     # uniform among the other levels
            out[rated] = levels[np.where(moved, (code + shift) % len(levels), code)]
            return out
        return release
    return fit


#: name -> fit(train, private, n_classes, seed, columns) -> release(rows, private) -> released rows. Add rows here.
RELEASES: dict[str, Callable] = {
    "true ratings": true_ratings,
    "nothing": nothing,
    "k-means alone K=16 (no privacy)": kmeans_alone(16),
    "k-means alone K=64 (no privacy)": kmeans_alone(64),
    "privmap quantized K=16": privmap_quantized(16),
    "privmap quantized K=64": privmap_quantized(64),
    "factor model alone (no privacy)": factor_model_alone,
    f"privmap recommender (auto, AUC <= {PINNED_TARGET_AUC:g})":
        privmap_recommender("--clusters", "auto", "--target-auc", f"{PINNED_TARGET_AUC:g}"),
    f"privmap recommender (auto, AUC <= {PINNED_TARGET_AUC:g}, --no-class-blind)":
        privmap_recommender("--clusters", "auto", "--target-auc", f"{PINNED_TARGET_AUC:g}", "--no-class-blind"),
    "privmap recommender K=128 F=0.7": privmap_recommender("--clusters", "128", "--delta-fraction", "0.7"),
    "privmap recommender K=32 F=0.5": privmap_recommender("--clusters", "32", "--delta-fraction", "0.5"),
    f"privmap ranking (auto, AUC <= {PINNED_TARGET_AUC:g})":
        privmap_recommender("--clusters", "auto", "--target-auc", f"{PINNED_TARGET_AUC:g}", utility="ranking"),
    "privmap ranking K=64 F=0.5": privmap_recommender("--clusters", "64", "--delta-fraction", "0.5",
                                                      utility="ranking"),
    **{f"BlurMe {strategy} {percent} %": blurme(percent / 100, strategy)
       for strategy in ("greedy", "sampled") for percent in (1, 5, 10)},
    **{f"randomized response eps={eps:g}": randomized_response(eps) for eps in (0.5, 1.0, 2.0)},
}


# --------------------------------------------------------------------------- data

class RatingSet(NamedTuple):
    """A data set of :data:`DATA`: ratings (n, m), NaN blanks; each user's private class code, shape
    (n,), the joint class's on a set of several private columns; and those ``columns``, (name,
    number of classes) each, the joint code being ``numpy.ravel_multi_index`` of the columns' own
    codes (one column: its codes)."""

    ratings: np.ndarray
    private: np.ndarray
    columns: tuple[tuple[str, int], ...]

    @property
    def n_classes(self) -> int:
        """Number of joint classes (every combination of the columns' classes)."""
        return math.prod(n for _, n in self.columns)

    @staticmethod
    def of(s) -> RatingSet:
        """A set of :func:`synthetic_ratings` with one attribute, its column named ``private``."""
        return RatingSet(s.ratings, s.private, RatingSet.one_column(len(s.classes)))

    @staticmethod
    def one_column(n_classes: int) -> tuple[tuple[str, int], ...]:
        """The ``columns`` of a set whose one private column, ``private``, has ``n_classes`` classes."""
        return (("private", n_classes),)

    @staticmethod
    def column_codes(private: np.ndarray, columns) -> tuple[np.ndarray, ...]:
        """Each column's class codes, shape (n,) each, read off the joint codes ``private``."""
        return tuple(np.unravel_index(np.asarray(private), tuple(n for _, n in columns)))


def write_csv(path: pathlib.Path, rows: np.ndarray, private: np.ndarray, columns) -> None:
    """Rows of ratings (NaN = blank) and their private columns (:class:`RatingSet`; each column's
    class ``a{code}``, read off the joint codes ``private``), as privmap build reads them."""
    codes = RatingSet.column_codes(private, columns)
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow([f"c{j}" for j in range(rows.shape[1])] + [name for name, _ in columns])
        for row, *values in zip(rows, *codes):
            w.writerow(["" if math.isnan(x) else f"{x:g}" for x in row] + [f"a{a}" for a in values])


def privmap_cli(*args) -> str:
    """Run ``privmap ARGS`` in a child process; its stdout (stderr in the error when it fails)."""
    done = subprocess.run([*PRIVMAP, *map(str, args)], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"privmap {' '.join(map(str, args[:2]))} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def from_csv(path: pathlib.Path, private: str, public) -> RatingSet:
    """Ratings (NaN blanks), private class codes and the number of classes of a CSV file."""
    ds = load_dataset(path, private=private, public=list(public))
    return RatingSet(np.asarray(ds.public, dtype=float), np.asarray(ds.private), RatingSet.one_column(len(ds.classes)))


def insteval(seed: int) -> RatingSet:
    """data/insteval's wide file: ratings (2972, 500) with NaN blanks, studage codes, 4 classes."""
    with INSTEVAL.open() as f:
        header = next(csv.reader(f))
    return from_csv(INSTEVAL, "studage", [c for c in header if c.startswith("d")])


def gss(seed: int) -> RatingSet:
    """data/gss1993_music: 1,597 respondents x 18 styles, 1-5, 7 % blank, sex private (2 classes)."""
    return from_csv(GSS_MUSIC, "sex", GSS_STYLES)


def synthetic(seed: int) -> RatingSet:
    s = synthetic_ratings(3000, 500, rank=5, density=0.04, classes=4, rng=seed)
    return RatingSet.of(s)


def movies(seed: int) -> RatingSet:
    """The shape of the movie-ratings set operators tried: 3,000 users x 200 items, 76 % blank, a
    binary attribute that an attacker reads from the true rows at AUC 0.78-0.90 (it varies with
    the seed's draw of class means), rank-10 taste, blanks missing not at random."""
    s = synthetic_ratings(3000, 200, rank=10, density=0.24, classes=2, rng=seed, shift=0.45)
    return RatingSet.of(s)


def movies_wide(seed: int) -> RatingSet:
    """The same set at 1,000 items, the shape of its 1,000 most-rated movies: 92 % blank."""
    s = synthetic_ratings(3000, 1000, rank=10, density=0.08, classes=2, rng=seed, shift=0.45)
    return RatingSet.of(s)


def watch(seed: int) -> RatingSet:
    """3,000 users x 200 items, 90 % blank, people rating what suits their taste and what is
    popular: EASE on true profiles recalls about twice what popularity does, as on real movies."""
    s = synthetic_ratings(3000, 200, rank=10, density=0.10, classes=2, rng=seed, shift=0.45, taste=1.0,
                          popularity=1.5)
    return RatingSet.of(s)


def watch_wide(seed: int) -> RatingSet:
    """The same at 1,000 items, 97 % blank."""
    s = synthetic_ratings(3000, 1000, rank=10, density=0.03, classes=2, rng=seed, shift=0.45, taste=1.0,
                          popularity=1.5)
    return RatingSet.of(s)


def movies_age(seed: int) -> RatingSet:
    """The ``movies`` shape with an age band private: 7 ordered classes whose taste moves along a
    random walk (neighbouring bands close, the ends far apart), an attacker reading the band
    from the true rows at one-vs-rest macro AUC about 0.75 (logistic), as on real movie ratings."""
    s = synthetic_ratings(3000, 200, rank=10, density=0.24, classes=7, rng=seed, shift=0.4, ordered=True)
    return RatingSet(s.ratings, s.private, (("age", 7),))


def movies_joint(seed: int) -> RatingSet:
    """The ``movies`` shape with two private columns whose effects on taste add: gender (2 classes,
    as ``movies``) and an age band (7, ordered, as ``movies-age``), built with ``--private
    gender,age`` so that the bundle protects their joint class (14)."""
    s = synthetic_ratings(3000, 200, rank=10, density=0.24, classes=(2, 7), rng=seed, shift=(0.45, 0.4),
                          ordered=(False, True))
    return RatingSet(s.ratings, s.private, (("gender", 2), ("age", 7)))


DATA = {"insteval": insteval, "synthetic": synthetic, "movies": movies, "movies-wide": movies_wide, "watch": watch,
        "watch-wide": watch_wide, "gss": gss, "movies-age": movies_age, "movies-joint": movies_joint}


# --------------------------------------------------------------------------- protocol

def split(private: np.ndarray, seed: int, test_fraction: float = 0.3):
    from sklearn.model_selection import train_test_split
    return train_test_split(np.arange(len(private)), test_size=test_fraction, random_state=seed, stratify=private)


def run(name: str, seed: int, only: list[str] | None) -> dict:
    data = DATA[name](seed)
    ratings, private, n_classes, columns = data.ratings, data.private, data.n_classes, data.columns
    train, test = split(private, seed)
    service = ServiceUtility(ratings[train], ratings[test], seed=seed)
    out = {"data": name, "users": int(len(private)), "items": int(ratings.shape[1]),
           "density": float(np.mean(~np.isnan(ratings))), "classes": n_classes,
           "private_columns": {column: n for column, n in columns}, **service.describe(),
           "baseline": service.baseline, "ranking": service.ranking.baseline, "rows": []}

    def attack(train_rows, test_rows):
        return logistic_attack(train_rows, private[train], test_rows, private[test], n_classes, seed=seed)

    for label, fit in RELEASES.items():
        if only and label not in only:
            continue
        started = time.perf_counter()
        release = fit(ratings[train], private[train], n_classes, seed, columns)
        released = release(service.visible.copy(), private[test])
        figures = service.measure(released)
        train_released = release(ratings[train], private[train])
        knows = attack(train_released, released)
        identity = identity_attack(train_released, private[train], released, private[test], n_classes)
        boosted = boosting_attack(train_released, private[train], released, private[test], n_classes, seed)
        by_column = {} if len(columns) == 1 else {
            column: strongest_attackers(train_released, codes[train], released, codes[test], n, seed)
            for (column, n), codes in zip(columns, RatingSet.column_codes(private, columns))}
        unaware = attack(ratings[train], released) if getattr(fit, "perturbs_own_row", False) else None
        out["rows"].append({"release": label, "rmse": figures["rmse_released"], "value_kept": figures["value_kept"],
                            "ndcg_at_10": figures["ndcg_at_k_released"], "recall_at_10": figures["recall_at_k_released"],
                            "attacker_auc": knows.roc_auc, "attacker_c": knows.regularisation,
                            "identity_attacker_auc": identity, "boosting_attacker_auc": boosted,
                            "strongest_attacker_auc": max(knows.roc_auc, identity, boosted),
                            "strongest_attacker_auc_by_column": {c: a["strongest"] for c, a in by_column.items()},
                            "attacker_auc_by_column": by_column,
                            "build_cpu_seconds": getattr(release, "build_cpu_seconds", None),
                            "ranking_recall_at_10": figures["ranking_recall_released"],
                            "ranking_value_kept": figures["ranking_value_kept"],
                            "ranking_read_by": figures["ranking_released_by"],
                            "unaware_attacker_auc": None if unaware is None else unaware.roc_auc,
                            "unaware_attacker_c": None if unaware is None else unaware.regularisation,
                            "released_cells_per_user": figures["released_cells_per_user"],
                            "note": getattr(release, "note", None),
                            "seconds": time.perf_counter() - started})
        cpu = out["rows"][-1]["build_cpu_seconds"]
        print(f"  {name}: {label} done in {out['rows'][-1]['seconds']:.1f} s"
              + ("" if cpu is None else f", the privmap build {cpu:.1f} CPU-s"), file=sys.stderr, flush=True)
    return out


def strongest_attackers(train_rows: np.ndarray, train_private: np.ndarray, test_rows: np.ndarray,
                        test_private: np.ndarray, n_classes: int, seed: int) -> dict[str, float]:
    """The held-out ROC AUC of each attacker that knows the release (logistic, row as a symbol,
    gradient boosting; one-vs-rest macro for more than two classes), trained and scored on the
    class codes given (one private column's, on a set of several), and the strongest of them."""
    logistic = logistic_attack(train_rows, train_private, test_rows, test_private, n_classes, seed=seed).roc_auc
    identity = identity_attack(train_rows, train_private, test_rows, test_private, n_classes)
    boosted = boosting_attack(train_rows, train_private, test_rows, test_private, n_classes, seed)
    return {"logistic": logistic, "identity": identity, "boosting": boosted, "strongest": max(logistic, identity, boosted)}


def identity_attack(train_rows: np.ndarray, train_private: np.ndarray, test_rows: np.ndarray,
                    test_private: np.ndarray, n_classes: int) -> float:
    """ROC AUC of the attacker who reads a released row as a symbol: p(a | row) counted over the
    training users' releases of that very row (add-one smoothed; a row never released in training
    gets the smoothed prior), scored on the held-out releases (one-vs-rest macro for more classes).
    Against a release drawn from a finite set of rows (privmap's outputs) this attacker knows
    everything the row says; against rows as varied as users' own it learns nothing."""
    from sklearn.metrics import roc_auc_score
    keys: dict[bytes, int] = {}
    seen = np.array([keys.setdefault(np.round(r, 6).tobytes(), len(keys)) for r in train_rows])
    asked = np.array([keys.get(np.round(r, 6).tobytes(), len(keys)) for r in test_rows])
    counts = np.ones((len(keys) + 1, n_classes))
    np.add.at(counts, (seen, train_private), 1.0)
    scores = (counts / counts.sum(axis=1, keepdims=True))[asked]
    if n_classes == 2:
        return float(roc_auc_score(test_private, scores[:, 1]))
    return float(roc_auc_score(test_private, scores, multi_class="ovr", labels=list(range(n_classes))))


def boosting_attack(train_rows: np.ndarray, train_private: np.ndarray, test_rows: np.ndarray,
                    test_private: np.ndarray, n_classes: int, seed: int) -> float:
    """ROC AUC of gradient boosting (HistGradientBoostingClassifier, defaults) trained on the
    training users' released values (blank as 0) and rated/blank indicators, scored on the
    held-out releases (one-vs-rest macro for more classes)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    def features(rows):
        return np.hstack([np.nan_to_num(rows, nan=0.0), np.isnan(rows).astype(float)])
    model = HistGradientBoostingClassifier(random_state=seed).fit(features(train_rows), train_private)
    scores = model.predict_proba(features(test_rows))
    if n_classes == 2:
        return float(roc_auc_score(test_private, scores[:, 1]))
    return float(roc_auc_score(test_private, scores, multi_class="ovr", labels=list(range(n_classes))))


def _f(x, nd=4) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def table(r: dict) -> str:
    lines = [f"{r['data']}: {r['users']} users x {r['items']} items, density {r['density']:.4f}, {r['classes']} classes; "
             f"{r['train_users']} training users, {r['heldout_users']} held-out users, {r['hidden_ratings']} hidden "
             f"ratings ({r['visible_ratings_per_user']:.1f} visible per held-out user)",
             "",
             f"top-10 lists: EASE on true profiles recall@10 {_f(r['ranking']['ranking_recall_true'])}, popularity "
             f"{_f(r['ranking']['ranking_recall_popularity'])}",
             "",
             "| release | RMSE | value kept | recall@10 (top-10 list) | ranking value kept | attacker AUC: logistic | "
             "gradient boosting | row as a symbol | **strongest** | logistic trained on true rows | "
             "released cells / user |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row['release']} | {_f(row['rmse'])} | {_f(row['value_kept'], 3)} | "
                     f"{_f(row['ranking_recall_at_10'])} ({row['ranking_read_by']}) | {_f(row['ranking_value_kept'], 3)} | "
                     f"{_f(row['attacker_auc'], 3)} | {_f(row['boosting_attacker_auc'], 3)} | "
                     f"{_f(row['identity_attacker_auc'], 3)} | **{_f(row['strongest_attacker_auc'], 3)}** | "
                     f"{_f(row['unaware_attacker_auc'], 3)} | {row['released_cells_per_user']:.1f} |")
    if len(r.get("private_columns", ())) > 1:
        lines += ["", "strongest attacker's AUC on each private column (logistic / row as a symbol / gradient boosting):",
                  "", "| release | " + " | ".join(r["private_columns"]) + " | joint class |",
                  "|---|" + "---|" * (len(r["private_columns"]) + 1)]
        for row in r["rows"]:
            cells = [f"**{_f(a['strongest'], 3)}** ({_f(a['logistic'], 3)} / {_f(a['identity'], 3)} / "
                     f"{_f(a['boosting'], 3)})" for a in row["attacker_auc_by_column"].values()]
            lines.append(f"| {row['release']} | " + " | ".join(cells) + f" | **{_f(row['strongest_attacker_auc'], 3)}** |")
    notes = [f"- {row['release']}: {row['note']}" for row in r["rows"] if row.get("note")]
    return "\n".join(lines + ([""] + notes if notes else []))


# --------------------------------------------------------------------------- plot

#: Marker and colour of each family of releases (the first whose prefix a name starts with).
FAMILIES = (("true ratings", "*", "black"), ("nothing", "X", "grey"), ("k-means alone", "s", "tab:brown"),
            ("privmap quantized", "D", "tab:orange"), ("factor model alone", "h", "tab:cyan"),
            ("privmap recommender", "o", "tab:blue"), ("privmap ranking", "p", "tab:purple"),
            ("BlurMe greedy", "^", "tab:red"),
            ("BlurMe sampled", "v", "tab:pink"), ("randomized response", "P", "tab:green"))
#: The plot's lowest value kept: a release below it is drawn on it, its value in its label.
PLOT_FLOOR = -1.5


def plot(results: list[dict], path: pathlib.Path) -> None:
    """Value kept (y) against the held-out strongest attacker's AUC (x), one column of panels per
    data set: the rating value kept (RMSE) above, the ranking value kept (top-10 lists) below. A
    filled marker per release for the strongest attacker that knows it; for a release that
    perturbs the user's own row, a hollow marker joined to it for the attacker trained on true rows.
    Dashed lines at the pinned target AUC and at value kept :data:`VALUE_KEPT_MARK`. Releases worth
    much less than no row (down to -12.7 on InstEval, where value kept divides by a small number)
    are drawn on :data:`PLOT_FLOOR` and listed with their value in a box, so that the region that
    matters stays legible."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, len(results), figsize=(6.2 * len(results), 10.2), squeeze=False)
    handles = {}
    for column, r in enumerate(results):
        for ax, (key, label) in zip(axes[:, column], (("value_kept", "rating value kept (RMSE)"),
                                                      ("ranking_value_kept", "ranking value kept (recall@10)"))):
            _panel(ax, r, key, handles)
            ax.set_ylabel(label)
    fig.legend(handles=list(handles.values()), loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _panel(ax, r: dict, key: str, handles: dict) -> None:
    """One panel of :func:`plot`: the releases of result ``r`` by ``key`` (a value kept)."""
    top, below = 1.0, []
    for row in r["rows"]:
        x, kept = row["strongest_attacker_auc"], row[key]
        if kept is None or x is None or math.isnan(x):
            continue
        family, marker, colour = next(f for f in FAMILIES if row["release"].startswith(f[0]))
        y, top = max(kept, PLOT_FLOOR), max(top, kept)
        handles[family] = ax.scatter(x, y, marker=marker, color=colour, s=55, zorder=3, label=family)
        if row["unaware_attacker_auc"] is not None:
            ax.scatter(row["unaware_attacker_auc"], y, marker=marker, facecolors="none", edgecolors=colour,
                       s=55, zorder=3)
            ax.plot([x, row["unaware_attacker_auc"]], [y, y], color=colour, lw=0.6, ls=":", zorder=2)
        if kept < PLOT_FLOOR:
            below.append(f"{row['release']}: {kept:.2f}")
        else:
            ax.annotate(short_label(row["release"]), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=6.5)
    if below:
        ax.text(0.98, 0.1, f"drawn at {PLOT_FLOOR:g}, value kept:\n" + "\n".join(below), transform=ax.transAxes,
                ha="right", va="bottom", fontsize=6.5, bbox={"facecolor": "white", "alpha": 0.85, "lw": 0.5})
    ax.axvline(PINNED_TARGET_AUC, ls="--", color="grey", lw=1)
    ax.axhline(VALUE_KEPT_MARK, ls="--", color="grey", lw=1)
    ax.set_ylim(PLOT_FLOOR - 0.15, top + 0.2)
    ax.set_xlabel("held-out strongest attacker ROC AUC (hollow: logistic trained on true rows)")
    ax.set_title(f"{r['data']}: {r['users']} users x {r['items']} items, {r['classes']} classes", fontsize=10)
    ax.grid(alpha=0.3)


def short_label(name: str) -> str:
    """A release's name without its family, for the plot's annotations."""
    family = next((f[0] for f in FAMILIES if name.startswith(f[0])), "")
    return name[len(family):].replace("(no privacy)", "").replace("randomized response ", "").strip() or name


# --------------------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", choices=sorted(DATA), default=["insteval", "synthetic", "movies", "gss"])
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these releases (names of RELEASES)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--splits", type=int, default=1, metavar="N",
                    help="run seeds SEED .. SEED + N - 1 (each its own split, build and draw) and end with each "
                         "release's median and range of value kept and attacker AUC over them")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    ap.add_argument("--plot", type=pathlib.Path, metavar="PATH",
                    help="write a PNG of value kept against attacker AUC, a panel per data set")
    args = ap.parse_args(argv)
    unknown = set(args.only or ()) - set(RELEASES)
    if unknown:
        ap.error(f"unknown release(s): {', '.join(sorted(unknown))}; known: {', '.join(RELEASES)}")
    started = time.perf_counter()
    results = [run(name, seed, args.only) for name in args.data for seed in range(args.seed, args.seed + args.splits)]
    print(f"  all done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.plot:
        plot(results, args.plot)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for r in results:
        print(table(r) + "\n")
    if args.splits > 1:
        print(over_splits(results))
    return 0


def over_splits(results: list[dict]) -> str:
    """Each (data set, release)'s median [min, max] of value kept and attacker AUC over the splits."""
    lines = ["| data | release | splits | value kept, median [range] | ranking value kept, median [range] | "
             "strongest attacker AUC, median [range] | AUC above the pinned target |", "|---|---|---|---|---|---|---|"]
    groups: dict = {}
    for r in results:
        for row in r["rows"]:
            groups.setdefault((r["data"], row["release"]), []).append(row)
    for (data, release), rows in groups.items():
        auc = [row["strongest_attacker_auc"] for row in rows]
        above = sum(a > PINNED_TARGET_AUC for a in auc)
        lines.append(f"| {data} | {release} | {len(rows)} | {_spread(row['value_kept'] for row in rows)} | "
                     f"{_spread(row['ranking_value_kept'] for row in rows)} | {_spread(auc)} | {above} of {len(rows)} |")
    return "\n".join(lines)


def _spread(values) -> str:
    """``median [min, max]`` of the values that were measured (``-`` when none was)."""
    found = [v for v in values if v is not None]
    return f"{np.median(found):.3f} [{min(found):.3f}, {max(found):.3f}]" if found else "-"


if __name__ == "__main__":
    sys.exit(main())
