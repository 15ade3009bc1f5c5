"""Fuzz target for the device loader and installer: mutated bundles must be refused with a typed
error (or load, and then release), never crash, hang or change installed state.

Five mutation families, drawn in turn:

- ``bytes``: random byte edits (flip, set to a msgpack marker, insert, delete, splice) of a whole
  signed bundle: reaches the envelope parser and the signature check;
- ``payload-bytes``: the same edits of the payload bytes, then signed with a trusted key: reaches
  the work-cap pre-scan and the msgpack decoder past the signature;
- ``structure``: an edit of the decoded payload object (a value replaced by a hostile one, a key
  removed or added, a list shortened, lengthened or reordered, a number nudged), re-encoded and
  signed: reaches the schema, the table and metrics checks and the leakage recheck;
- ``model``: one to three numbers of a recommender payload's model and factor space (mean,
  reg, domain, decimals, scale, item entries, whitening, the space's bounds, outputs) set to an
  extreme finite value (tiny, huge, zero, negative, int32 edge) or a non-finite one, re-signed
  (the leakage declared afresh, so that most reach the model's checks): reaches the model's
  bounds, then releases whose every cell must be a finite rating inside the domain, on the
  ``decimals`` grid;
- ``ranking``: the same for a ranking payload's model and score space (domain, decimals,
  ``basis_bits``, embedding and basis entries, the space's bounds, outputs): releases whose every
  cell must be a finite score on the ``decimals`` grid.

Every load that succeeds releases a few rows (a recommender's or ranking bundle's: its inputs
rated as a user, and a fully rated row at each end of the domain) and decodes each released
output. The ``bytes``, ``payload-bytes`` and ``structure`` families edit every kind's payload,
the ranking kind's among them.

Every 50th input also goes through :class:`DeviceState.install` on top of an installed bundle:
a refusal must leave the state directory byte-identical.

Run the full target (>= 100,000 inputs; a few minutes)::

    .venv/bin/python tests/device/fuzz_bundles.py --inputs 100000 --seed 1

or one family alone (``--families model --inputs 100000``). It prints totals (per family:
loaded / refused by error class) and exits 1 on any untyped exception, a load that cannot
release, a released recommender cell outside its domain or off its grid, a state change on
refusal, or an input slower than ``--max-seconds``. The test suite runs it briefly (tests/device/test_device_fuzz.py).
"""
from __future__ import annotations

import argparse
import collections
import copy
import json
import math
import pathlib
import random
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import NOW, Sim, base_payload, exact_payload, ranking_payload, recommender_payload, with_leakage  # noqa: E402

from privmap.device import DeviceState, PrivmapDeviceError
from privmap.device.errors import BundleError

MARKERS = (0x00, 0xC0, 0xC1, 0xC3, 0xCF, 0xD4, 0xDB, 0xDD, 0xDF, 0xFF, 0x7F, 0x80)
HOSTILE = (None, True, False, -1, 0, 1, 2 ** 63 - 1, -2 ** 63, 2 ** 64 - 1, 1.5, -0.0, math.nan, math.inf,
           -math.inf, 1e308, "", "x" * 5000, "é", b"bytes", [], {}, [[]], [None] * 3, {"": 1},
           list(range(2000)), [[0.5] * 64] * 64)
#: Values the ``model`` family puts in a number's place.
EXTREME = (0, 0.0, -0.0, 1, -1, 0.4, 5e-324, 1e-300, -1e-300, 1e-9, 1e9, 1e100, -1e100, 1e300, -1e300, 1e308,
           2 ** 31 - 1, -(2 ** 31 - 1), 2 ** 31, 30, 6, math.nan, math.inf, -math.inf)
FAMILIES = ("bytes", "payload-bytes", "structure", "model", "ranking")


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """One to eight random byte edits of ``data``."""
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 8))):
        op = rng.randrange(5)
        at = rng.randrange(len(b)) if b else 0
        if op == 0 and b:
            b[at] ^= 1 << rng.randrange(8)
        elif op == 1 and b:
            b[at] = rng.choice(MARKERS)
        elif op == 2:
            b.insert(at, rng.randrange(256))
        elif op == 3 and b:
            del b[at:at + rng.randrange(1, 9)]
        else:
            b[at:at] = rng.randbytes(rng.randrange(1, 9))
    return bytes(b)


def _slots(obj, out, parent=None, key=None):
    """Every (container, key) slot of ``obj``, depth first."""
    if parent is not None:
        out.append((parent, key))
    if isinstance(obj, dict):
        for k in list(obj):
            _slots(obj[k], out, obj, k)
    elif isinstance(obj, list):
        for i in range(len(obj)):
            _slots(obj[i], out, obj, i)
    return out


