"""The nullspace options refuse what the build could not honour when they are made: empty or
overlapping target columns and a negative or non-finite budget; they are frozen and keyword-only."""
import dataclasses
import math

import pytest

from privmap.offline import BuildError
from privmap.offline.mechanisms.nullspace import NullspaceOptions


@pytest.mark.parametrize("change, says", [
    ({"desired": ()}, "first group of target columns is empty"),
    ({"confidential": ()}, "second group of target columns is empty"),
    ({"confidential": ("educ",)}, "cannot be in both target groups"),
    ({"epsilon": -1.0}, "epsilon must be a finite number >= 0"),
    ({"epsilon": math.nan}, "epsilon must be a finite number >= 0"),
    ({"bundle_version": 0}, "bundle version must be in"),
])
def test_an_option_the_build_cannot_honour_is_refused_at_construction(change, says):
    with pytest.raises(BuildError, match=says):
        NullspaceOptions(**{"desired": ("educ",), "confidential": ("PID",), "epsilon": 0.5, **change})


def test_the_options_are_frozen_and_keyword_only():
    options = NullspaceOptions(desired=("educ",), confidential=("PID",), epsilon=0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.epsilon = 1.0
    with pytest.raises(TypeError):
        NullspaceOptions(("educ",), ("PID",), 0.5)
