"""Deprecated: moved to :mod:`pytest_trt.cache.remote` (the remote tier of the artifact cache).

This module re-exports what ``pytest_trt.remote_cache`` had public and warns ``DeprecationWarning``
once, when it is first imported; it goes in the next minor version. Import from
``pytest_trt.cache.remote`` instead (CHANGELOG.md, "Deprecated").

A module, not a package: the submodules ``pytest_trt.remote_cache.layout``, ``.signing``,
``.transport`` and ``.tier`` are ``pytest_trt.cache.remote.*`` now (no shim).
"""

from __future__ import annotations

import warnings

from .cache import remote as _remote
from .cache.remote import *  # noqa: F403  (the shim re-exports exactly the new module's public names)

__all__ = list(_remote.__all__)

warnings.warn(
    "pytest_trt.remote_cache is deprecated and goes in the next minor version: import from pytest_trt.cache.remote",
    DeprecationWarning,
    stacklevel=2,
)
