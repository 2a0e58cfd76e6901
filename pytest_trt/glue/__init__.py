"""The pytest glue: what turns the pipeline into pytest tests.

:mod:`~pytest_trt.glue.hookspec` (the plugin's hooks for other plugins),
:mod:`~pytest_trt.glue.items` (what a *trt test* is), :mod:`~pytest_trt.glue.marker` (the
``trt`` marker's keywords), :mod:`~pytest_trt.glue.case` (``TrtCase``: one test's model,
policy, engine and checks), :mod:`~pytest_trt.glue.activation` (putting the plugin in use),
:mod:`~pytest_trt.glue.fixtures` (``trt``, ``trt_session``, ``trt_build``, ...) and
:mod:`~pytest_trt.glue.xdist_gpus` (``--trt-gpus`` under pytest-xdist). The entry point,
:mod:`pytest_trt.plugin`, imports them.

Not named ``pytest``: that would shadow pytest wherever ``pytest_trt/`` itself lands on
``sys.path``. Kept light (no imports here): the plugin's load path imports this package.
"""
