"""privmap offline builder: learn a privacy-preserving mapping and write a signed bundle.

The operator's side of privmap (numpy, scipy, cvxpy, scikit-learn, click). The
pieces, in the order a build runs them:

- :meth:`Dataset.from_csv` (:func:`load_dataset`) and :meth:`Dataset.from_frame` read and
  validate labelled rows (blank cells are missing answers); :func:`declare` /
  :func:`read_schema_file` state the public columns' domains;
- :func:`quantize` clusters public data into domain-valid representatives;
- :func:`joint_prior` estimates p(a, c);
- :func:`perfect_privacy_distortion` gives the least distortion with zero leakage;
- :func:`solve` solves program (19), min I(A; C^) s.t. E d(C, C^) <= Delta;
- :func:`compress` rounds the table to integer rows summing to 2^B;
- each mechanism's ``build(dataset, options)`` (``mechanisms.quantized``, ``mechanisms.exact``,
  ``mechanisms.recommender``; options :class:`QuantizedOptions`, :class:`ExactOptions`,
  :class:`RecommenderOptions`, with the named guarantees :class:`CrossFitting`,
  :class:`RobustCertificate`, :class:`OutputLimit`, :class:`Auto`) runs them all into a
  :class:`Result` holding the payload; the CLI (``privmap``) and :mod:`.api` sign and write it.

The sub-packages are the stages of a build, each importing only from itself and the stages before
it (``tests/test_architecture.py``): ``data`` < ``solvers`` < ``bundle`` < ``measures`` <
``commandline`` < ``mechanisms`` (one sub-package per mechanism) < ``evaluation`` < ``api`` (the
notebook API: build, evaluate, curve and sanitize on a DataFrame or a path) < ``cli``; the ``_*``
modules here sit below every stage.

The notebook API is this package's face too: ``from privmap.offline import build_quantized,
evaluate`` gives :mod:`.api`'s functions (one build per mechanism: :func:`build_quantized`,
:func:`build_exact`, :func:`build_recommender`, :func:`build_ranking`, :func:`build_funnel`, :func:`build_max_correlation`,
:func:`build_gaussian`, :func:`build_nullspace`; :func:`evaluate`, :func:`curve`, :func:`sanitize`)
and result classes (:class:`BuildResult`, :class:`Evaluation`, :class:`Curve`, :class:`Released`).
They are imported on first use (a module ``__getattr__``, PEP 562), so ``import privmap.offline``
and the CLI's start-up do not load the evaluation stage.

Every error raised on purpose is a :class:`BuildError`.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._errors import BuildError, DatasetError, InfeasibleError, SolverError, TargetNotMetError
from ._information import expected_distortion, leakage_bits, mutual_information_bits
from .data import Dataset, Quantization, declare, joint_prior, load_dataset, nearest, pairwise, quantize, read_schema_file
from .mechanisms import (
    Auto,
    CrossFitting,
    ExactOptions,
    OutputLimit,
    QuantizedOptions,
    RecommenderOptions,
    Result,
    RobustCertificate,
)
from .solvers import CompressedTable, SolveResult, compress, perfect_privacy_distortion, solve

if TYPE_CHECKING:
    from .api import (
        BuildResult,
        Curve,
        Evaluation,
        Released,
        build_exact,
        build_funnel,
        build_gaussian,
        build_max_correlation,
        build_nullspace,
        build_quantized,
        build_ranking,
        build_recommender,
        curve,
        evaluate,
        sanitize,
    )

#: The notebook API's names, served from :mod:`.api` on first use (:func:`__getattr__`).
API = ("build_quantized", "build_exact", "build_recommender", "build_ranking", "build_funnel", "build_max_correlation",
       "build_gaussian", "build_nullspace", "evaluate", "curve", "sanitize",
       "BuildResult", "Evaluation", "Curve", "Released")

__all__ = [
    "solve", "SolveResult", "Result", "QuantizedOptions", "ExactOptions", "RecommenderOptions",
    "CrossFitting", "RobustCertificate", "OutputLimit", "Auto",
    "load_dataset", "Dataset", "declare", "read_schema_file",
    "quantize", "Quantization", "joint_prior", "pairwise", "nearest",
    "perfect_privacy_distortion", "compress", "CompressedTable",
    "leakage_bits", "mutual_information_bits", "expected_distortion",
    "BuildError", "DatasetError", "SolverError", "InfeasibleError", "TargetNotMetError",
    "build_quantized", "build_exact", "build_recommender", "build_ranking", "build_funnel", "build_max_correlation",
    "build_gaussian", "build_nullspace", "evaluate", "curve", "sanitize",
    "BuildResult", "Evaluation", "Curve", "Released",
]


def __getattr__(name: str) -> Any:
    """The notebook API's names (:data:`API`), imported from :mod:`.api` when first asked for."""
    if name in API:
        value = getattr(importlib.import_module(".api", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(API))
