"""Fixtures for the offline tests: a CLI runner and a signing key pair."""
import pytest
from click.testing import CliRunner
from privmap.offline.cli._main import main


@pytest.fixture(scope="session")
def run():
    """``run(*args, ok=True)``: invoke ``privmap ARGS``; with ok, assert exit status 0."""
    def invoke(*args, ok=True):
        result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
        if ok:
            assert result.exit_code == 0, result.output
        return result
    return invoke


@pytest.fixture(scope="session")
def keys(tmp_path_factory, run):
    """A key directory made by ``privmap keygen``."""
    keydir = tmp_path_factory.mktemp("keys") / "k"
    run("keygen", keydir)
    return keydir
