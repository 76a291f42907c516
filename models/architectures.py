"""The architecture registry: name -> builder, and which builders take pretrained weights."""

from __future__ import annotations

from typing import Callable

import keras

_BUILDERS: dict[str, Callable[..., keras.Model]] = {}
# Builders that take a ``weights`` argument (pretrained backbone weights), declared at
# registration so that callers need not probe a builder's signature or catch its errors.
_PRETRAINED: set[str] = set()


def register(
    name: str, pretrained: bool = False
) -> Callable[[Callable[..., keras.Model]], Callable[..., keras.Model]]:
    """Decorator adding a builder to the registry. ``pretrained`` means it accepts ``weights=``."""

    def decorate(builder: Callable[..., keras.Model]) -> Callable[..., keras.Model]:
        if name in _BUILDERS:
            raise ValueError(f"Model {name!r} registered twice.")
        _BUILDERS[name] = builder
        if pretrained:
            _PRETRAINED.add(name)
        return builder

    return decorate


def names() -> list[str]:
    return sorted(_BUILDERS)


def takes_pretrained_weights(name: str) -> bool:
    """Whether model ``name`` has a backbone that loads pretrained weights via ``weights=``."""
    return name in _PRETRAINED


def build(name: str, **kwargs) -> keras.Model:
    """Builds the registered architecture ``name`` with builder keyword arguments."""
    if name not in _BUILDERS:
        raise ValueError(f"Unknown model {name!r}; known models: {', '.join(names())}.")
    return _BUILDERS[name](**kwargs)
