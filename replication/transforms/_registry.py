"""Transforms registered in code, beside ``build_app``, and found by name from the topology.

::

    from replication.hosts.functions import build_app
    from replication.transforms import Transforms

    transforms = Transforms()

    @transforms.register
    def mask_card(message): ...

    app = build_app(transforms=transforms)

The topology then says ``"transform": "mask_card"``. A topology value with a colon
(``"package.module:function"``) is imported instead, which needs no registry and works the
same in every host. Registering twice under one name fails at once, as the Functions library
does with two functions of one name; so does a function that cannot take one message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar, overload

from ._function import check_signature
from ._references import CodeReferenceError, import_reference

F = TypeVar("F", bound=Callable[..., object])


class Transforms:
    """A registry of transforms by name (see the module docstring)."""

    def __init__(self) -> None:
        self._functions: dict[str, object] = {}

    @overload
    def register(self, function: F, /) -> F: ...

    @overload
    def register(self, name: str, /) -> Callable[[F], F]: ...

    def register(self, target: F | str, /) -> F | Callable[[F], F]:
        """``@transforms.register`` (under the function's name) or
        ``@transforms.register("name")``; returns the function unchanged.

        Raises:
            ValueError: the name is taken.
            TransformSignatureError: the function cannot take one message.
        """
        if isinstance(target, str):
            name = target

            def decorate(function: F) -> F:
                self._add(name, function)
                return function

            return decorate
        self._add(getattr(target, "__name__", repr(target)), target)
        return target

    def _add(self, name: str, function: object) -> None:
        if not name or ":" in name:
            raise ValueError(f"transform name {name!r} must be non-empty and without ':'")
        if name in self._functions:
            raise ValueError(f"a transform named '{name}' is already registered")
        check_signature(function, name)
        self._functions[name] = function

    def __contains__(self, name: object) -> bool:
        return name in self._functions

    def __iter__(self) -> Iterator[str]:
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)

    def get(self, name: str) -> object:
        """The function registered as ``name``.

        Raises:
            CodeReferenceError: nothing is registered under that name (with a "did you mean").
        """
        try:
            return self._functions[name]
        except KeyError:
            import difflib  # only for a name that is not found

            close = difflib.get_close_matches(name, list(self._functions), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            known = ", ".join(sorted(self._functions)) or "none"
            raise CodeReferenceError(
                f"no transform registered as '{name}'{hint}; registered: {known}. Register it "
                "with @transforms.register and pass transforms= to build_app (or LocalHost, "
                "or --transforms MODULE:NAME on the command line), or write "
                "'package.module:function'"
            ) from None


def resolve_function(reference: str, registry: Transforms | None) -> object:
    """The function a topology's ``transform`` names: ``package.module:function`` is imported,
    anything else is looked up in ``registry``.

    Raises:
        CodeReferenceError: the import fails or the name is not registered.
    """
    if ":" in reference:
        return import_reference(reference)
    return (registry if registry is not None else Transforms()).get(reference)


__all__ = ["Transforms", "resolve_function"]
