#!/usr/bin/env bash
# The seed-000 walkthrough (the rows mode) on a bundled real dataset, from a fresh clone:
# set up a virtual environment, make a signing key, build a bundle from the SSI-2012
# music-taste ratings (private attribute: gender), verify it as a device would,
# sanitize a few users as a device that remembers (asked twice, it releases the same rows)
# and report leakage before and after.
# Everything it writes goes under out/demo-rows/ (ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[offline]'
privmap=.venv/bin/privmap
out=out/demo-rows
rm -rf "$out" && mkdir -p "$out"
data=data/ssi2012/tastes_gender.csv

echo "== keygen"
$privmap keygen "$out/keys"
echo "== build (K = 64 clusters, Delta = half the perfect-privacy distortion)"
$privmap build "$data" --private gender --clusters 64 --delta-fraction 0.5 --domain 0:3 \
    --key "$out/keys/private.pem" --out "$out/demo.bundle"
echo "== verify"
$privmap verify "$out/demo.bundle" --trusted "$out/keys/public.pem"
echo "== sanitize 5 users as a device with installed state (their gender column is ignored and never written)"
head -n 6 "$data" > "$out/users.csv"
$privmap sanitize "$out/demo.bundle" "$out/users.csv" "$out/released.csv" --trusted "$out/keys/public.pem" \
    --state "$out/device"
echo "-- true ratings";     cut -d, -f1-20 "$out/users.csv"
echo "-- released ratings"; cat "$out/released.csv"
echo "== ask the same device again: one permanent release per input, so nothing more leaks"
$privmap sanitize "$out/demo.bundle" "$out/users.csv" "$out/again.csv" --trusted "$out/keys/public.pem" \
    --state "$out/device"
cmp "$out/released.csv" "$out/again.csv" && echo "identical releases"
if $privmap evaluate --help >/dev/null 2>&1; then
    echo "== evaluate (leakage and attacks before and after, on the same data)"
    $privmap evaluate "$out/demo.bundle" "$data" --private gender
fi
