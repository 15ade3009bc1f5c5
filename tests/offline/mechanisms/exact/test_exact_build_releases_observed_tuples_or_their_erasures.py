"""The exact mechanism's face (:class:`ExactOptions`, :func:`build`): its alphabet is the observed
tuples and their erasures, and it refuses rows or options it does not take."""
import pytest

from privmap.offline import BuildError
from privmap.offline.data import Dataset
from privmap.offline.mechanisms import exact, quantized

NOW = 1_700_000_000


def test_the_inputs_are_the_observed_tuples_and_the_outputs_only_erase(toy_csv):
    dataset = Dataset.from_csv(toy_csv(300, 1), private="secret", categorical=True)
    payload = exact.build(dataset, exact.ExactOptions(delta_fraction=0.5, issued_at=NOW)).payload
    assert (payload["mechanism"], payload["metric"]) == ("exact", "erasures")
    values = [f["values"] for f in payload["features"]]
    decoded = {tuple(v[i] for v, i in zip(values, row)) for row in payload["inputs"]}
    assert decoded == {tuple(row) for row in dataset.public}
    for row, index in zip(payload["inputs"], payload["table"]["index"]):
        for j in index:   # an output keeps a cell of its input or erases it (None)
            assert all(o is None or o == i for o, i in zip(payload["outputs"][j], row))


def test_numeric_rows_and_other_options_are_refused(toy_csv, ratings_csv):
    with pytest.raises(BuildError, match="categorical"):
        exact.build(Dataset.from_csv(ratings_csv, private="gender"), exact.ExactOptions(delta=1.0))
    categorical = Dataset.from_csv(toy_csv(300, 1), private="secret", categorical=True)
    with pytest.raises(BuildError, match="ExactOptions"):
        exact.build(categorical, quantized.QuantizedOptions(clusters=4, delta=1.0))
