"""``payload_output_leakage``: declared, computed, unbounded or not computable, and saying which."""
import math

import pytest

from privmap.offline.bundle._inspect import payload_output_leakage


def table_payload(prior, index, weight, bits=2, metrics=None):
    return {"prior": prior, "table": {"bits": bits, "index": index, "weight": weight},
            "inputs": [[0]] * len(index), "outputs": [[0]] * (1 + max(max(i) for i in index)),
            "private": {"name": "s", "classes": ["x", "y"]}, "metrics": metrics or {}}


def test_computed_from_the_integer_table_and_prior():
    # identity on a binary symmetric prior with crossover 0.25: posteriors 0.75 / 0.25 against 0.5
    payload = table_payload([[0.375, 0.125], [0.125, 0.375]], [[0], [1]], [[4], [4]])
    value, note = payload_output_leakage(payload)
    assert value == pytest.approx(math.log2(0.5 / 0.25)) and note.startswith("computed")


def test_an_output_that_rules_a_class_out_is_unbounded_and_named():
    payload = table_payload([[0.5, 0.0], [0.25, 0.25]], [[0], [0, 1]], [[4], [2, 2]])
    value, note = payload_output_leakage(payload)
    assert value is None and note == ("unbounded: output 1 has positive mass and p(a|c^) = 0 for class 'x' "
                                      "(releasing it rules that class out)")


def test_a_declared_figure_is_shown_as_declared():
    payload = table_payload([[0.5, 0.0], [0.25, 0.25]], [[0], [1]], [[4], [4]],
                            metrics={"max_output_leakage_bits": 0.125})
    assert payload_output_leakage(payload) == (0.125, "declared by the build (integer table, training prior)")


def test_a_payload_without_a_prior_is_not_computable():
    payload = table_payload([[1.0]], [[0]], [[4]])
    del payload["prior"]
    value, note = payload_output_leakage(payload)
    assert value is None and note.startswith("not computable")
