"""The notebook API: build, evaluate, curve and sanitize on a DataFrame or a CSV path.

Build (one function per mechanism: :func:`build_quantized`, :func:`build_exact`,
:func:`build_recommender`, :func:`build_ranking`, :func:`build_funnel`, :func:`build_max_correlation`, :func:`build_gaussian`,
:func:`build_nullspace`), evaluate, curve and sanitize on a pandas DataFrame (or a NumPy array with
column names) as well as on a CSV path, each returning a result object with the figures the
matching ``privmap`` command prints. ``privmap.offline`` re-exports all of it.

Example::

    import pandas as pd
    from privmap.offline import api

    ratings = pd.read_csv("data/ssi2012/tastes_gender.csv")
    built = api.build_quantized(ratings, private="gender", clusters=8, delta_fraction=0.5, domains=["0:3"],
                                key="keys/private.pem", out="ssi.bundle")
    print(built)                                   # leakage, distortion, new-user leakage
    report = api.evaluate("ssi.bundle", ratings, private="gender")
    released = api.sanitize("ssi.bundle", ratings.head(5), trusted="keys/public.pem").to_frame()
    unsigned = api.evaluate(built.result, ratings, private="gender")   # a build's result in memory

The stage above evaluation in the order tests/test_architecture.py checks (it runs the
mechanisms, bundle and evaluation stages; the CLI does not depend on it).
"""
from ._calls import (
    BuildResult,
    Curve,
    Evaluation,
    Released,
    build_exact,
    build_quantized,
    curve,
    evaluate,
    sanitize,
)
from ._mechanisms import (
    build_funnel,
    build_gaussian,
    build_max_correlation,
    build_nullspace,
    build_ranking,
    build_recommender,
)

__all__ = ["build_quantized", "build_exact", "build_recommender", "build_ranking", "build_funnel", "build_max_correlation",
           "build_gaussian", "build_nullspace", "evaluate", "curve", "sanitize", "BuildResult", "Evaluation", "Curve",
           "Released"]
