"""Every command block of README.md runs as written, so a command the README shows cannot break.

The ``sh`` blocks are run in order, each with ``bash -euo pipefail``, in one scratch directory
that holds a link to the bundled ``data/`` (later blocks use the keys and bundles of earlier
ones), with the installed ``privmap`` first on PATH. The first block (``scripts/demo.sh`` and the
line that sets up the environment and runs this suite) is not run here -- pytest cannot run
itself -- but its parts are checked: the script parses, and every ``privmap`` command it calls
exists. ``text`` blocks are synopses with placeholders and are not run.
"""
import os
import pathlib
import re
import subprocess
import sys

import pytest

from privmap.offline.cli import main as cli

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"^```sh\n(.*?)^```$", README, flags=re.S | re.M)
@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The scratch directory the blocks run in, with ``data`` linked to the bundled data."""
    where = tmp_path_factory.mktemp("readme")
    (where / "data").symlink_to(ROOT / "data", target_is_directory=True)
    return where


def test_readme_has_the_setup_block_first_and_runnable_blocks_after():
    assert "bash scripts/demo.sh" in BLOCKS[0]
    assert len(BLOCKS) >= 8


def test_first_block_installs_with_the_constraints_and_runs_the_suite():
    setup = [line for line in BLOCKS[0].splitlines() if "pip install" in line]
    assert setup and all("-c constraints.txt" in line for line in setup)
    assert "-m pytest" in BLOCKS[0]
    assert "-c constraints.txt" in (ROOT / "scripts" / "demo.sh").read_text()
    assert "-c constraints.txt" in (ROOT / ".ci" / "run").read_text()


def test_ci_runs_exactly_the_readme_setup_and_test_command():
    """The first block's second line (set up, ruff, mypy, the suite) is what .ci/run runs, word for word."""
    command = BLOCKS[0].splitlines()[1]
    assert command.startswith("python3 -m venv .venv && ")
    assert all(gate in command for gate in (".venv/bin/ruff check", ".venv/bin/mypy", ".venv/bin/python -m pytest"))
    assert command in (ROOT / ".ci" / "run").read_text().splitlines()


def test_demo_script_parses_and_calls_existing_commands():
    script = (ROOT / "scripts" / "demo.sh").read_text()
    subprocess.run(["bash", "-n", str(ROOT / "scripts" / "demo.sh")], check=True)
    commands = set(re.findall(r"\$privmap (\w+)", script))
    assert {"keygen", "build", "verify", "sanitize"} <= commands
    for command in sorted(commands):
        with pytest.raises(SystemExit) as done:
            cli([command, "--help"], standalone_mode=True)
        assert done.value.code == 0, command


@pytest.mark.parametrize("index, block", [pytest.param(i, b, id=f"block{i}") for i, b in enumerate(BLOCKS) if i > 0])
def test_readme_block_runs(index, block, scratch):
    env = dict(os.environ, PATH=f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=scratch, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"README block {index} failed:\n{block}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


PYTHON_BLOCKS = re.findall(r"^```python\n(.*?)^```$", README, flags=re.S | re.M)


def test_readme_shows_a_build_an_evaluation_and_a_sanitize_from_a_dataframe():
    notebook = "\n".join(PYTHON_BLOCKS)
    assert "pd.read_csv" in notebook
    assert all(f"api.{call}(" in notebook for call in ("build_quantized", "build_recommender", "evaluate", "sanitize",
                                                       "curve"))
    assert "auto=Auto(target_auc=" in notebook


@pytest.mark.parametrize("index, block", [pytest.param(i, b, id=f"python{i}") for i, b in enumerate(PYTHON_BLOCKS)])
def test_readme_python_block_runs(index, block, scratch):
    """Each ``python`` block runs as written in the scratch directory of the ``sh`` blocks (their keys and
    ``out/``; made here when this test runs alone), with the bundled ``tables/`` linked too."""
    if not (scratch / "tables").exists():
        (scratch / "tables").symlink_to(ROOT / "tables", target_is_directory=True)
    if not (scratch / "keys" / "private.pem").exists():
        cli(["keygen", str(scratch / "keys")], standalone_mode=False)
    (scratch / "out").mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, "-c", block], cwd=scratch, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"README python block {index} failed:\n{block}\n{done.stderr[-3000:]}"
