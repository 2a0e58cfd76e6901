"""Where pytest-trt keeps its cache when nobody says: one rule for the plugin, the console script and the API.

The rule: ``$PYTEST_TRT_CACHE_DIR`` when set, else ``<rootdir>/.trt-cache``. Under pytest,
``<rootdir>`` is pytest's rootdir. The ``pytest-trt`` console script and
:func:`default_cache_dir` use the rootdir pytest would choose if it were run in the current
directory without arguments (:func:`project_root`): the nearest directory, from the current
one upwards, that holds a pytest configuration file (``pytest.toml``, ``pytest.ini``,
``pyproject.toml`` with a ``[tool.pytest...]`` table, ``tox.ini`` with ``[pytest]``,
``setup.cfg`` with ``[tool:pytest]``), else the nearest one holding a ``pyproject.toml``,
else the current directory. So ``pytest-trt compare`` run anywhere inside a project reuses
the engines its test suite built, and outside any project it uses ``./.trt-cache`` as before.
Saved runs (``--trt-storage``) follow the same rootdir: ``<rootdir>/.trt-runs``.

Only the standard library is imported here: the plugin reads this when it loads.
"""

from __future__ import annotations

import configparser
import importlib
import os
import re
from pathlib import Path

__all__ = ["CACHE_DIR_ENV", "DEFAULT_CACHE_DIRNAME", "DEFAULT_RUNS_DIRNAME", "default_cache_dir", "default_runs_dir",
           "ignored_ini_note", "project_ini_value", "project_root"]

#: The cache directory's name under the rootdir.
DEFAULT_CACHE_DIRNAME = ".trt-cache"
#: The saved runs' directory under the rootdir (``--trt-storage``'s default, :mod:`pytest_trt.history`).
DEFAULT_RUNS_DIRNAME = ".trt-runs"
#: The environment variable that names the cache directory (below the command line, above the ini).
CACHE_DIR_ENV = "PYTEST_TRT_CACHE_DIR"

# pytest's configuration files, in the order pytest looks for them in one directory
_CONFIG_FILES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini",
                 "setup.cfg")


_PYPROJECT_PYTEST = re.compile(r"^\s*\[\s*tool\.pytest(\.ini_options)?\s*\]", re.MULTILINE)


def _has_pytest_config(path: Path) -> bool:
    """Whether ``path`` (one of :data:`_CONFIG_FILES`) holds pytest configuration, as pytest decides it."""
    name = path.name
    if name in ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini"):
        return True  # pytest takes these even when empty
    if name == "pyproject.toml":
        # a [tool.pytest.ini_options] (or pytest 9's [tool.pytest]) table; a line match is enough here
        # and needs no TOML parser (tomllib is Python >= 3.11)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        return _PYPROJECT_PYTEST.search(text) is not None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return False
    return parser.has_section("pytest" if name == "tox.ini" else "tool:pytest")


def project_root(start: str | os.PathLike[str] | None = None) -> Path:
    """The rootdir pytest would choose when run in ``start`` (default: the current directory) without
    arguments: the nearest directory upwards with a pytest configuration file, else the nearest with a
    ``pyproject.toml``, else ``start`` itself."""
    here = Path(start if start is not None else Path.cwd()).absolute()
    first_pyproject = None
    for base in (here, *here.parents):
        for name in _CONFIG_FILES:
            candidate = base / name
            if not candidate.is_file():
                continue
            if name == "pyproject.toml" and first_pyproject is None:
                first_pyproject = base
            if _has_pytest_config(candidate):
                return base
    return first_pyproject or here


def default_cache_dir(start: str | os.PathLike[str] | None = None, *, rootdir: str | os.PathLike[str] | None = None
                      ) -> Path:
    """``$PYTEST_TRT_CACHE_DIR``, else ``<rootdir>/.trt-cache`` (``rootdir`` given, else
    :func:`project_root` of ``start``): the cache directory when no option names one."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    root = Path(rootdir) if rootdir is not None else project_root(start)
    return root / DEFAULT_CACHE_DIRNAME


def default_runs_dir(start: str | os.PathLike[str] | None = None, *, rootdir: str | os.PathLike[str] | None = None
                     ) -> Path:
    """``<rootdir>/.trt-runs`` (``rootdir`` given, else :func:`project_root` of ``start``): where saved
    runs live when ``--trt-storage`` (console script: ``--storage``) names no place."""
    root = Path(rootdir) if rootdir is not None else project_root(start)
    return root / DEFAULT_RUNS_DIRNAME


def _project_config(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The pytest configuration file that makes :func:`project_root` of ``start`` the rootdir, or None."""
    here = Path(start if start is not None else Path.cwd()).absolute()
    for base in (here, *here.parents):
        for name in _CONFIG_FILES:
            candidate = base / name
            if candidate.is_file() and _has_pytest_config(candidate):
                return candidate
    return None


def project_ini_value(key: str, start: str | os.PathLike[str] | None = None) -> tuple[Path, str] | None:
    """``(config file, value)`` when the project's pytest configuration (the file :func:`project_root`
    finds) sets ``key`` to a non-empty string, else None. The console script ignores the ini (its
    flags > the environment > the default); this only lets it say so (:func:`ignored_ini_note`)."""
    path = _project_config(start)
    if path is None:
        return None
    value: object = None
    try:
        if path.suffix == ".toml":
            try:  # (by name: mypy checks for Python 3.10, which has no tomllib)
                tomllib = importlib.import_module("tomllib")
            except ImportError:  # Python 3.10: no TOML parser in the standard library; nothing to say
                return None
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            table = data.get("pytest") if path.name.endswith("pytest.toml") else data.get("tool", {}).get("pytest")
            table = table or {}
            value = (table.get("ini_options") or {}).get(key, table.get(key))
        else:
            parser = configparser.ConfigParser(interpolation=None)
            parser.read(path, encoding="utf-8")
            section = "tool:pytest" if path.name == "setup.cfg" else "pytest"
            value = parser.get(section, key, fallback=None)
    except (OSError, UnicodeDecodeError, ValueError, configparser.Error, AttributeError):
        return None
    if not isinstance(value, str) or not value.strip():
        return None
    return path, value.strip()


def ignored_ini_note(key: str, flag: str, used: str | os.PathLike[str],
                     start: str | os.PathLike[str] | None = None) -> str | None:
    """A one-line note for the console script when the project's ini sets ``key`` and ``flag`` was not
    given: the ini's value (resolved beside the ini file, as pytest resolves it) and the flag to pass,
    or None. The directory is never changed: the console script does not read the ini."""
    found = project_ini_value(key, start)
    if found is None:
        return None
    path, value = found
    where = value if "://" in value else str(Path(os.path.abspath(path.parent / Path(value).expanduser())))
    if "://" not in value and Path(where) == Path(os.path.abspath(Path(used).expanduser())):
        return None
    return (f"pytest-trt: note: {path} sets {key} = {value}, which the console script ignores; it uses "
            f"{used}. Pass {flag}={where} for the one pytest uses")
