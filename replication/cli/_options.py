"""Arguments several commands share: the topology file, and the transforms registered in code."""

from __future__ import annotations

import argparse

from replication.exceptions import ConfigurationError
from replication.settings import DEFAULT_TOPOLOGY_PATH, TOPOLOGY_SETTING, Settings
from replication.topology import Topology, load_topology
from replication.transforms import CodeReferenceError, Transforms, import_reference
from replication.transport.deadlines import DEFAULT_CALL_TIMEOUT


def add_topology_option(parser: argparse.ArgumentParser) -> None:
    """``--topology FILE`` with the setting/default fallback every command shares, and
    ``--transforms MODULE:NAME``, the :class:`~replication.transforms.Transforms` registry of an
    app whose topology names transforms registered in code (the one its ``function_app.py``
    passes to ``build_app``)."""
    parser.add_argument(
        "--topology",
        default=Settings.from_environ().topology,
        help=f"topology file (default: ${TOPOLOGY_SETTING} or {DEFAULT_TOPOLOGY_PATH})",
    )
    parser.add_argument(
        "--transforms",
        metavar="MODULE:NAME",
        help="the Transforms registry the topology's registered transform names come from "
        "(transforms written as 'package.module:function' need none)",
    )


def add_call_timeout_option(parser: argparse.ArgumentParser) -> None:
    """``--call-timeout SECONDS``: the deadline of each network call of the command (a read of
    a namespace, a call to the failover store); one that gets no answer in time counts as
    unreachable (:mod:`replication.transport.deadlines`)."""
    default = DEFAULT_CALL_TIMEOUT.total_seconds()
    parser.add_argument(
        "--call-timeout",
        type=float,
        default=default,
        metavar="SECONDS",
        help=f"deadline of each network call; past it, the service counts as unreachable "
        f"(default {default:g})",
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


__all__ = ["add_topology_option", "topology_of"]