def mutate_structure(rng: random.Random, payload: dict) -> dict:
    """A copy of ``payload`` with one to three structural edits."""
    payload = copy.deepcopy(payload)
    for _ in range(rng.choice((1, 1, 2, 3))):
        parent, key = rng.choice(_slots(payload, []))
        value = parent[key]
        op = rng.randrange(6)
        if op == 0:
            parent[key] = copy.deepcopy(rng.choice(HOSTILE))
        elif op == 1 and isinstance(parent, dict):
            del parent[key]
        elif op == 1:
            parent.append(copy.deepcopy(value))
        elif op == 2 and isinstance(parent, dict):
            parent[rng.choice(("extra", "public_key", "threshold", key + "_"))] = copy.deepcopy(value)
        elif op == 2 and parent:
            parent.pop()
        elif op == 3 and type(value) in (int, float):
            parent[key] = rng.choice((value + 1, value - 1, value * 2, -value, value / 3, int(value) >> 1))
        elif op == 4 and isinstance(value, list) and value:
            rng.shuffle(value)
        else:
            parent[key] = copy.deepcopy(rng.choice([v for _, v in _slots(payload, [])[:50]] or [None]))
    return payload


def _model_slots(payload: dict) -> list:
    """The (container, key) slots of the numbers the ``model`` and ``ranking`` families edit."""
    model = payload["model"]
    scalars = ("min", "max", "decimals") + (("basis_bits",) if "basis" in model else ("mean", "reg", "scale_bits"))
    slots = [(model, k) for k in scalars]
    for matrix in (("embed", "basis") if "basis" in model else ("items", "whiten")):
        slots += [(row, k) for row in model[matrix] for k in range(len(row))]
    slots += [(f, k) for f in payload["features"] for k in ("min", "max")]
    slots += [(row, k) for row in payload["outputs"] for k in range(len(row))]
    return slots


def mutate_model(rng: random.Random, payload: dict) -> dict:
    """A copy of a recommender or ranking ``payload`` with one to three of its model's numbers (and
    its space's) set to an extreme value or moved by a power of ten (of two for a whole
    number), leakage declared afresh."""
    payload = copy.deepcopy(payload)
    model = payload["model"]
    if rng.randrange(3) == 0:          # a float domain whose bounds need not sit on the decimals grid
        model.update(integer=False, min=rng.choice((1, 0.4, 0.25, 1.05, -2.5)),
                     max=rng.choice((5, 4.6, 4.75, 10.0)), decimals=rng.randrange(3))
    for _ in range(rng.choice((1, 1, 2, 3))):
        parent, key = rng.choice(_model_slots(payload))
        value = parent[key]
        if rng.randrange(3) == 0:
            parent[key] = rng.choice(EXTREME)
        elif type(value) is int:
            parent[key] = rng.choice((value << rng.randrange(33), -value, value + 1, rng.randrange(-40, 40)))
        else:
            parent[key] = value * float(f"1e{rng.randrange(-320, 320)}")
    return with_leakage(payload)


def run(inputs: int, seed: int, max_seconds: float = 2.0, progress=None, families=FAMILIES) -> dict:
    """Fuzz ``inputs`` bundles, drawing the ``families`` in turn; returns the totals
    (``failures`` lists every oracle violation)."""
    sim = Sim()
    rng = random.Random(seed)
    payloads = [base_payload(), exact_payload(), recommender_payload(), ranking_payload()]
    signed = [sim.sign_obj(p) for p in payloads]
    packed = [sim.pack(p) for p in payloads]
    totals = {"inputs": 0, "by_family": collections.defaultdict(collections.Counter),
              "state_installs": 0, "max_seconds": 0.0, "failures": []}
    with tempfile.TemporaryDirectory() as tmp:
        state = DeviceState(pathlib.Path(tmp) / "state", sim.keyring, clock=lambda: NOW)
        state.install(sim.bundle(version=5))
        root = pathlib.Path(tmp) / "state"
        for i in range(inputs):
            family = families[i % len(families)]
            which = rng.randrange(len(payloads))
            if family == "bytes":
                data = mutate_bytes(rng, signed[which])
            elif family == "payload-bytes":
                data = sim.sign_obj(mutate_bytes(rng, packed[which]))
            else:
                mutate, payload = ((mutate_model, payloads[2]) if family == "model" else
                                   (mutate_model, payloads[3]) if family == "ranking" else
                                   (mutate_structure, payloads[which]))
                try:
                    data = sim.sign_obj(sim.pack(mutate(rng, payload)))
                except (OverflowError, ValueError, TypeError):
                    totals["by_family"][family]["not encodable"] += 1
                    continue
            totals["inputs"] += 1
            started = time.perf_counter()
            outcome = _load_and_release(sim, data)
            elapsed = time.perf_counter() - started
            totals["max_seconds"] = max(totals["max_seconds"], elapsed)
            totals["by_family"][family][outcome] += 1
            if outcome.startswith("UNTYPED") or outcome.startswith("RELEASE FAILED") or elapsed > max_seconds:
                totals["failures"].append({"input": i, "family": family, "outcome": outcome,
                                           "seconds": elapsed, "hex": data.hex()[:4000]})
            if i % 50 == 0:
                totals["state_installs"] += 1
                problem = _install_changes_nothing(state, root, data)
                if problem:
                    totals["failures"].append({"input": i, "family": family, "outcome": problem,
                                               "hex": data.hex()[:4000]})
            if progress and i % 1000 == 0:
                progress(i)
    totals["by_family"] = {k: dict(v) for k, v in totals["by_family"].items()}
    return totals


