"""The old ``privmap build --mechanism NAME`` forms of the other seeds' mechanisms, forwarded.

Once one ``build`` command took every mechanism's options; now each mechanism other than seed
000's has its own command. ``privmap build DATA --mechanism funnel ...`` still works: the
arguments go to ``privmap build-funnel DATA ...`` with a one-line note on stderr (after it
succeeds, so that a failure is still one ``error:`` line), and the build is
the same (same options, same bundle bytes). The old command accepted every option for every
mechanism; the forms keep their old meaning:

- an option of the old command that the mechanism ignored (``--holdout-folds`` with the funnel,
  ``--seed`` with gaussian, ...) is dropped, named in the note;
- an option the old command refused for that mechanism (``--delta`` with the funnel, ...) is
  refused here the same way: one ``error:`` line, exit status 1.
"""
from __future__ import annotations

import click

from ..commandline import CommandGroup, Fail

#: Mechanism of ``build --mechanism NAME`` -> the command that builds it now.
FORWARDED = {"funnel": "build-funnel", "max-correlation": "build-max-correlation",
             "gaussian": "build-gaussian", "nullspace": "build-nullspace"}
#: Options the old ``build`` refused with each forwarded mechanism (exit status 1).
REFUSED = {
    "funnel": {"--delta", "--delta-fraction", "--prior-only", "--missing-token"},
    "max-correlation": {"--delta-fraction", "--disclosure", "--disclosure-fraction", "--missing-token"},
    "gaussian": {"--prior-only", "--disclosure", "--disclosure-fraction", "--information-budget", "--missing-token"},
    "nullspace": {"--prior-only", "--disclosure", "--disclosure-fraction", "--information-budget",
                  "--missing-token"},
}
#: Options of seed 000's table builds only, refused with every forwarded mechanism.
TABLE_ONLY = {"--robust", "--max-output-leakage"}
#: Where the forwarding note waits until the command has succeeded (``click.Context.meta``).
_NOTE = "privmap.forwarded_note"
#: Options of the old ``build`` that took no value.
OLD_FLAGS = {"--fisher", "--prior-only", "--no-codebook", "--json", "-h", "--help"}


def _mechanism(args: list[str]) -> str | None:
    for i, token in enumerate(args):
        if token == "--":
            return None
        if token == "--mechanism" and i + 1 < len(args):
            return args[i + 1]
        if token.startswith("--mechanism="):
            return token.split("=", 1)[1]
    return None


def forward(args: list[str], target: click.Command, mechanism: str, called: str) -> tuple[list[str], list[str]]:
    """The arguments of ``build`` (after the command name) rewritten for ``target``, and the options dropped.

    ``target`` is the command that builds ``mechanism`` now (called ``called``). Raises :class:`Fail`
    for an option the old command refused with that mechanism.
    """
    accepted = {opt for p in target.params for opt in (*p.opts, *p.secondary_opts)}
    flags = {opt for p in target.params if getattr(p, "is_flag", False) for opt in p.opts} | OLD_FLAGS
    kept, dropped, i = [], [], 0
    while i < len(args):
        token = args[i]
        if token == "--" or not token.startswith("-") or token == "-":
            kept.append(token)
            i += 1
            continue
        name, has_value, _ = token.partition("=")
        width = 1 if (has_value or name in flags) else 2
        if name in TABLE_ONLY:
            raise Fail(f"{name} applies to the quantized and exact mechanisms (privmap build), not {mechanism}")
        if name in REFUSED[mechanism]:
            raise Fail(f"{name} does not apply to the {mechanism} mechanism "
                       f"(see 'privmap {called} --help')")
        if name == "--mechanism":
            pass
        elif name in accepted:
            kept.extend(args[i:i + width])
        else:
            dropped.append(name)
        i += width
    return kept, dropped


class PrivmapGroup(CommandGroup):
    """The ``privmap`` group: :class:`CommandGroup`, with the old ``build --mechanism NAME`` forwarded.

    ``build --mechanism NAME`` of a mechanism that has its own command now is forwarded to it
    (module docstring).
    """

    def resolve_command(self, ctx, args):
        if args and args[0] == "build":
            mechanism = _mechanism(args[1:])
            if mechanism in FORWARDED:
                name = FORWARDED[mechanism]
                rest, dropped = forward(args[1:], self.commands[name], mechanism, name)
                note = f"note: 'privmap build --mechanism {mechanism}' is now 'privmap {name}'"
                if dropped:
                    note += f"; ignored, as before: {' '.join(dropped)}"
                ctx.meta[_NOTE] = note
                args = [name, *rest]
        return super().resolve_command(ctx, args)

    def invoke(self, ctx):
        super().invoke(ctx)
        if _NOTE in ctx.meta:  # after a success only: a failure stays one ``error:`` line
            click.echo(ctx.meta[_NOTE], err=True)
