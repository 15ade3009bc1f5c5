"""Shared fixtures: paths to the bundled data."""
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def ratings_csv() -> pathlib.Path:
    """The bundled SSI-2012 taste ratings (0-3) with the private column ``gender``."""
    return ROOT / "data" / "ssi2012" / "tastes_gender.csv"


@pytest.fixture(scope="session")
def music_csv() -> pathlib.Path:
    """The bundled GSS 1993 music module: 18 ratings 1-5 with blank cells, ``sex`` 1/2, age, educ."""
    return ROOT / "data" / "gss1993_music" / "music.csv"

