"""Run the device runtime in a subprocess where numpy, scipy and privmap.offline cannot be imported.

One runner for every test that checks the device's isolation (DESIGN: the device installs and
runs with msgpack and cryptography alone): ``release_in_isolation`` verifies and loads each bundle
file there, looks up and sanitizes one row per bundle, and reports what was imported.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

#: Modules the device must never need.
FORBIDDEN = ("numpy", "scipy", "cvxpy", "sklearn", "click", "pandas", "matplotlib", "privmap.offline")

_SCRIPT = textwrap.dedent("""
    import json, sys

    FORBIDDEN = {forbidden!r}

    class Block:
        def find_spec(self, name, path=None, target=None):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                raise ImportError("blocked in the device isolation test: " + name)
            return None

    sys.meta_path.insert(0, Block())
    for name in list(sys.modules):
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
            del sys.modules[name]

    import privmap.device as device
    args = json.loads(sys.argv[1])
    keyring = device.Keyring([bytes.fromhex(args["key"])])
    out = {{"bundles": []}}
    for path, row in zip(args["bundles"], args["rows"]):
        bundle = device.read_bundle_file(path, keyring, now=args["now"])
        if isinstance(row, int):                 # an input representative, by index (-1 = the last)
            row = bundle.input_row(row % len(bundle.inputs))
        result = {{"mechanism": bundle.mechanism, "released": bundle.sanitize(row),
                   "metrics": dict(bundle.metrics)}}
        if hasattr(bundle, "lookup"):
            result["lookup"] = bundle.lookup(row)
            result["index"] = bundle.release_index(row)
        out["bundles"].append(result)
    try:
        import numpy
        out["numpy_importable"] = True
    except ImportError:
        out["numpy_importable"] = False
    out["loaded_forbidden"] = sorted(m for m in sys.modules
                                     if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))
    print(json.dumps(out))
""")


def release_in_isolation(bundles, rows, *, key_hex: str, now: int) -> dict:
    """Load each bundle file in ``bundles`` with the one trusted raw key ``key_hex`` at time ``now``
    and release one row of each, in a subprocess that cannot import :data:`FORBIDDEN`.

    ``rows`` gives, per bundle, the cells to release or an int: the index of an input
    representative (``-1`` = the last). Returns ``{"bundles": [{"mechanism", "released",
    "metrics", and for table bundles "lookup", "index"}, ...], "numpy_importable": bool,
    "loaded_forbidden": [...]}``. Raises ``AssertionError`` if the subprocess fails.
    """
    args = {"key": key_hex, "now": now, "bundles": [str(b) for b in bundles], "rows": list(rows)}
    result = subprocess.run([sys.executable, "-c", _SCRIPT.format(forbidden=FORBIDDEN), json.dumps(args)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)
