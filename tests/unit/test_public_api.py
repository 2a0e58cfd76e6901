"""The public API resolves, lazily, and the README documents every option."""

from pathlib import Path

import pytest

import pytest_trt
from pytest_trt.run.settings import OPTIONS

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


@pytest.mark.parametrize("name", sorted(pytest_trt._LAZY))
def test_every_public_name_resolves(name):
    value = getattr(pytest_trt, name)
    assert value is not None
    assert getattr(value, "__doc__", None), f"pytest_trt.{name} has no docstring"


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        pytest_trt.nope  # noqa: B018


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_readme_documents_every_option_and_its_ini_twin(option):
    assert f"`--{option.name}`" in README or (option.path and f"`--{option.name}=" in README)
    assert f"`{option.ini}`" in README


def test_the_trt_test_definition_names_exactly_the_plugins_fixtures():
    """items.PLUGIN_FIXTURES (what makes a trt test) and pytest_trt.glue.fixtures (what the plugin defines) agree."""
    import pytest_trt.glue.fixtures as fixtures
    from pytest_trt.glue.items import PLUGIN_FIXTURES

    defined = {name for name, value in vars(fixtures).items()
               if type(value).__name__ == "FixtureFunctionDefinition" or hasattr(value, "_pytestfixturefunction")}
    assert defined == PLUGIN_FIXTURES
