#!/usr/bin/env bash
# The job users come for, on a bundled real dataset, from a fresh clone: set up a virtual
# environment, make a signing key, build a ranking-grade bundle from the InstEval lecture ratings
# (the operator's training students, private attribute: their semester) with a privacy target,
# let three new students' devices release a row each, show the top-10 list a service ranks from
# each release beside the list from the student's true ratings, and measure what the service
# and the strongest attacker get from every new student's release.
# Everything it writes goes under out/demo/ (ignored by git). scripts/demo_rows.sh is the
# seed-000 walkthrough of the rows mode.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[offline]'
privmap=.venv/bin/privmap
python=.venv/bin/python
out=out/demo
rm -rf "$out" && mkdir -p "$out"

echo "== split data/insteval: 70 % training students (the operator's, with their semester), 30 % new students"
$python examples/top10.py split data/insteval/InstEval_wide_top500.csv --private studage --drop s --out "$out" --users 3
echo "== keygen"
$privmap keygen "$out/keys"
echo "== build: which lecturers a student rated, mapped so that an attacker's AUC for the semester stays <= 0.55"
$privmap build "$out/train.csv" --private studage --domain 1:5 --utility ranking --clusters auto --target-auc 0.55 \
    --class-blind --holdout-folds 2 --key "$out/keys/private.pem" --out "$out/ranking.bundle"
echo "== verify, as a device would"
$privmap verify "$out/ranking.bundle" --trusted "$out/keys/public.pem"
echo "== three new students' devices release a row each (a score per lecturer; nothing else leaves the device)"
$privmap sanitize "$out/ranking.bundle" "$out/visible.csv" "$out/released.csv" --trusted "$out/keys/public.pem" \
    --state "$out/device"
$privmap sanitize "$out/ranking.bundle" "$out/visible.csv" "$out/again.csv" --trusted "$out/keys/public.pem" \
    --state "$out/device"
cmp "$out/released.csv" "$out/again.csv" && echo "asked again, each device releases the same row: nothing more leaks"
echo "== the top-10 lists the service ranks: from each release, and from the student's true ratings"
$python examples/top10.py lists "$out/train.csv" "$out/visible.csv" "$out/released.csv" "$out/hidden.csv" --private studage
echo "== what the service and the strongest attacker get from every new student's release"
$privmap evaluate "$out/ranking.bundle" "$out/test.csv" --train "$out/train.csv" --private studage \
    --trusted "$out/keys/public.pem"
