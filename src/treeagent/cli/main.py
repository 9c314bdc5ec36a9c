"""Command line: treeagent sections | run | bench | score | query | report | config.

Heavy imports stay inside the command functions to keep start-up fast. Conventions for
every command: ``--help`` shows each option's default; ``-`` as an input file reads
standard input; a closed pipe (``treeagent ... | head``) ends quietly with status 141;
bad input is one ``error:`` line and status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

DESCRIPTION = (
    "Structure-aware sectioning, memory agents and a reproducible benchmark for long "
    "hierarchical data (JSON, HTML, YAML, static JavaScript). "
    "Run 'treeagent COMMAND --help' for a command's options."
)

_COMMAND_MODULES = (
    "treeagent.cli.sections",  # treeagent sections
    "treeagent.report.cli",  # treeagent score | query | report
    "treeagent.cli.run",  # treeagent run
    "treeagent.bench.cli",  # treeagent bench build | show | export
    "treeagent.cli.plan",  # treeagent plan
    "treeagent.cli.serve",  # treeagent serve
    "treeagent.report.cli_view",  # treeagent view
    "treeagent.cli.models",  # treeagent models lock
    "treeagent.report.cli_history",  # treeagent history [record]
)
"""Each module has ``register(subparsers)``; heavy imports stay in its command functions."""

_NO_DEFAULT_SHOWN = (argparse._StoreTrueAction, argparse._StoreFalseAction,
                     argparse._HelpAction, argparse._VersionAction)


class HelpFormatter(argparse.HelpFormatter):
    """Plain-text help that states each option's default (unless the help text already
    says it, or the option is a flag or has no default)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (isinstance(action, _NO_DEFAULT_SHOWN) or default in (None, False, [])
                or default is argparse.SUPPRESS or "default" in text.lower()):
            return text
        return f"{text} (default: %(default)s)".strip()

    def _format_action(self, action: argparse.Action) -> str:
        if action.help is None:  # an option without help text still shows its default
            action.help = self._get_help_string(action) or None
        return super()._format_action(action)


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose help (and every sub-command's) uses :class:`HelpFormatter`."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("treeagent")
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        from treeagent import __version__

        return __version__


class _Version(argparse.Action):
    """``--version``: looked up only when asked (the metadata scan costs ~0.2 s)."""

    def __init__(self, option_strings, dest, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the installed version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"treeagent {package_version()}")
        parser.exit()


def _build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="treeagent", description=DESCRIPTION)
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=Parser)
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a command module not (yet) in this build
            if exc.name != name:
                raise
            continue
        module.register(sub)
    sub.add_parser("config", add_help=False,
                   help="check, show, write or set params.yaml (config --help for more)")
    return parser


def _quiet_broken_pipe() -> int:
    """The reader of stdout went away: discard what is left, no traceback (status 141,
    as a process ended by SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["config"]:  # its own parser (python -m treeagent.pipeline.config)
            from treeagent.pipeline import config

            status = config.main(argv[1:], prog="treeagent config")
        else:
            args = _build_parser().parse_args(argv)
            status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return status
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
