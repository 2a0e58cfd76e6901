"""Accuracy history: saved runs, drift between runs, the drift gate, re-checks (issue 31).

"Is it within tolerance?" is one run's verdict; "did it get worse than what we shipped?" needs
the run before. A *saved run* is a session's JSON report plus an environment fingerprint
(:mod:`~pytest_trt.history.fingerprint`), stored under a run id that needs no coordination
(:mod:`~pytest_trt.history.runid`) in a directory or on the remote cache's storage, signed there
with the remote cache's keys (:mod:`~pytest_trt.history.store`). A later session compares its
results with a stored run (:mod:`~pytest_trt.history.drift`), gated by direction-aware
thresholds (:mod:`~pytest_trt.history.gate`), and says what changed inside the engine
(:mod:`~pytest_trt.history.changes`); ``pytest-trt runs recheck`` re-judges saved engine outputs
against a fresh FP32 baseline (:mod:`~pytest_trt.history.recheck`).

Light on purpose: this ``__init__`` imports nothing, and :mod:`~pytest_trt.history.runid` and
:mod:`~pytest_trt.history.gate` import only the standard library and light modules of the package
(the plugin's option parsing and the console script's ``--help`` read them). The criterion a
check was judged by is the project's one :class:`~pytest_trt.compare.criterion.Criterion`, as its
accuracy entry records it.
"""
