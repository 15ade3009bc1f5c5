"""Row validation, nearest-representative lookup (pure Python and numpy fast path), release."""
from __future__ import annotations

import math
import random

import pytest
from harness import EnumeratingBits, exact_payload, with_leakage

from privmap.device import Limits
from privmap.device.constants import MAX_ABS_CELL
from privmap.device.errors import BundleFormatError, InputError
from privmap.device.kinds import (
    table as bundle_module,
)
from privmap.device.kinds._lookup import MODE_EQUAL, MODE_L1, MODE_L2, nearest_numpy, nearest_pure
from privmap.device.randomness import InsecureTestBits


def _quantized(sim, inputs, metric="l2", features=None, outputs=None):
    payload = sim.payload()
    if features is not None:
        payload["features"] = features
    payload["metric"] = metric
    payload["inputs"] = inputs
    payload["outputs"] = outputs if outputs is not None else inputs
    k = len(inputs)
    payload["table"] = {"bits": 1, "index": [[c] for c in range(k)], "weight": [[2]] * k}
    payload["prior"] = [[1.0 / (2 * k)] * k, [1.0 / (2 * k)] * k]
    with_leakage(payload)
    return sim.load(sim.sign_obj(payload))


# -- nearest rule ------------------------------------------------------------------------------

def test_nearest_by_hand_for_each_metric(sim):
    inputs = [[1, 0.0, 0.0], [1, 0.0, 10.0], [5, 1.0, 0.0]]
    l2 = _quantized(sim, inputs, "l2")
    l1 = _quantized(sim, inputs, "l1")
    hamming = _quantized(sim, inputs, "hamming")
    row = [3, 0.5, 4.0]
    # l2: 4+.25+16 = 20.25 | 4+.25+36 = 40.25 | 4+.25+16 = 20.25 -> tie, lowest index 0
    assert l2.lookup(row) == 0
    # l1: 2+.5+4 = 6.5 | 2+.5+6 = 8.5 | 2+.5+4 = 6.5 -> tie -> 0
    assert l1.lookup(row) == 0
    assert l1.lookup([4, 0.9, 1.0]) == 2
    assert l2.lookup([1, 0.0, 6.0]) == 1
    # hamming counts unequal cells: [5, 0.0, 10.0] differs from 0 in 2, from 1 in 1, from 2 in 2
    assert hamming.lookup([5, 0.0, 10.0]) == 1
    assert hamming.lookup([2, 0.3, 3.0]) == 0  # all differ everywhere: tie -> lowest index


def test_ties_go_to_the_lowest_index(sim):
    inputs = [[2, 0.5, 0.0], [4, 0.5, 0.0], [2, 0.5, 0.0]]
    bundle = _quantized(sim, inputs)
    assert bundle.lookup([3, 0.5, 0.0]) == 0
    assert bundle.lookup([2, 0.5, 0.0]) == 0  # exact duplicate at 0 and 2
    assert _quantized(sim, inputs[::-1]).lookup([3, 0.5, 0.0]) == 0


