"""docs/DESIGN.md's layout tree names every module of the package, and nothing else (review1 defect 14).

Before: the tree left out ``cache/remote/localfs.py``, ``cache/remote/urls.py``, ``cli/common.py`` and
``cli/spelling.py`` (it listed the console script's modules as "one module per subcommand"), so a
newcomer looking for them by stage found nothing. The tree is parsed by indentation: a line whose
first word ends in ``/`` opens a package, one ending in ``.py`` names a module of the package it sits
in; other lines continue a description. A package's ``__init__.py`` need not be listed.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DESIGN = REPO / "docs" / "DESIGN.md"
PACKAGE = REPO / "pytest_trt"


def layout_block() -> list[str]:
    text = DESIGN.read_text()
    section = text[text.index("## Layout = pipeline"):]
    match = re.search(r"```\n(pytest_trt/\n.*?)```", section, re.S)
    assert match, "no ``` block starting with pytest_trt/ under '## Layout = pipeline' in docs/DESIGN.md"
    return match.group(1).splitlines()


def listed() -> set[str]:
    """Paths relative to the repository (``pytest_trt/cli/args.py``, ``pytest_trt/cli/``) the tree names."""
    found: set[str] = set()
    stack: list[tuple[int, str]] = []
    for line in layout_block():
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(stripped)
        token = stripped.split()[0]
        if not re.fullmatch(r"[\w.]+(/|\.py)", token):
            continue  # a description's continuation line
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "".join(name for _, name in stack) + token
        found.add(path)
        if token.endswith("/"):
            stack.append((indent, token))
    return found


def modules() -> set[str]:
    out = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(REPO).as_posix()
        if path.name == "__init__.py" and path.parent != PACKAGE:
            out.add(rel[: -len("__init__.py")])  # the package itself
        else:
            out.add(rel)
    return out


def test_every_module_is_in_the_layout_tree():
    missing = sorted(modules() - listed())
    assert not missing, f"modules missing from docs/DESIGN.md's layout tree: {missing}"


def test_the_layout_tree_names_no_module_that_does_not_exist():
    stale = sorted(p for p in listed() - modules() if p != "pytest_trt/")
    assert not stale, f"docs/DESIGN.md's layout tree names modules that do not exist: {stale}"


def test_design_points_to_nothing_outside_the_repository():
    text = DESIGN.read_text()
    assert "../shared" not in text and "shared/" not in text.replace("tests/shared", ""), \
        "docs/DESIGN.md cites files outside a clone (shared/...)"
