"""A group with a default command: ``privmap build DATA ...`` is ``privmap build quantized DATA ...``.

A first argument that names none of the group's commands (a data file, an option) goes to the
default command, so the group adds commands without changing what any earlier command line
means (a data file named like a command is given as ``./NAME``); a first argument close to a
command's name that is no file is refused with the nearest names. ``--help`` on the group is the
default command's one-screen help (:class:`~privmap.offline.commandline.SectionedCommand`) with
the group's commands named on one line above its options; ``--help-all`` is the default command's.
"""
from __future__ import annotations

import difflib
import glob
import os

import click

__all__ = ["DefaultCommandGroup"]


class DefaultCommandGroup(click.Group):
    """A click group whose arguments go to ``default`` unless the first names one of its commands.

    Parameters
    ----------
    default : str
        The name of the command (added to the group) that takes every other command line,
        an empty one included.
    """

    def __init__(self, *args, default: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.default = default

    def parse_args(self, ctx, args):
        if not args or (args[0] not in self.commands and args[0] not in ctx.help_option_names):
            if args:
                self._refuse_misspelt(ctx, args[0])
            args = [self.default, *args]
        return super().parse_args(ctx, args)

    def _refuse_misspelt(self, ctx, first: str) -> None:
        """Refuse a first argument that is close to a command's name with the nearest names.

        A first argument that is no file, directory or pattern and is close to a command's name
        (``privmap build funel DATA``) is refused with the nearest names, as git refuses an unknown
        command, rather than read as a data file of that name.

        Raises
        ------
        click.UsageError
        """
        if first.startswith("-") or os.path.exists(first) or glob.has_magic(first) or os.sep in first \
                or os.path.splitext(first)[1]:
            return
        near = difflib.get_close_matches(first, list(self.commands), n=3, cutoff=0.6)
        if near:
            raise click.UsageError(f"{first!r} is neither a build command nor a file; did you mean "
                                   f"{' or '.join(repr(n) for n in near)}? (a data file named like a command is "
                                   f"given as ./{first})", ctx)

    def list_commands(self, ctx) -> list[str]:
        """The commands in the order they were added (the default first, as the group adds it)."""
        return list(self.commands)

    def _default_command(self) -> click.Command:
        return self.commands[self.default]

    def format_usage(self, ctx, formatter):
        pieces = self._default_command().collect_usage_pieces(ctx)
        formatter.write_usage(ctx.command_path, " ".join(pieces) + " | COMMAND [ARGS]...")

    def format_help_text(self, ctx, formatter):
        self._default_command().format_help_text(ctx, formatter)

    def format_commands(self, ctx, formatter):
        """The commands by name on one line, the default (whose options this page shows) first."""
        names = [self.default] + [name for name in self.list_commands(ctx) if name != self.default]
        with formatter.section("Commands"):
            formatter.write_text(f"{names[0]} (this page), {', '.join(names[1:])}")

    def format_options(self, ctx, formatter):
        self.format_commands(ctx, formatter)
        self._default_command().format_options(ctx, formatter)
