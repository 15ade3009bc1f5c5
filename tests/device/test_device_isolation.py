"""The device runtime runs with msgpack and cryptography alone."""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

from harness import NOW, raw_public, with_leakage
from isolation import release_in_isolation

import privmap.device as device
from privmap.device.kinds.table import FAST_PATH_MIN_WORK

DEVICE_DIR = pathlib.Path(device.__file__).resolve().parent
ALLOWED_TOP_LEVEL = {"msgpack", "cryptography", "__future__"} | set(sys.stdlib_module_names)


def test_device_loads_and_sanitizes_without_the_offline_stack(sim, tmp_path):
    small = tmp_path / "small.bin"
    small.write_bytes(sim.bundle())
    # Large enough (K_in * d >= FAST_PATH_MIN_WORK) that the numpy fast path would be tried.
    k = FAST_PATH_MIN_WORK // 3 + 1
    payload = sim.payload()
    payload["inputs"] = [[1 + c % 5, (c % 11) / 10, float(c % 25)] for c in range(k)]
    payload["inputs"][-1] = [5, 0.95, 23.5]
    payload["table"] = {"bits": 1, "index": [[c % 4] for c in range(k)], "weight": [[2]] * k}
    payload["prior"] = [[0.5 / k] * k, [0.5 / k] * k]
    with_leakage(payload)
    large = tmp_path / "large.bin"
    large.write_bytes(sim.sign_obj(payload))
    out = release_in_isolation([small, large], [-1, -1], key_hex=raw_public(sim.key).hex(), now=NOW)
    assert out["numpy_importable"] is False
    assert out["loaded_forbidden"] == []
    small_out, large_out = out["bundles"]
    assert small_out["lookup"] == 2 and small_out["released"] == [5, 1.0, 24.0]
    assert large_out["lookup"] == k - 1
    assert large_out["index"] == (k - 1) % 4


def test_fresh_import_pulls_in_no_scientific_module():
    code = ("import sys, privmap.device as d; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'numpy','scipy','cvxpy','sklearn','click'} or m.startswith('privmap.offline')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_imports_in_device_sources_are_msgpack_cryptography_stdlib_or_guarded_fast_path():
    for source in sorted(DEVICE_DIR.rglob("*.py")):
        text = source.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        function_nodes = {id(n) for f in ast.walk(tree)
                          if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                          for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative import inside privmap.device
                    continue
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top != "random", f"{source.name}: the random module is not for the device"
                if top in ALLOWED_TOP_LEVEL:
                    continue
                where = f"{source.name}:{node.lineno}: import {name}"
                assert top == "numpy", where
                assert id(node) in function_nodes, where + " must be inside a function"
                assert "# fast path" in lines[node.lineno - 1], where + " needs the '# fast path' comment"
                assert not name.startswith("privmap.offline"), where
