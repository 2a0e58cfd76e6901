# Top-level conftest of the pytest-trt repository.
#
# The plugin itself is loaded through its `pytest11` entry point once the package is
# installed (`pip install -e .`); nothing here is needed by users of the plugin.
collect_ignore = ["bench", "example_suite/make_models.py", "tests/data/make_test_models.py", "build"]
