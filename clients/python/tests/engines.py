"""Loads a connector against one of the engine stand-ins in tests/standins, as it loads where that engine is installed."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from typing import Iterator, Tuple

STANDINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standins")


def _forget(prefix: str) -> None:
    for name in [n for n in sys.modules if n == prefix or n.startswith(prefix + ".")]:
        del sys.modules[name]


@contextlib.contextmanager
def engine(standin: str, connector: str) -> Iterator[Tuple[object, object]]:
    """Puts ``tests/standins/<standin>`` on sys.path and imports ``mcctl.<connector>`` anew over it; yields the
    connector module and the stand-in's top package. Afterwards neither stays imported."""
    package = standin.split("_")[0]
    path = os.path.join(STANDINS, standin)
    _forget(package)
    _forget(f"mcctl.{connector}")
    sys.path.insert(0, path)
    try:
        module = importlib.import_module(f"mcctl.{connector}")
        yield module, importlib.import_module(package)
    finally:
        sys.path.remove(path)
        _forget(package)
        _forget(f"mcctl.{connector}")
