"""A one-screen ``--help`` for a command with many options, and ``--help-all`` for the whole text.

``privmap build`` takes some thirty options, each with a paragraph of help; printed in full they
fill three screens. :class:`SectionedCommand` prints, for ``--help``, a short text and the options
under section headings, one line each; ``--help-all`` prints the command's whole docstring and
every option's full help (click's own layout). The short lines live beside the command, in one
table (:class:`Section`), so the long help stays where each option is declared; an option missing
from the table is an error when the help is drawn (tests draw it), never a silently hidden option.
"""
from __future__ import annotations

from dataclasses import dataclass

import click

#: Where ``--help-all`` leaves its mark for the formatter (``click.Context.meta``).
_ALL = "privmap.help_all"
#: Longest list of choices shown as the metavar of the one-line view (else NAME).
_CHOICES_SHOWN = 12


@dataclass(frozen=True)
class Section:
    """A heading and its options: (parameter name, one-line help) in display order."""

    title: str
    options: tuple[tuple[str, str], ...]


def _show_all(ctx: click.Context, _param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    ctx.meta[_ALL] = True
    click.echo(ctx.get_help(), color=ctx.color)
    ctx.exit()


class SectionedCommand(click.Command):
    """A click command whose ``--help`` fits one screen (module docstring).

    Parameters
    ----------
    sections : sequence of Section
        Every option of the command except ``--help`` and ``--help-all``, each once.
    brief : str
        The text ``--help`` shows above the options (the docstring is shown by ``--help-all``);
        ``{command}`` in it stands for the command as it was called (``privmap build funnel``, or
        an alias's ``privmap build-funnel``), so that an example shows the name the reader typed
        (the program is named ``privmap`` whatever the name it was started by).
    """

    def __init__(self, *args, sections, brief: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.sections = tuple(sections)
        self.brief = brief
        self.params.append(click.Option(["--help-all"], is_flag=True, expose_value=False, is_eager=True,
                                        callback=_show_all, help="Every option's full help, and how it runs."))

    def format_help_text(self, ctx, formatter):
        if ctx.meta.get(_ALL):
            return super().format_help_text(ctx, formatter)
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(self.brief.replace("{command}", " ".join(["privmap", *ctx.command_path.split()[1:]])))

    def format_options(self, ctx, formatter):
        if ctx.meta.get(_ALL):
            return super().format_options(ctx, formatter)
        by_name = {p.name: p for p in self.get_params(ctx) if isinstance(p, click.Option) and not p.hidden}
        helps = ("help_all", self.get_help_option(ctx).name)
        listed = [name for section in self.sections for name, _ in section.options]
        wrong = (set(by_name) - set(listed) - set(helps)) | (set(listed) - set(by_name))
        if wrong or len(listed) != len(set(listed)):
            raise RuntimeError(f"{self.name} --help: options not listed exactly once: {sorted(wrong)}")
        sections = [(s.title, [(short_term(by_name[n]), text) for n, text in s.options]) for s in self.sections]
        sections.append(("Help", [(short_term(by_name[n]), by_name[n].help) for n in helps]))
        width = max(len(term) for _, rows in sections for term, _ in rows)
        for title, rows in sections:
            with formatter.section(title):
                formatter.write_dl([(term.ljust(width), text) for term, text in rows], col_max=width)


def short_term(param: click.Option) -> str:
    """``-k, --clusters K|auto``: the option's names and a short metavar, for the one-line view.

    A choice of more than a few letters is NAME, numbers N or X, paths FILE.
    """
    names = ", ".join(sorted(param.opts, key=len))
    if param.is_flag:
        return names
    kind = param.type
    if param.metavar:
        metavar = param.metavar
    elif isinstance(kind, click.Choice):
        metavar = "|".join(kind.choices)
        metavar = metavar if len(metavar) <= _CHOICES_SHOWN else "NAME"
    elif isinstance(kind, (click.types.IntParamType, click.IntRange)):
        metavar = "N"
    elif isinstance(kind, (click.types.FloatParamType, click.FloatRange)):
        metavar = "X"
    elif isinstance(kind, click.Path):
        metavar = "FILE"
    else:
        metavar = "TEXT"
    return f"{names} {metavar}"