def _load_and_release(sim: Sim, data: bytes) -> str:
    try:
        bundle = sim.load(data)
    except BundleError as exc:
        return type(exc).__name__
    except Exception as exc:  # noqa: BLE001 - the oracle: anything untyped is a finding
        return f"UNTYPED {type(exc).__name__}: {exc}"
    refused = None
    try:
        rows = _rows_to_release(bundle)
    except Exception as exc:  # noqa: BLE001 - decoding an input representative is a release's work too
        return f"RELEASE FAILED {type(exc).__name__}: {exc}"
    for row in rows:
        try:
            released = bundle.representative(bundle.release_index(row))
        except PrivmapDeviceError as exc:  # a valid input row may still be refused (exact, erasures)
            refused = refused or f"loaded, row refused ({type(exc).__name__})"
            continue
        except Exception as exc:  # noqa: BLE001
            return f"RELEASE FAILED {type(exc).__name__}: {exc}"
        problem = _outside_domain(bundle, released)
        if problem:
            return f"RELEASE FAILED {problem}"
    return refused or "loaded"


def _rows_to_release(bundle) -> list:
    rows = [bundle.input_row(c) for c in range(min(len(bundle.inputs), 4))]
    if bundle.model is None:
        return rows
    if bundle.mechanism == "ranking":    # its input rows decode to scores: rate one cell, then every cell
        one = [bundle.features[0].min] + [None] * (len(bundle.features) - 1)
        return [one, [f.min for f in bundle.features], [f.max for f in bundle.features]]
    # a recommender's input row is predicted ratings: rate as a user; then every cell at each end
    rows = [[round(v) if f.integer else v for v, f in zip(row, bundle.features)] for row in rows]
    return rows + [[f.min for f in bundle.features], [f.max for f in bundle.features]]


def _outside_domain(bundle, released) -> str | None:
    """What is wrong with a model kind's released row (None if nothing, or not a model kind): a
    recommender's cells are ratings inside the domain, a ranking bundle's finite scores, each on
    the ``decimals`` grid."""
    if bundle.model is None:
        return None
    places = bundle.model.decimals
    if bundle.mechanism == "ranking":
        bad = next((v for v in released if type(v) is not float or not math.isfinite(v) or v != round(v, places)),
                   None)
        if bad is not None:
            return f"released score {bad!r} not finite or off the {places}-decimal grid"
        return None if len(released) == len(bundle.features) else "released row of the wrong length"
    for v, f in zip(released, bundle.features):
        if type(v) is not float or not f.min <= v <= f.max or v != round(v, places):
            return f"released {v!r} outside [{f.min}, {f.max}] or off the {places}-decimal grid"
    return None if len(released) == len(bundle.features) else "released row of the wrong length"


def _snapshot(root: pathlib.Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _install_changes_nothing(state: DeviceState, root: pathlib.Path, data: bytes) -> str | None:
    before = _snapshot(root)
    try:
        state.install(data)
    except PrivmapDeviceError:
        return None if _snapshot(root) == before else "STATE CHANGED on a refused install"
    except Exception as exc:  # noqa: BLE001
        return f"UNTYPED on install {type(exc).__name__}: {exc}"
    return None  # installed (a valid mutation): later inputs are judged against it


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-seconds", type=float, default=2.0, help="slowest input allowed")
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help=f"comma-separated families drawn in turn (of {', '.join(FAMILIES)})")
    parser.add_argument("--json", action="store_true", help="print the totals as JSON")
    args = parser.parse_args(argv)
    families = tuple(args.families.split(","))
    if not families or not set(families) <= set(FAMILIES):
        parser.error(f"--families takes some of {', '.join(FAMILIES)}")
    started = time.perf_counter()
    totals = run(args.inputs, args.seed, args.max_seconds, families=families,
                 progress=lambda i: print(f"  {i} inputs", file=sys.stderr) if not args.json else None)
    totals["wall_seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(json.dumps(totals, indent=2))
    else:
        print(f"{totals['inputs']} inputs in {totals['wall_seconds']} s "
              f"(slowest {totals['max_seconds']:.3f} s), {totals['state_installs']} through DeviceState.install")
        for family, counts in totals["by_family"].items():
            print(f"  {family}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])))
        print(f"  failures: {len(totals['failures'])}")
        for failure in totals["failures"][:10]:
            print(f"    {failure['family']} #{failure['input']}: {failure['outcome']}")
    return 1 if totals["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
