"""QuantizedOptions with a per-output leakage limit: what it refuses."""
import pytest

from privmap.offline._errors import BuildError
from privmap.offline.mechanisms.exact import ExactOptions
from privmap.offline.mechanisms.quantized import OutputLimit, QuantizedOptions


@pytest.mark.parametrize("limit", [0.0, -1.0, float("inf"), float("nan")])
def test_a_limit_must_be_a_positive_finite_number_of_bits(limit):
    with pytest.raises(BuildError, match="max output leakage must be a finite number of bits > 0"):
        QuantizedOptions(clusters=4, delta_fraction=0.5, codebook=False, output_limit=OutputLimit(bits=limit))


def test_a_limit_needs_the_codebook_step_off_on_the_quantized_mechanism():
    with pytest.raises(BuildError, match="needs the codebook step off"):
        QuantizedOptions(clusters=4, delta_fraction=0.5, output_limit=OutputLimit(bits=0.5))
    QuantizedOptions(clusters=4, delta_fraction=0.5, codebook=False, output_limit=OutputLimit(bits=0.5))
    ExactOptions(delta_fraction=0.5, output_limit=OutputLimit(bits=0.5))
