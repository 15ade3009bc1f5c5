"""The ``privmap`` group, and ``privmap build``: a group of one command per mechanism.

Each build command is written in its mechanism's folder (:mod:`privmap.offline.mechanisms`) and
mounted here; the other commands live in modules of their own and are added here too (``_keyring``:
keygen, keyring, cosign; ``_verify``: verify, inspect; ``_sanitize``; ``_eval``: evaluate, curve;
``_state``).

``privmap build DATA ...`` (a first argument that names no mechanism) is ``privmap build
quantized DATA ...``, seed 000's build as it always was; ``build-funnel``, ``build-max-correlation``,
``build-gaussian`` and ``build-nullspace`` stay as the names of their mechanisms' commands, and
``build --mechanism NAME`` forms are forwarded to them (``_forward``).

Every failure prints one line ``error: ...`` on stderr and exits non-zero
(1 for bad input or a refused bundle, 2 for usage errors); nothing half-written
is left behind. ``--json`` prints one JSON object on stdout for scripts;
progress goes to stderr. Stdout carries the command's output only: what solvers
and libraries print goes to stderr (:func:`privmap.offline.commandline.reserved_stdout`). A
closed stdout (``privmap ... | head -1``) ends the command quietly with status 141.
"""
from __future__ import annotations

import click

from ..commandline import DefaultCommandGroup
from ..mechanisms import MECHANISMS
from ._forward import PrivmapGroup

#: ``privmap build NAME``: each mechanism's command (:data:`privmap.offline.mechanisms.MECHANISMS`), in
#: the order ``privmap build --help`` lists them.
BUILDS = {name: record.command for name, record in MECHANISMS.items() if record.command is not None}
#: The names the funnel, max-correlation, gaussian and nullspace commands had before ``privmap build NAME``.
ALIASES = {"build-funnel": "funnel", "build-max-correlation": "max-correlation", "build-gaussian": "gaussian",
           "build-nullspace": "nullspace"}


@click.group(cls=PrivmapGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="privmap")
def main():
    """privmap: privacy-preserving mappings against inference attacks.

    An operator learns a mapping offline from users who share both their public
    data (ratings) and a private attribute (gender, party, income), signs it into
    a bundle, and ships it to devices; a device releases sanitized ratings that
    leak at most the bundle's declared I(A; released) bits about the attribute.

    \b
    Typical session:
      privmap keygen keys/
      privmap build data.csv --private gender --clusters 64 --delta-fraction 0.5 \\
          --key keys/private.pem --out tables/demo.bundle
      privmap verify tables/demo.bundle --trusted keys/public.pem
      privmap sanitize tables/demo.bundle --trusted keys/public.pem users.csv released.csv
      privmap evaluate tables/demo.bundle data.csv --private gender
    """  # noqa: D301 - click's no-rewrap marker \b must stay a backspace, which a raw string would not make



@main.group(cls=DefaultCommandGroup, default="quantized",
            short_help="Build a signed bundle; one command per mechanism.")
def build():
    """Build a signed bundle with one of the mechanisms (``privmap build NAME --help``)."""


def _register_commands() -> None:
    from ._keyring import cosign, keygen, keyring
    from ._sanitize import sanitize
    from ._state import state
    from ._verify import inspect, verify
    for name, command in BUILDS.items():
        build.add_command(command, name)
    for alias, name in ALIASES.items():
        main.add_command(BUILDS[name], alias)
    for command in (keygen, verify, inspect, sanitize, keyring, cosign, state):
        main.add_command(command)
    try:
        from ._eval import curve, evaluate
    except ImportError:  # the evaluation suite is not in this build
        return
    main.add_command(evaluate)
    main.add_command(curve)


_register_commands()
