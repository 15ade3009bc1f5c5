"""The quantized mechanism's part of ``privmap build DATA`` (and ``privmap build quantized``): its
options from the command's arguments, and its help.

The command itself is seed 000's (:mod:`privmap.offline.mechanisms._seed000_command`): one body
reads the options either seed-000 mechanism asks for (a model mode, ``--utility``, wraps these),
and builds, signs and reports every seed-000 bundle alike.
"""
from __future__ import annotations

from ._options import Auto, QuantizedOptions

__all__ = ["command_options", "SHORT_HELP", "BRIEF", "DOC"]

#: ``privmap build --help``'s line on ``privmap build quantized``.
SHORT_HELP = "Seed 000's mapping on k-means representatives."
#: The head of ``privmap build --help`` (``{command}``: the command's name as typed).
BRIEF = (
    "\b\n"
    "Build a seed-000 bundle from labelled DATA (CSV, or Parquet parts). Example:\n"
    "  {command} ratings.csv --private gender --clusters 64 \\\n"
    "      --delta-fraction 0.5 --key keys/private.pem --out ratings.bundle")
#: The command's full help (its docstring).
DOC = """Build a seed-000 bundle (quantized, or exact) from labelled data DATA.

\b
Example (K = 64 clusters, Delta half the perfect-privacy distortion):
  privmap build ratings.csv --private gender --domain 1:5 --clusters 64 \\
      --delta-fraction 0.5 --key keys/private.pem --out ratings.bundle

Estimates p(a, c), quantizes (K clusters), solves min I(A; C^) s.t.
E d(C, C^) <= Delta, moves each released row to the metric's optimum and
re-solves (codebook step), compresses the table to integers and signs the
bundle. The bundle is loaded back with the device runtime before it is written.
It declares the in-sample leakage I(A; C^) and the cross-fitted one a new user
faces (holdout_leakage_bits, with an interval); --clusters auto picks K by it.

A blank cell in a public column is a missing answer (--missing says how it
is handled). Each public column's domain goes into the bundle and devices
refuse cells outside it: declare it (--domain 1:5, --domain age=18:99,
--schema FILE), or it is inferred from the data and printed on stderr.

DATA is a CSV file, or, for millions of users, a directory or glob of CSV or
Parquet files built out of core on Dask (also a lone CSV with --workers or
--scheduler). Other mechanisms: privmap build funnel, max-correlation,
gaussian, nullspace (privmap build --help lists them).
"""


def command_options(*, metric, clusters, smoothing, prior, modal: bool, no_codebook: bool, max_output_leakage,
                    missing, declared, class_blind, auto: bool, joint_target, target_auc, column_targets,
                    allow_unmet: bool, delta, delta_fraction, seed, solver, bits, cross_fitting, robust, output_limit,
                    header: dict) -> QuantizedOptions:
    """The options the arguments ask of the quantized mechanism (``clusters`` and ``smoothing`` may
    be ``"auto"``; ``auto``: either is; ``modal``: a model mode wraps them, whose mapping defaults
    to the posteriors prior and searches both codebooks; ``header``: the header options'
    keywords); the targets come parsed and the guarantees built. A per-output limit leaves the
    codebook step out. Raises BuildError as :class:`QuantizedOptions` and :class:`Auto` do."""
    return QuantizedOptions(
        metric=metric or "l2", clusters=None if clusters == "auto" else clusters, delta=delta,
        delta_fraction=delta_fraction, seed=seed, solver=solver, bits=bits,
        smoothing=None if smoothing == "auto" else smoothing,
        prior=prior or ("posteriors" if modal else "counts"),
        codebook=not no_codebook and max_output_leakage is None, missing=missing, declared=declared,
        class_blind=bool(class_blind),
        auto=Auto(target_leakage_bits=joint_target, target_auc=target_auc, column_targets=column_targets,
                  class_blind=(False, True) if class_blind is None and modal else (),
                  allow_unmet=allow_unmet) if auto else None,
        cross_fitting=cross_fitting, robust=robust, output_limit=output_limit, **header)
