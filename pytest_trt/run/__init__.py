"""A run of pytest-trt, shared by the pytest plugin and the console script.

:mod:`~pytest_trt.run.settings` (the one table of ``--trt-*`` options and ``trt_*`` ini
values, and their resolver) and :mod:`~pytest_trt.run.session` (``TrtSession``: settings,
backend, cache, engines and results of one process).

Kept light (no imports here): the plugin's load path imports both modules.
"""
