"""The quantization does not depend on the BLAS kernel the CPU selects (reproducible builds).

OpenBLAS picks its kernels by CPU; ``OPENBLAS_CORETYPE`` forces one, which stands in for another
machine. Lloyd's k-means (scikit-learn's default) computes distances by matrix products, whose
last bits depend on the kernel, and on integer ratings near-ties are common: the SSI-2012 grouping
at K = 64 came out different under the Prescott kernel. Elkan's algorithm computes each
point-center distance directly and gives the same grouping under every kernel tried.
"""
import os
import pathlib
import platform
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = """
import csv, hashlib, numpy as np
from privmap.offline.data._quantize import quantize
rows = list(csv.reader(open({path!r})))
private = rows[0].index("gender")
X = np.array([[float(v) for j, v in enumerate(r) if j != private] for r in rows[1:]])
q = quantize(X, 64, seed=0)
print(hashlib.sha256(q.labels.tobytes() + q.centers.tobytes()).hexdigest())
"""


def _openblas() -> bool:
    import numpy  # noqa: F401
    from threadpoolctl import threadpool_info
    return any(i.get("internal_api") == "openblas" for i in threadpool_info())


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64") or not _openblas(),
                    reason="OPENBLAS_CORETYPE kernels exist for x86-64 OpenBLAS only")
def test_quantization_is_the_same_under_another_blas_kernel():
    script = SCRIPT.format(path=str(ROOT / "data" / "ssi2012" / "tastes_gender.csv"))
    digests = []
    for kernel in (None, "Prescott"):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        if kernel:
            env["OPENBLAS_CORETYPE"] = kernel
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                              check=True, timeout=600)
        digests.append(done.stdout.strip())
    assert digests[0] == digests[1]
