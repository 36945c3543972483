"""Which commands take which shared options (``replication/cli/_options.py``)."""

from __future__ import annotations

from replication.cli import COMMANDS, build_parser


def _takes(command: str, option: str) -> bool:
    """Whether ``command`` has ``option`` (each command's arguments are added only when it is
    the chosen one)."""
    _, commands = build_parser(command)
    return option in commands[command]._option_string_actions


def test_only_the_commands_that_load_the_apps_code_take_transforms() -> None:
    """``--transforms`` names the registry of transforms registered in code; a command that
    loads the topology without the app's code (``render``, ``status``, ``lint-rules``, the
    failover commands) would ignore it, so it does not offer it."""
    taking = {name for name in COMMANDS if _takes(name, "--transforms")}
    assert taking == {"validate", "plan", "run", "redrive", "drill", "demo"}
