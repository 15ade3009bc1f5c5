"""BuildOptions with a per-output leakage limit: what it refuses."""
import pytest
from privmap.offline._errors import BuildError
from privmap.offline.mechanisms.quantized._pipeline import BuildOptions


@pytest.mark.parametrize("limit", [0.0, -1.0, float("inf"), float("nan")])
def test_a_limit_must_be_a_positive_finite_number_of_bits(limit):
    with pytest.raises(BuildError, match="max output leakage must be a finite number of bits > 0"):
        BuildOptions(private="a", clusters=4, delta_fraction=0.5, codebook=False, max_output_leakage_bits=limit)


def test_a_limit_needs_the_codebook_step_off_on_the_quantized_mechanism():
    with pytest.raises(BuildError, match="needs the codebook step off"):
        BuildOptions(private="a", clusters=4, delta_fraction=0.5, max_output_leakage_bits=0.5)
    BuildOptions(private="a", clusters=4, delta_fraction=0.5, codebook=False, max_output_leakage_bits=0.5)
    BuildOptions(private="a", mechanism="exact", metric="erasures", delta_fraction=0.5, max_output_leakage_bits=0.5)
