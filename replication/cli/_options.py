"""Arguments several commands share: the topology file, the transforms registered in code, and
the argument types of counts and seconds.

A count or a time that cannot be meant (``--messages -1``, ``--timeout 0``, ``--cap nan``) is
refused by argparse with the command's usage, one line naming the argument and exit code 2,
before anything runs: ``replication plan: error: argument --messages: must be 1 or more, got
-1``.
"""

from __future__ import annotations

import argparse
import math
from datetime import timedelta
from pathlib import Path

from replication.exceptions import ConfigurationError
from replication.settings import DEFAULT_TOPOLOGY_PATH, TOPOLOGY_SETTING, Settings
from replication.topology import Topology, load_topology
from replication.transforms import CodeReferenceError, add_code_root, import_reference
from replication.transport.deadlines import DEFAULT_CALL_TIMEOUT


def positive_int(text: str) -> int:
    """A count of at least one (messages, processes, a cap)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """A time in seconds greater than zero (a timeout, an idle period)."""
    value = _seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def non_negative_seconds(text: str) -> float:
    """A time in seconds of zero or more (a pause that may be skipped)."""
    value = _seconds(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 seconds or more, got {text}")
    return value


def add_topology_option(parser: argparse.ArgumentParser, *, transforms: bool = True) -> None:
    """``--topology FILE`` with the setting/default fallback every command shares, and (unless
    ``transforms`` is false: a command that never loads the app's code) ``--transforms
    MODULE:NAME``, the :class:`~replication.transforms.Transforms` registry of an app whose
    topology names transforms registered in code (the one its ``function_app.py`` passes to
    ``build_app``)."""
    parser.add_argument(
        "--topology",
        default=Settings.from_environ().topology,
        help=f"topology file (default: ${TOPOLOGY_SETTING} or {DEFAULT_TOPOLOGY_PATH})",
    )
    if not transforms:
        return
    parser.add_argument(
        "--transforms",
        metavar="MODULE:NAME",
        help="the Transforms registry the topology's registered transform names come from "
        "(transforms written as 'package.module:function' need none)",
    )


def add_call_timeout_option(
    parser: argparse.ArgumentParser, *, default: timedelta = DEFAULT_CALL_TIMEOUT
) -> None:
    """``--call-timeout SECONDS``: the deadline of each network call of the command (a read of
    a namespace, a call to the failover store); one that gets no answer in time counts as
    unreachable (:mod:`replication.transport.deadlines`)."""
    seconds = default.total_seconds()
    parser.add_argument(
        "--call-timeout",
        type=positive_seconds,
        default=seconds,
        metavar="SECONDS",
        help=f"deadline of each network call; past it, the service counts as unreachable "
        f"(default {seconds:g})",
    )


def topology_of(args: argparse.Namespace, *, user_code: bool = True) -> Topology:
    """The topology ``--topology`` names, with the registry ``--transforms`` names
    (``user_code=False``: no transform is loaded, for commands that never run a task).

    Raises:
        ConfigurationError: as :func:`~replication.topology.load_topology`; also when
            ``--transforms`` does not import or is not a ``Transforms``.
    """
    transforms = None
    if user_code and getattr(args, "transforms", None):
        from replication.transforms import Transforms  # the registry's module, when named

        # The registry may sit beside the topology, as the modules the topology names may.
        add_code_root(Path(args.topology).parent, "the topology's folder")
        try:
            found = import_reference(args.transforms)
        except CodeReferenceError as error:
            raise ConfigurationError(str(error), source="--transforms") from None
        if not isinstance(found, Transforms):
            raise ConfigurationError(
                f"'{args.transforms}' is a {type(found).__name__}, not a Transforms registry",
                source="--transforms",
            )
        transforms = found
    return load_topology(args.topology, transforms=transforms, user_code=user_code)


__all__ = [
    "add_topology_option",
    "non_negative_seconds",
    "positive_int",
    "positive_seconds",
    "topology_of",
]
