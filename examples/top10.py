"""The job users come for, as the demo shows it: a service's top-10 list from a device's release
beside the list from the user's true ratings.

Run from the repository root (scripts/demo.sh runs both steps):

    python examples/top10.py split DATA.csv --private COL --out DIR [--drop COLS] [--users N] [--min-ratings R]
        [--seed S]
    python examples/top10.py lists DIR/train.csv DIR/visible.csv DIR/released.csv DIR/hidden.csv --private COL

``split`` leaves out the ``--drop`` columns (an id, say), divides a labelled ratings file 70/30
into the operator's training users (``train.csv``, with the private column) and new users
(``test.csv``, the same), hides 10 % of the ratings (at least one) of the first ``N`` new
users who rated ``--min-ratings`` or more (a list has more to find), as SERVICE.md does, and writes what their devices see
(``visible.csv``, without the private column) and what was hidden (``hidden.csv``).

``lists`` prints, for each of those users, the top 10 of the items they have not rated as the
service ranks them from the released row (its scores, higher first) and from their true visible
ratings (EASE fitted on the training users' rated/unrated matrix), marking with ``*`` the hidden
items they rated 4 or more: the ones a good list finds.
"""
from __future__ import annotations

import argparse
import csv
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from privmap.offline.measures import LIKED, ease_weights, hide_ratings  # noqa: E402

TOP = 10


def read(path: pathlib.Path, drop: str | None = None) -> tuple[list[str], np.ndarray]:
    """(item columns, ratings with NaN blanks) of a CSV; ``drop`` names a column left out."""
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    keep = [j for j, name in enumerate(header) if name != drop]
    values = np.array([[float(r[j]) if r[j] else np.nan for j in keep] for r in rows[1:]], dtype=float)
    return [header[j] for j in keep], values


def split(args) -> None:
    with args.data.open(newline="") as f:
        rows = list(csv.reader(f))
    dropped = set(filter(None, args.drop.split(",")))
    kept = [j for j, name in enumerate(rows[0]) if name not in dropped]
    rows = [[r[j] for j in kept] for r in rows]
    header, body = rows[0], rows[1:]
    private = header.index(args.private)
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(body))
    cut = int(round(0.7 * len(body)))
    args.out.mkdir(parents=True, exist_ok=True)
    for name, part in (("train.csv", order[:cut]), ("test.csv", order[cut:])):
        with (args.out / name).open("w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows([header, *(body[i] for i in sorted(part))])
    items = [j for j in range(len(header)) if j != private]
    rated = [body[i] for i in sorted(order[cut:]) if sum(bool(body[i][j]) for j in items) >= args.min_ratings]
    users = rated[:args.users]
    ratings = np.array([[float(r[j]) if r[j] else np.nan for j in items] for r in users])
    hidden = hide_ratings(ratings, rng=args.seed)
    with (args.out / "visible.csv").open("w", newline="") as f, (args.out / "hidden.csv").open("w", newline="") as g:
        visible, held = csv.writer(f, lineterminator="\n"), csv.writer(g, lineterminator="\n")
        visible.writerow([header[j] for j in items])
        held.writerow([header[j] for j in items])
        for row, hide in zip(users, hidden):
            cells = [row[j] for j in items]
            visible.writerow(["" if h else c for c, h in zip(cells, hide)])
            held.writerow([c if h else "" for c, h in zip(cells, hide)])
    print(f"{cut} training users in {args.out / 'train.csv'}, {len(body) - cut} new users in "
          f"{args.out / 'test.csv'}; {len(users)} of them as their devices see them in {args.out / 'visible.csv'}")


def ranked(scores: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """The top :data:`TOP` column indexes of ``scores`` among the unseen ones, higher first."""
    unseen = np.flatnonzero(~seen)
    return unseen[np.argsort(-scores[unseen], kind="stable")[:TOP]]


def lists(args) -> None:
    columns, train = read(args.train, drop=args.private)
    visible_columns, visible = read(args.visible)
    _, released = read(args.released)
    _, hidden = read(args.hidden)
    if visible_columns != columns:
        raise SystemExit("error: the training file and the users' file do not have the same item columns")
    weights = ease_weights((~np.isnan(train)).astype(float))
    for u in range(visible.shape[0]):
        seen = ~np.isnan(visible[u])
        liked = np.nan_to_num(hidden[u], nan=0.0) >= LIKED
        print(f"user {u + 1}: rated {int(seen.sum())} items; hidden from the device: {int((~np.isnan(hidden[u])).sum())}, "
              f"{int(liked.sum())} of them rated {LIKED:g} or more (*)")
        lists = {label: ranked(scores, seen) for label, scores in (("from the released row", released[u]),
                                                                   ("from the true ratings", seen.astype(float) @ weights))}
        for label, top in lists.items():
            found = int(liked[top].sum())
            print(f"  {label:<22} {found} found: " + " ".join(columns[j] + ("*" if liked[j] else "") for j in top))
        print(f"  {len(set(lists['from the released row']) & set(lists['from the true ratings']))} of the 10 in both lists")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    s = sub.add_parser("split", help="training users, new users, and what a few new users' devices see")
    s.add_argument("data", type=pathlib.Path)
    s.add_argument("--private", required=True)
    s.add_argument("--out", type=pathlib.Path, required=True)
    s.add_argument("--drop", default="", help="comma-separated columns to leave out (ids)")
    s.add_argument("--users", type=int, default=3)
    s.add_argument("--min-ratings", type=int, default=10, help="show new users who rated this many or more")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(run=split)
    t = sub.add_parser("lists", help="each user's top 10 from the released row and from the true ratings")
    for name in ("train", "visible", "released", "hidden"):
        t.add_argument(name, type=pathlib.Path)
    t.add_argument("--private", required=True, help="the training file's private column")
    t.set_defaults(run=lists)
    args = ap.parse_args(argv)
    args.run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