def _random_case(rng, k, d, ties):
    grid = [0.0, 0.5, 1.0, 2.0, -1.5] if ties else None
    value = (lambda: rng.choice(grid)) if ties else (lambda: rng.uniform(-1e3, 1e3))
    reps = [tuple(value() for _ in range(d)) for _ in range(k)]
    if ties:  # exact duplicates among representatives
        for _ in range(k // 4):
            reps[rng.randrange(k)] = reps[rng.randrange(k)]
    modes = tuple(rng.choice((MODE_L2, MODE_L1, MODE_EQUAL)) for _ in range(d))
    x = tuple(value() for _ in range(d))
    return reps, modes, x


def test_numpy_fast_path_equals_pure_path_on_random_data_with_ties():
    np = pytest.importorskip("numpy")
    rng = random.Random(5)
    for trial in range(400):
        ties = trial % 2 == 0
        reps, modes, x = _random_case(rng, rng.randint(1, 60), rng.randint(1, 9), ties)
        array = np.array(reps, dtype=np.float64)
        assert nearest_numpy(array, modes, x) == nearest_pure(reps, modes, x)
    # Near-ties that only float rounding order decides.
    reps = [(0.1, 0.2, 0.3), (0.3, 0.2, 0.1), (0.1 + 0.2, 0.0, 0.3), (0.2, 0.2, 0.2)]
    for modes in ((MODE_L2,) * 3, (MODE_L1,) * 3):
        for x in ((0.0, 0.0, 0.0), (0.2, 0.2, 0.2), (1e-17, 0.3, 0.1)):
            assert nearest_numpy(np.array(reps), modes, x) == nearest_pure(reps, modes, x)


def test_bundle_uses_the_fast_path_for_large_lookups_with_the_same_answers(sim, monkeypatch):
    pytest.importorskip("numpy")
    rng = random.Random(6)
    inputs = [[rng.randint(1, 5), rng.choice([0.0, 0.25, 0.5, 1.0]), float(rng.randint(0, 24))]
              for _ in range(300)]
    bundle = _quantized(sim, inputs)
    monkeypatch.setattr(bundle_module, "FAST_PATH_MIN_WORK", 1)
    rows = [[rng.randint(1, 5), rng.choice([0.0, 0.3, 0.5, 1.0]), rng.randint(0, 24)] for _ in range(200)]
    fast = [bundle.lookup(r) for r in rows]
    assert bundle._array is not None and bundle._array is not False
    reps = bundle._canonical_inputs
    from privmap.device.kinds import parse_row
    pure = [nearest_pure(reps, bundle._modes, parse_row(r, bundle.features)) for r in rows]
    assert fast == pure


def test_device_lookup_agrees_with_the_offline_nearest_rule(sim):
    np = pytest.importorskip("numpy")
    try:
        from privmap.offline.data._distortion import nearest
    except ImportError:
        pytest.skip("offline nearest rule not available")
    rng = random.Random(8)
    inputs = [[rng.randint(1, 5), rng.choice([0.0, 0.5, 1.0]), float(rng.randint(0, 3))] for _ in range(40)]
    rows = [[rng.randint(1, 5), rng.choice([0.0, 0.5, 1.0]), float(rng.randint(0, 3))] for _ in range(200)]
    for metric in ("l2", "l1", "hamming"):
        bundle = _quantized(sim, inputs, metric)
        expected = nearest(np.array(rows, float), np.array(inputs, float), metric)
        assert [bundle.lookup(r) for r in rows] == list(expected), metric


# -- row validation ----------------------------------------------------------------------------

SECRET = 4.123456789


@pytest.mark.parametrize("row", [
    [3, 0.5],                      # too short
    [3, 0.5, 12.0, 1],             # too long
    [],
    "3,0.5,12",
    b"\x03",
    {0: 3, 1: 0.5, 2: 12.0},
    {3, 0.5, 12.0},
    None,
    42,
    [True, 0.5, 12.0],             # bool is not a number
    [3, float("nan"), 12.0],
    [3, 0.5, float("inf")],
    [3, "nan", 12.0],
    [3, "inf", 12.0],
    [3, "0x1", 12.0],
    [3, "1_0", 12.0],
    [3, "", 12.0],
    [3, "1e999", 12.0],
    [3.5, 0.5, 12.0],              # integer feature, not whole
    ["3.5", 0.5, 12.0],
    [0, 0.5, 12.0],                # below min
    [6, 0.5, 12.0],                # above max
    [3, 1.0000001, 12.0],
    [3, 0.5, -0.1],
    [3, [0.5], 12.0],
    [3, None, 12.0],
    [3, 0.5, SECRET * 10],
])
def test_bad_rows_raise_input_error_and_release_nothing(sim, row):
    bundle = sim.load(sim.bundle())
    source = EnumeratingBits()
    released = []
    with pytest.raises(InputError) as info:
        released.append(bundle.sanitize(row, rng=InsecureTestBits(source, test_mode=True)))
    assert released == [] and source.calls == 0
    # No chained exception that could carry the raw value is shown.
    assert info.value.__cause__ is None
    assert info.value.__context__ is None or info.value.__suppress_context__
    assert str(SECRET)[:6] not in str(info.value) and "41.23" not in str(info.value)


def test_accepted_cell_forms(sim):
    bundle = sim.load(sim.bundle())
    forms = [[3, 0.5, 12.0], ["3", "0.5", "12"], [3.0, 0.5, 12], ("+3", ".5", "1.2e1"),
             [" 3 ", "5e-1", "12.0"], iter([3, 0.5, 12.0])]
    assert {bundle.lookup(row) for row in forms} == {1}
    np = pytest.importorskip("numpy")
    assert bundle.lookup(np.array([3.0, 0.5, 12.0])) == 1
    assert bundle.lookup([np.int64(3), np.float32(0.5), np.float64(12.0)]) == 1
    with pytest.raises(InputError):
        bundle.lookup([np.bool_(True), 0.5, 12.0])


def test_infinite_iterable_row_is_refused(sim):
    import itertools
    bundle = sim.load(sim.bundle())
    with pytest.raises(InputError):
        bundle.lookup(itertools.repeat(3))


def test_categorical_cells_are_category_strings(sim):
    bundle = sim.load(sim.sign_obj(exact_payload()))
    assert bundle.lookup(["M", "phd"]) == 3
    for row in (["M", 2], [1, "phd"], ["m", "phd"], ["M", "PhD"], ["M", None], ["M", "phd", "x"]):
        with pytest.raises(InputError):
            bundle.lookup(row)


# -- exact mechanism and release ---------------------------------------------------------------

def test_exact_mechanism_unknown_tuple_releases_nothing(sim):
    bundle = sim.load(sim.sign_obj(exact_payload()))
    source = EnumeratingBits()
    with pytest.raises(InputError):
        bundle.sanitize(["F", "phd"], rng=InsecureTestBits(source, test_mode=True))
    assert source.calls == 0


def test_exact_mechanism_with_erasures_enumerated(sim):
    bundle = sim.load(sim.sign_obj(exact_payload()))
    rng = InsecureTestBits(EnumeratingBits(), test_mode=True)
    released = [bundle.sanitize(["F", "hs"], rng=rng) for _ in range(8)]
    assert released == [["F", "hs"]] * 4 + [[None, None]] * 2 + [["F", None]] * 2


def test_exact_mechanism_with_numeric_features(sim):
    payload = sim.payload()
    payload["mechanism"] = "exact"
    bundle = sim.load(sim.sign_obj(payload))
    assert bundle.lookup(["3", "0.5", "12"]) == 1
    with pytest.raises(InputError):
        bundle.lookup([3, 0.5, 12.5])


def test_released_cells_have_the_documented_types(sim):
    bundle = sim.load(sim.bundle())
    rng = InsecureTestBits(EnumeratingBits(), test_mode=True)
    for _ in range(16):
        cells = bundle.sanitize([5, 1.0, 24.0], rng=rng)
        assert cells == [5, 1.0, 24.0]
        assert type(cells[0]) is int and type(cells[1]) is float and type(cells[2]) is float
    assert bundle.representative(0) == [1, 0.25, 2.0]
    with pytest.raises(IndexError):
        bundle.representative(4)
    assert bundle.input_row(1) == [3, 0.5, 12.0]


def test_release_is_always_a_representative(sim):
    bundle = sim.load(sim.bundle())
    rng = random.Random(9)
    outputs = [bundle.representative(j) for j in range(len(bundle.outputs))]
    for _ in range(300):
        row = [rng.randint(1, 5), rng.random(), rng.uniform(0, 24)]
        released = bundle.sanitize(row)
        assert released in outputs
        assert bundle.release_index(row) in bundle.index[bundle.lookup(row)]


def _line(lo, hi):
    return [{"name": "v", "kind": "numeric", "min": lo, "max": hi, "integer": False, "missing": "refuse",
             "fill": None, "missing_token": ""}]


@pytest.mark.parametrize("lo, hi", [(-1e308, 1e308), (-1e101, 0.0), (0.0, 1e101)])
def test_a_domain_beyond_the_largest_cell_magnitude_is_refused_so_no_distance_overflows(sim, lo, hi):
    with pytest.raises(BundleFormatError, match="min and max"):
        _quantized(sim, [[lo], [hi]], "l2", features=_line(lo, hi))


def test_distances_at_the_largest_cell_magnitude_are_finite_and_exact(sim):
    edge = MAX_ABS_CELL
    bundle = _quantized(sim, [[-edge], [edge], [0.0]], "l2", features=_line(-edge, edge))
    assert bundle.lookup([edge]) == 1 and bundle.lookup([-edge]) == 0
    assert bundle.lookup([edge / 10]) == 2 and bundle.lookup([edge * 0.6]) == 1
    assert math.isfinite(sum((2 * edge) ** 2 for _ in range(Limits().max_features)))  # the widest row
