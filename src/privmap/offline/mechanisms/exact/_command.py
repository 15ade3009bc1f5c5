"""``privmap build exact``, and the same build as the quantized command's ``--mechanism exact``.

:data:`command` takes seed 000's exact mechanism from the command line to a signed bundle and its
report; :data:`ALTERNATIVE` is the same build as ``privmap build DATA --mechanism exact``.

The body reads options -> run -> report: :func:`exact_options`, the table engine's
:func:`~privmap.offline.mechanisms.table.run` and :func:`~privmap.offline.mechanisms.table.report`.
Its options are the table engine's (:data:`~privmap.offline.mechanisms.table.TABLE_OPTIONS`)
alone: the alphabet of tuples and their erasures leaves nothing else to choose.
"""
from __future__ import annotations

from ..._errors import BuildError
from ..quantized import Alternative
from ..table import (
    TABLE_OPTIONS,
    TABLE_SECTIONS,
    needs_private,
    private_columns,
    report,
    run,
    table_command,
    table_keywords,
)
from ._build import build
from ._options import ExactOptions

__all__ = ["command", "exact_options", "ALTERNATIVE"]

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


def _exact(data, *, private, public, smoothing, key, passphrase_file, out, as_json, **table):
    private = private_columns(private, public)
    options = exact_options(private=private, smoothing=smoothing, **table)
    ran = run(data, options, build, None, private=private, public=public, key=key, passphrase_file=passphrase_file)
    report(ran, out=out, schema_out=None, as_json=as_json)


def exact_options(*, private, smoothing, **table) -> ExactOptions:
    """The options ``privmap build exact`` asks for.

    ``smoothing`` (a number; ``"auto"`` is the quantized mechanism's search) and the arguments of
    the table options (:func:`~privmap.offline.mechanisms.table.table_keywords`), ``private``
    (parsed) required.

    Raises
    ------
    BuildError
        No private column; a guarantee out of range; ``auto`` smoothing; anything
        :class:`ExactOptions` refuses.
    """
    needs_private(private, ExactOptions.mechanism)
    keywords = table_keywords(**table)
    if smoothing == "auto":
        raise BuildError(AUTO_REFUSED)
    return ExactOptions(smoothing=smoothing, **keywords)


#: Why the exact mechanism refuses ``auto``: the search chooses the quantized mechanism's K.
AUTO_REFUSED = "'auto' clusters or smoothing apply to the quantized mechanism only"


def _from_quantized(*, auto: bool, class_blind, mode, metric, declared, prior, smoothing, table: dict) -> ExactOptions:
    """The options ``--mechanism exact`` asks for, from the quantized command's arguments.

    The arguments are :class:`~privmap.offline.mechanisms.quantized.Alternative`'s: ``auto``,
    whether ``auto`` clusters or smoothing were asked for; ``mode``, the ``--utility`` mode or None;
    ``table``, the table options' keywords), its private column checked already.

    Raises
    ------
    BuildError
        An argument only the quantized mechanism has (``auto``, ``--class-blind``, a model mode,
        a metric other than erasures, declared domains, the posteriors prior), or anything
        :class:`ExactOptions` refuses.
    """
    if auto:
        raise BuildError(AUTO_REFUSED)
    if class_blind:
        raise BuildError("--class-blind forms the quantized mechanism's clusters; the exact mechanism has none")
    if mode is not None:
        raise BuildError(mode.refused_mapping)
    if (metric or "erasures") != "erasures":
        raise BuildError(f"metric {metric!r} does not fit the exact mechanism; expected erasures")
    if declared is not None and declared.columns:
        raise BuildError("declared domains (--domain, --schema) apply to numeric columns of the quantized "
                         "mechanism, not to the exact mechanism's categories")
    if prior == "posteriors":
        raise BuildError("the posteriors prior applies to the quantized mechanism without smoothing")
    return ExactOptions(smoothing=smoothing, **table)


#: ``privmap build exact``: categorical tuples and their erasures, with the table engine's options alone.
command = table_command(ExactOptions.mechanism, _exact, parameters=tuple(TABLE_OPTIONS), options=TABLE_OPTIONS,
                        titled=TABLE_SECTIONS, short_help=SHORT_HELP, brief=BRIEF, doc=DOC)
#: ``privmap build DATA --mechanism exact``: the same build, as the quantized command's alternative.
ALTERNATIVE = Alternative(
    ExactOptions.mechanism,
    "exact: categorical tuples and their erasures (Algorithm 1), also 'privmap build exact'",
    _from_quantized, build)
