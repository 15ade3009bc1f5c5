"""A build the device would refuse for its width stops at the header, in seconds, not after
clustering and writing the bundle."""
from __future__ import annotations

import time


def test_a_build_from_a_csv_wider_than_a_device_takes_is_refused_from_its_header(keys, tmp_path, run):
    columns = 50_000
    wide = tmp_path / "wide.csv"
    with wide.open("w") as f:
        f.write(",".join(f"c{i}" for i in range(columns)) + ",p\n")
        for row in range(12):
            f.write(",".join([str(row % 4)] * columns) + f",{row % 2}\n")
    out = tmp_path / "wide.bundle"
    started = time.monotonic()
    result = run("build", wide, "--private", "p", "--clusters", 4, "--delta-fraction", 0.5, "--holdout-folds", 0,
                 "--key", keys / "private.pem", "--out", out, ok=False)
    assert time.monotonic() - started < 30
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.exit_code == 1 and len(errors) == 1                        # progress lines aside
    assert "50,000 public columns; a device takes at most 4,096 features" in errors[0]
    assert not out.exists()
