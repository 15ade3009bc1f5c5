"""The exact mechanism's part of ``privmap build exact`` (and of ``privmap build DATA --mechanism
exact``): its options from the command's arguments, and its help.

The command itself is seed 000's (:mod:`privmap.offline.mechanisms._seed000_command`): one body
reads the options either seed-000 mechanism asks for, and builds, signs and reports every seed-000
bundle alike.
"""
from __future__ import annotations

from ..._errors import BuildError
from ._options import ExactOptions

__all__ = ["command_options", "SHORT_HELP", "BRIEF", "DOC", "LEFT_OUT"]

#: ``privmap build --help``'s line on ``privmap build exact``.
SHORT_HELP = "Seed 000's exact mapping of categorical tuples."
#: The head of ``privmap build exact --help`` (``{command}``: the command's name as typed).
BRIEF = (
    "Build an exact bundle (seed 000) from the categorical tuples of DATA.csv: inputs the observed "
    "tuples, outputs their erasures. Example:\n\n"
    "\b\n"
    "  {command} census.csv --private sex --delta 0.5 \\\n"
    "      --key keys/private.pem --out census.bundle")
#: The command's full help (its docstring).
DOC = """Build an exact bundle (seed 000, Algorithm 1) from the categorical tuples of DATA.csv.

\b
Example:
  privmap build exact census.csv --private sex --delta 0.5 \\
      --key keys/private.pem --out census.bundle

Inputs are the observed public tuples and outputs every erasure of them
(cells replaced by '*'), the metric the number of erased cells; the prior is
counted, program (19) solved, the table compressed to integers and the bundle
signed and loaded back with the device runtime before it is written. The same
build as privmap build DATA --mechanism exact.
"""
#: The seed-000 command's options ``privmap build exact`` leaves out, at their defaults: the
#: quantized mechanism's own (its metric, clusters, codebook, prior, search, model modes, domains,
#: missing answers) and the partitioned build's.
LEFT_OUT = ("utility", "factors", "factor_reg", "metric", "clusters", "no_codebook", "class_blind", "prior",
            "target_leakage", "target_auc", "allow_unmet", "domains", "missing_token", "schema_file", "schema_out",
            "missing", "workers", "scheduler", "kmeans", "in_core_limit")


def command_options(*, auto: bool, class_blind, mode, metric, declared, prior, delta, delta_fraction, seed, solver,
                    bits, smoothing, cross_fitting, robust, output_limit, header: dict) -> ExactOptions:
    """The options ``--mechanism exact`` asks for, from the command's arguments (``auto``: whether
    ``auto`` clusters or smoothing were asked for; ``mode``: the ``--utility`` mode's package, or
    None; ``header``: the header options' keywords); the guarantees come built.

    Raises
    ------
    BuildError
        An argument only the quantized mechanism has (``auto``, ``--class-blind``, a model mode,
        a metric other than erasures, declared domains, the posteriors prior), or anything
        :class:`ExactOptions` refuses.
    """
    if auto:
        raise BuildError("'auto' clusters or smoothing apply to the quantized mechanism only")
    if class_blind:
        raise BuildError("--class-blind forms the quantized mechanism's clusters; the exact mechanism has none")
    if mode is not None:
        raise BuildError(mode.REFUSED_MAPPING)
    if (metric or "erasures") != "erasures":
        raise BuildError(f"metric {metric!r} does not fit the exact mechanism; expected erasures")
    if declared is not None and declared.columns:
        raise BuildError("declared domains (--domain, --schema) apply to numeric columns of the quantized "
                         "mechanism, not to the exact mechanism's categories")
    if prior == "posteriors":
        raise BuildError("the posteriors prior applies to the quantized mechanism without smoothing")
    return ExactOptions(delta=delta, delta_fraction=delta_fraction, seed=seed, solver=solver, bits=bits,
                        smoothing=smoothing, cross_fitting=cross_fitting, robust=robust, output_limit=output_limit,
                        **header)
