"""A group with a default command: ``privmap build DATA ...`` is ``privmap build quantized DATA ...``.

A first argument that names none of the group's commands (a data file, an option) goes to the
default command, so the group adds commands without changing what any earlier command line
means (a data file named like a command is given as ``./NAME``). ``--help`` on the group is the
default command's one-screen help (:class:`~privmap.offline.commandline.SectionedCommand`) with
the group's commands named on one line above its options; ``--help-all`` is the default command's.
"""
from __future__ import annotations

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
            args = [self.default, *args]
        return super().parse_args(ctx, args)

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
