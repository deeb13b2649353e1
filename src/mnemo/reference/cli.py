"""The `mnemo` command's page: every command and group Typer builds from mnemo.cli.main, in
the order `mnemo --help` lists them, with their arguments and options."""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum
from typing import TYPE_CHECKING

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

from ..cli.main import app as mnemo
from .markdown import code, escape, first_paragraph, number_range, paragraphs, table

if TYPE_CHECKING:  # Typer's own copy of Click names its classes only here
    from typer._click.core import Command


def render(app: typer.Typer = mnemo) -> str:
    """The page for `app`: the `mnemo` command's unless another is given."""
    root = typer.main.get_command(app)
    contexts = list(_walk(typer.Context(root, info_name=root.name)))
    listed = [(code(c.command_path), _anchor(c), escape(_summary(c.command))) for c in contexts[1:]]
    return "\n\n".join(
        [
            f"# `{root.name}` command line",
            *map(escape, paragraphs(root.help)),
            f"Every command also takes `--help`. The options of `{root.name}` itself (the first section"
            " below) come before the command's name.",
            table(["Command", "What it does"], [[f"[{path}](#{anchor})", s] for path, anchor, s in listed]),
            *(_section(c) for c in contexts),
        ]
    )


def _walk(ctx: typer.Context) -> Iterator[typer.Context]:
    """`ctx`, then the contexts of its visible commands, depth first."""
    yield ctx
    command = ctx.command
    if isinstance(command, TyperGroup):
        for name in command.list_commands(ctx):
            sub = command.commands[name]
            if not sub.hidden:
                yield from _walk(typer.Context(sub, info_name=name, parent=ctx))


def _summary(command: Command) -> str:
    return command.short_help or first_paragraph(_help(command))


def _help(command: Command) -> str:
    # Click shows nothing after a form feed: what follows is for the code's readers
    return (command.help or "").partition("\f")[0]


def _anchor(ctx: typer.Context) -> str:
    """The id GitHub gives the command's heading."""
    return ctx.command_path.replace(" ", "-").lower()


def _section(ctx: typer.Context) -> str:
    command = ctx.command
    depth = ctx.command_path.count(" ")
    heading = "#" * min(depth + 1, 4) if depth else "##"
    usage = " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])
    parts = [
        f"{heading} `{ctx.command_path}`",
        f"```\n{usage}\n```",
        *(["Deprecated."] if command.deprecated else []),
        *map(escape, paragraphs(_help(command))),
    ]
    params = [p for p in command.params if isinstance(p, TyperArgument | TyperOption) and not p.hidden]
    arguments = [_row(p, ctx) for p in params if isinstance(p, TyperArgument)]
    options = [_row(p, ctx) for p in params if isinstance(p, TyperOption)]
    if arguments:
        parts.append(table(["Argument", "Value", "Default", "Meaning"], arguments))
    if options:
        parts.append(table(["Option", "Value", "Default", "Meaning"], options))
    if command.epilog:
        parts += map(escape, paragraphs(command.epilog))
    return "\n\n".join(parts)


def _row(param: TyperArgument | TyperOption, ctx: typer.Context) -> list[str]:
    if isinstance(param, TyperOption):
        names = " / ".join(", ".join(map(code, opts)) for opts in (param.opts, param.secondary_opts) if opts)
    else:
        names = code(param.metavar or param.name or "")  # as `--help` shows it
    return [names, _value(param, ctx), _default(param, ctx), escape(param.help or "")]


def _value(param: TyperArgument | TyperOption, ctx: typer.Context) -> str:
    """What the parameter takes: a flag, an option's metavar, or the type (with its range)."""
    if isinstance(param, TyperOption) and param.is_flag:
        return "flag"
    metavar = param.metavar if isinstance(param, TyperOption) else None  # an argument's names it
    shown = metavar or param.display_type(ctx).strip("<>")
    value = code(shown.removesuffix(" range"))
    if limits := number_range(param.min, param.max):
        value += f", {limits}"
    if param.multiple:
        value += ", repeatable"
    elif param.nargs == -1:
        value += ", one or more" if param.required else ", any number"
    return value


def _default(param: TyperArgument | TyperOption, ctx: typer.Context) -> str:
    if param.required:
        return "required"
    if isinstance(param.show_default, str):
        return escape(param.show_default)
    default = param.get_default(ctx, call=False)
    if not param.show_default or default is None or default == () or default == []:
        return ""
    if callable(default):
        return "computed"
    if isinstance(param, TyperOption) and param.is_flag:
        if param.secondary_opts:
            return code(param.opts[0] if default else param.secondary_opts[0])
        return "on" if default else ""
    return code(str(default.value if isinstance(default, Enum) else default))
