"""``--trt-report=PATH.json``: machine-readable results of a pytest-trt session.

Written once, by the controller under pytest-xdist, at the end of the session. Plain
JSON (no NaN: non-finite numbers are the strings ``"inf"``, ``"-inf"``, ``"nan"``).
The JSON Schema (draft 2020-12) is ``report.schema.json`` beside this module, shipped in the
package; ``tests/plugin/test_json_report_schema.py`` validates a real run's report against it
and compares the report's key structure with a golden file. ``schema_version`` changes with
every change of the report's keys or their meaning, in the same commit as the schema and the
golden file (regenerate it with ``PYTEST_TRT_REGEN_GOLDEN=1 python -m pytest -p no:cacheprovider
tests/plugin/test_json_report_schema.py``).

Changelog
---------
* **11** (review3 rows 1 and 2): a trt test that recorded a failed check and then skipped
  (``pytest.skip()`` after catching it) or xpassed (a non-strict ``xfail`` that swallowed it) gets the
  caught treatment too: ``verdict`` ``"skipped after a failed check"`` / ``"xpassed after a failed
  check"``, counted in ``summary.skipped_caught_in_test`` / ``summary.xpassed_caught_in_test``, its
  failures in the ``*_caught`` figures (never ``*_failed`` on a green run).
  ``history.skipped_damaged``: the damaged runs ``--trt-compare-run=latest`` passed over
  (``[{"id", "reason"}]``, newest first; ``compared_with`` is the run used instead).
* **10** (review2 rows 2 and 4): a trt test that passed although a check of its failed (the test caught the
  failure itself: ``pytest.raises(AccuracyError)`` as a negative control, or ``try``/``except``) has
  the ``verdict`` ``"passed, a failed check was caught by the test"``;
  ``summary.passed_caught_in_test`` counts such tests, and their failed outputs, precision and
  parser checks are counted in the ``*_caught`` figures, never in ``*_failed`` (which stay zero on
  a green run). ``tests[].checked``: an engine built or loaded counts as a check only on a backend
  whose build is a check (``Backend.build_is_a_check``: a real TensorRT builder), so a test that
  only built or ran its engine on ``emulate`` is ``checked: false``, "passed, but nothing was
  checked", in ``passed_unchecked``.
* **9** (review2 row 12e): ``summary.engine_session_reuses``: uses that were cache hits on engines
  built in this session.
* **8** (review1): a trt test that passed without checking anything says so (a check is a comparison
  (``trt.check()``), a precision assertion, a parser check, locate, suggest, or an engine built by a
  backend whose build is a check, ``Backend.build_is_a_check``: a real TensorRT builder):
  ``tests[].checked`` (false for it), its ``verdict`` is ``"passed, but nothing was checked"``,
  and ``summary.passed_unchecked`` counts such tests. ``tests`` lists only trt tests in the new
  sense (a plugin fixture in the test's closure; a test marked ``trt`` itself without one is a
  usage error, an inherited marker makes no trt test). ``summary.cache_evictions`` and
  ``cache_evicted_bytes``: entries the size limit (``--trt-cache-max-size``) evicted, also when
  the session opened the cache.
* **7** (issue 31, saved runs): ``session.fingerprint`` (the environment a saved run records:
  backend and versions, GPU model, compute capability, driver, CUDA, ONNX Runtime, onnx, numpy,
  pytest-trt, default precision, typing, baseline provider, seed, git commit); each accuracy entry
  ``fingerprint`` (``model_sha256``, ``plan``, ``feeds_sha256``) and ``outputs_file``
  (``--trt-save-outputs``); ``tests[].realized`` and the top-level ``realized`` (while runs
  are saved or compared: the precision each compute node of each engine ran in); ``history``
  (storage, ``saved_as``, ``compared_with``, ``drift``: outputs judged against the stored run,
  the gate, the cause line, precision changes per module, layerwise growth), null otherwise.
* **6** (issue 27):

  - ``session.backend_disclaimer``: what the backend says its results are when they are not
    TensorRT's (``Backend.disclaimer``; null for TensorRT), so a plugin backend's emulation is
    never read as TensorRT;
  - every accuracy entry carries its ``criterion`` (``Criterion.to_json()``): per output, the
    tolerances and metric floors it was judged by, each ``{"value", "level", "source"}`` (the
    level: argument, marker, command line, environment, ini, default).

* **5** (issue 30, node names): every node entry says the node in the user's words beside its
  raw ONNX ``node`` name: ``canonical`` (the canonical scoped name,
  ``/model/layers.0/input_layernorm/node_pow_1``; :mod:`pytest_trt.model.names`), ``module``
  (``model.layers.0.input_layernorm``, null when unknown) and ``module_class`` (qualified, null
  when unknown): in ``tests[].precision[].nodes``, ``tests[].parser[].failures`` and
  ``.promotions``, and ``tests[].layerwise[].first`` (its ``tensors`` rows carry ``canonical``).
* **4** (2026-11-26): ledgers (issue 32): ``tests[].ledgers`` (``trt.ledger()``, ``--trt-ledger``: per
  ONNX node declared precision and rule, realized precision and evidence, engine layer or node,
  time and share; units, roll-ups per scope and precision, the timing source or why there is no
  time) and ``summary.ledgers``, ``summary.ledgers_timed``.
* **3** (issue 28):

  - an accuracy entry says whether it was compared with ``no_check=True`` (``no_check``:
    figures without a tolerance verdict; an infinite tolerance needs it);
  - ``summary.outputs_failed``, ``precision_checks_failed`` and ``parser_checks_failed`` no
    longer count the failures of negative controls that caught them (an xfail with
    pytest-trt's verdict): those are ``outputs_caught``, ``precision_checks_caught`` and
    ``parser_checks_caught``, so the ``*_failed`` figures are zero on a green run;
  - every output carries ``element_ratio`` (the share of its own tolerance the worst element
    uses) and ``binding`` (which bound sets ``tolerance_ratio``: element, cosine, snr,
    nan_inf, structure); ``tolerance_ratio`` is the largest of the element ratio and the
    floors' ratios (it was ``min(max_abs/atol, max_rel/rtol)`` capped at 1 for a pass, so a
    passing BF16 output could show 1 while its worst element used 0.35 of its tolerance).

* **2** (2026-11-23):

  - every trt test is listed (also those that failed before recording anything), with
    ``outcome``, ``verdict``, ``message`` and ``expected_failure`` (a negative control's
    verdict: caught / not_tested / missed / passed); ``summary.outcomes`` counts xfailed and
    xpassed apart from skipped;
  - precision checks carry ``evidence`` (per node, and counted per check: observed /
    inferred / unverifiable / emulated); a node known only from a fused kernel's boundary
    is no longer ``pass`` under weak typing (it is ``unverifiable``);
  - the parser check: ``tests[].parser`` and ``summary.parser_checks``,
    ``parser_checks_failed``, ``parser_promotions``;
  - the cache figures ``summary.local_hits`` ... ``cache_seconds_saved`` (local and remote)
    and ``session.remote_cache``;
  - repeated checks are condensed to their worst example (``examples``);
    ``needed_atol``/``needed_rtol`` are null with ``needed_reason`` when NaN/Inf mismatches
    make every tolerance fail; ``advice`` added;
  - ``tolerance_ratio`` also counts the cosine and SNR floors (> 1 exactly when the output
    fails; an output failing only the default cosine floor was 1 or less);
  - every engine and accuracy record names its GPU (``gpu``: name, uuid,
    ``cuda_visible_devices``, worker; null on emulate); engines built by
    ``trt.suggest``/``trt.locate`` say so (``via``); CUDA baseline fallbacks
    (``tests[].baseline_fallbacks``, ``summary.baseline_fallbacks``,
    ``summary.baseline_fallback_nodes``).
* **1**: the first report.

Schema (``schema_version`` 11; the normative form is ``report.schema.json``)
--------------------------------------------------------------------------
::

    {
      "schema_version": 11,
      "created": "2026-11-24T10:00:00+00:00",          # UTC, ISO 8601
      "exitstatus": 1,                                  # pytest's exit status
      "session": {
        "pytest_trt": "0.1.0", "pytest": "9.2.0", "python": "3.11.9", "platform": "Linux-...",
        "libraries": {"tensorrt": "10.13.0" | null, "tensorrt-rtx": ..., "onnxruntime": "1.31.1",
                      "polygraphy": ..., "onnx": ..., "numpy": ...},     # null = not installed
        "gpu": "NVIDIA H100 (compute capability 9.0, driver 580.1)" | "no GPU",
        "gpus": [{"name", "compute_capability", "driver", "memory_mib", "uuid"}],   # this process's (the controller's)
        "gpu_assignment": {"gw0": "0", "gw1": "1"} | null,   # --trt-gpus: worker -> CUDA_VISIBLE_DEVICES
        "backend": "emulate", "backend_reason": "auto: TensorRT not installed, ...",
        "backend_disclaimer": "CPU precision emulation on ONNX Runtime, not TensorRT" | null,   # null: TensorRT
        "precision": "fp16", "precision_source": "--trt-fp16", "as_is": false,
        "typing": "auto", "seed": 0, "baseline_provider": "cpu",
        "atol": null, "rtol": null,                     # --trt-atol / --trt-rtol (null: per-precision defaults)
        "keep_fp32": ["*/LayerNorm/*"], "cache_dir": "/.../.trt-cache", "rebuild": false,
        "remote_cache": {"url": "https://cache.example/trt", "mode": "ro" | "rw",
                         "trusted_key_ids": ["3f2a..."]} | null       # --trt-remote-cache
        "fingerprint": {"backend", "backend_versions", "tensorrt", "tensorrt-rtx", "gpu", "compute_capability",
                        "driver", "cuda", "onnxruntime", "onnx", "numpy", "pytest_trt", "precision", "typing",
                        "baseline_provider", "seed", "git_commit": "3f9a2c1b4d5e+dirty" | null}   # a saved run's
      },
      "summary": {
        "tests": 4,                                     # every trt test (a plugin fixture in its closure)
        "outcomes": {"passed": 2, "failed": 1, "xfailed": 1},   # pytest's outcomes of those tests
        "passed_unchecked": 0,                          # passed without checking anything (tests[].checked false)
        "passed_caught_in_test": 0,                     # passed, a failed check was caught by the test
        "skipped_caught_in_test": 0,                    # skipped after a failed check (pytest.skip in the except)
        "xpassed_caught_in_test": 0,                    # xpassed after a failed check (non-strict xfail)
        "outputs": 7, "outputs_failed": 1,              # failed: not counting caught failures
        "outputs_caught": 1,                            # failed in negative controls (xfail) or caught in a passing test
        "precision_checks": 2, "precision_checks_failed": 0, "precision_checks_caught": 0,
        "engines_built": 2, "engines_reused": 1, "engine_uses": 4, "build_seconds": 0.84,
        "engine_session_reuses": 1,                     # uses that were cache hits on engines built in this session
        "parser_checks": 2, "parser_checks_failed": 0,  # --trt-parser-check / trt.check_parser()
        "parser_checks_caught": 0,
        "parser_promotions": 4,                         # distinct (model, policy, node) computed higher than planned
        "baseline_fallbacks": 1,                        # distinct (model, node list) of CUDA baselines with
        "baseline_fallback_nodes": 2,                   # float nodes on ONNX Runtime's CPU provider; their nodes
        "ledgers": 1, "ledgers_timed": 0,               # ledgers recorded; those with measured GPU time
        # the cache, every kind (engines, baselines, emulation graphs), summed over xdist workers:
        "local_hits": 3, "cache_builds": 2,
        "remote_hits": 1, "remote_misses": 2, "remote_rejected": 0,   # rejected: failed verification, rebuilt
        "remote_uploads": 2, "remote_bytes": 5242880,                 # bytes down + up
        "remote_requests": 17, "cache_seconds_saved": 31.2,           # estimated from recorded build times
        "cache_evictions": 0, "cache_evicted_bytes": 0                # by the size limit (--trt-cache-max-size)
      },
      "tests": [                                        # every trt test, in report order
        {
          "nodeid": "tests/test_encoder.py::test_fp16",
          "outcome": "passed" | "failed" | "error" | "skipped" | "xfailed" | "xpassed",   # pytest's outcome
          "verdict": "passed" | "passed, but nothing was checked" | "passed, a failed check was caught by the test"
                     | "skipped after a failed check" | "xpassed after a failed check" | ... | "expected failure, caught",
                                                        # the outcome as the reports word it
          "checked": true,                              # recorded a check, or an engine of a backend whose build
                                                        # is a check (TensorRT); false + passed: tested nothing
          "message": null | "AccuracyError: ...",       # failed/error/xfailed: the exception; skipped: the reason
          "expected_failure": null | {                  # an xfail marker (a negative control)
            "reason": "...", "strict": true, "raises": ["AccuracyError"] | null,
            "raised": "AccuracyError" | null,           # what the test raised
            "verdict": "caught"       # xfailed with pytest-trt's own verdict (AccuracyError/PrecisionError)
                     | "not_tested"   # xfailed for another reason (usage error, crash): tested nothing
                     | "missed"       # strict xfail that passed: outcome "failed"
                     | "passed"},     # non-strict xfail that passed: outcome "xpassed"
          "engines": [                                  # every engine the test used (counted in engines_built/_reused)
            {"model": "encoder_opset14.onnx", "policy": "fp16; fp32: */LayerNorm/*", "backend": "emulate",
             "cache_hit": false, "build_seconds": 0.42, "key": "<cache key>",
             "gpu": null | {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1f0e..." | null,   # the GPU it ran on
                            "cuda_visible_devices": "1" | null,   # this process's (the worker's under --trt-gpus)
                            "worker": "gw1" | null},              # pytest-xdist worker; gpu null: emulate (CPU)
             "via": null | "suggest" | "locate"}        # built or loaded by trt.suggest() / a layerwise comparison
          ],
          "accuracy": [                                 # one per trt.check()
            {"model": ..., "backend": ..., "policy": ..., "seed": 0,
             "baseline": "fp32" | "as-written",         # the reference: FP32 ONNX Runtime, or the model as written
             "gpu": null | {...},                       # the GPU the engine ran on, as in "engines"
             "passed": false, "precision": "fp16",      # the precision whose default tolerances apply
             "no_check": false,                         # true: no_check=True, figures without a tolerance verdict
             "criterion": {                             # what the outputs were judged by (compare/criterion.py)
               "version": 1, "precision": "fp16", "no_check": false, "no_check_source": "default",
               "equal_nan": false,
               "outputs": {"logits": {                  # per output, each value with where it came from
                 "rtol": {"value": 0.02, "level": "default", "source": "fp16 default"},
                 "atol": {"value": 0.001, "level": "marker", "source": "marker"},
                 "min_cosine": {"value": 0.9999, "level": "default", "source": "fp16 default"},
                 "min_snr_db": {"value": null, "level": "default", "source": "none"}}}},
             "fingerprint": {"model_sha256", "plan", "feeds_sha256"},   # what was compared (saved runs)
             "outputs_file": null | {"file", "sha256", "size"},     # --trt-save-outputs: feeds + outputs (.npz)
             "examples": 1,                             # checks of this model/policy in the test (Hypothesis
                                                        # examples): the worst is shown unless
                                                        # --trt-report-all-records keeps every one
             "outputs": [                               # every output, in the model's order
               {"name": "logits", "passed": false, "kind": "float", "shape": [1, 8, 64], "dtype": "float32",
                "mismatched": 12, "total": 512, "max_abs": 0.031, "max_rel": 2.1,
                "worst_abs_index": [0, 3, 7], "worst_abs_values": [actual, expected], ...,
                "atol": 0.01, "rtol": 0.02, "needed_atol": ..., "needed_rtol": ...,   # FP16 defaults (compare.py)
                "cosine": 0.9987, "min_cosine": 0.9999 | null,   # the floor that applied (null: none)
                "needed_reason": null | "no tolerance passes the 3 NaN/Inf mismatch(es)",  # needed_* null
                "advice": "would pass with atol >= ... " | "no tolerance passes ...",   # as the message says
                "element_ratio": 0.35 | "inf" | null,    # worst element's error / its own tolerance
                "tolerance_ratio": 3.1 | "inf" | null,   # > 1 fails (see below)
                "binding": "element" | "cosine" | "snr" | "nan_inf" | "structure" | null,  # which bound sets it
                "figures": {                            # failing float outputs only (error_figures in report/plots.py)
                  "shape": [1, 8, 64], "atol": 0.01, "rtol": 0.02,
                  "histogram": {"log10_edges": [25 floats], "counts": [24 ints], "zero": n, "nonfinite": n,
                                "atol_log10": -2.0},
                  "grid": {"rows": 8, "cols": 48, "row_block": 1, "col_block": 2, "row_dims": [1, 8], "col_dim": 64,
                           "max_abs": [[float | "inf"]], "mismatched": [[int]], "max": float, "worst_cell": [r, c]}}
               }                                        # (the other output keys: CompareResult.to_json of compare.py)
             ]}
          ],
          "precision": [                                # one per trt.assert_precision(pattern, precision)
            {"pattern": "*/LayerNorm/*", "precision": "fp32", "passed": true,
             "source": "inspector" | "network" | "emulation", "typing": "strong", "emulated": false,
             "counts": {"pass": 9, "fail": 0, "unverifiable": 1, "not_applicable": 1},
             "evidence": {"observed": 5, "inferred": 4, "unverifiable": 1, "emulated": 0},   # compute nodes
             "nodes": [                                 # the constrained nodes: planned vs observed
               {"node": "node_pow_1",                  # the raw ONNX node name
                "canonical": "/model/layers.0/input_layernorm/node_pow_1",   # what every view shows
                "module": "model.layers.0.input_layernorm" | null,
                "module_class": "transformers.models.llama.modeling_llama.LlamaRMSNorm" | null,
                "op_type": "Pow", "planned": "fp32",
                "observed": "fp32" | "fp16" | "mixed" | null,
                "status": "pass" | "fail" | "unverifiable" | "not_applicable",   # verify.NodeVerdict
                "evidence": "observed" | "inferred" | "unverifiable" | "emulated" | null,  # how it is known (null: fixed)
                "cause": null | "plan" | "engine" | "probe",
                "myelin": false, "myelin_region": null | "<region>", "layer": "<engine layer>", "detail": ""}
             ],
             "notes": [...]}
          ],
          "layerwise": [                                # records of kind "layerwise", as recorded (below)
          ],
          "parser": [                                   # one per plan put through TensorRT-RTX's parser and builder
            {"model": ..., "policy": ..., "library": "TensorRT-RTX 1.7.1.116",
             "status": "passed" | "failed" | "source_unparsable", "passed": true,
             "how": "observed: layer dtypes of the parsed, strongly typed network",
             "counts": {"nodes": 98, "ok": 94, "lower": 0, "higher": 4, "not_in_network": 0},
             "failures": [{"node", "canonical", "module", "module_class", "op_type", "planned": "fp32",
                           "parsed": "fp16", "verdict": "lower"}],
             "promotions": [{"node", "canonical", "module", "module_class", "op_type", "planned": "bf16",
                             "parsed": "fp32", "verdict": "higher"}],
                                                        # "TensorRT computes this in higher precision than planned"
             "error": null | "<parser or builder message>", "cache_hit": bool, "build_seconds": float, "key": ...,
             "explicit": bool}                          # true: trt.check_parser(); false: --trt-parser-check
          ],
          "ledgers": [                                  # trt.ledger() / --trt-ledger (auto: true): Ledger.to_json()
            {"auto": false, "model": ..., "policy": ..., "backend": "emulate", "typing": "emulated",
             "layer_source": "emulation" | "inspector" | "network", "low_precision": "fp16" | "bf16" | null,
             "unit": "engine layer" | "ONNX node",
             "time_source": "tensorrt" | "onnxruntime-cuda" | null,  # null: no time, and why:
             "time_label": "ONNX Runtime CUDA, not TensorRT" | ..., "time_reason": "CPU emulation computes ...",
             "timing": null | {"source", "label", "unit", "warmup", "iterations", "device", "total_ms",
                               "end_to_end": {stats}, "overhead", "notes"},
             "total_ms": null | 1.23, "constants": 2,     # Constant nodes: counted, no rows
             "collapse": ["11,329 ONNX nodes in 1 engine layer ({ForeignNode[...]}), 98% of the time"],
             "precisions": {"fp32": {"units", "nodes", "time_ms", "share"}, "fp16": ..., "mixed": ..., "fixed": ...,
                            "other": ...},              # by declared precision; realized_precisions likewise
             "scopes": [{"scope", "nodes", "declared": {precision: count}, "time_ms", "inclusive_ms", "share",
                         "precision"}],
             "units": [{"name", "nodes", "other_nodes", "layer_type", "myelin", "region", "scope", "bucket",
                        "realized_bucket", "time_ms", "stats": {"median_ms", "mean_ms", "min_ms", "max_ms", "q1_ms",
                        "q3_ms", "count", "spread"}, "provider", "unmatched", "origin"}],
             "rows": [{"node", "path", "scope", "module_class", "op_type", "origin": "model" | "realization" |
                       "runtime" | "engine", "declared", "rule", "realized", "evidence", "status", "units",
                       "unit_nodes", "time_ms", "share", "spread", "shared", "provider", "timed_dtypes"}],
             "notes": [...]}
          ],
          "baseline_fallbacks": [                       # --trt-baseline-provider cuda: float nodes that ran on
            {"model": "gpt2.onnx", "provider": "cuda",  # ONNX Runtime's CPU provider (from its profile; also a
             "nodes": [["/h.0/attn/Where", "Where"]]}   # ProviderFallbackWarning). Shape/index nodes not listed
          ],
          "realized": ["emulate:<plan fingerprint>"]    # the engines of "realized" below this test used
        }
      ],
      "realized": {"<backend>:<plan fingerprint>": {"model", "model_sha256", "plan", "policy", "backend", "source",
                   "nodes": {"<canonical node name>": "fp16" | "fp32" | "mixed" | null}}},   # while runs are saved
                                                        # or compared: each engine's precision per compute node
      "history": null | {"storage": ".../.trt-runs", "saved_as": "<run id>" | null, "compared_with": "<run id>" | null,
                         "skipped_damaged": [{"id", "reason"}],   # damaged runs latest passed over
                         "drift": null | {"against", "gate": ["max_abs:+25%"], "passed", "regressed", "improved",
                                          "cause": "TensorRT 10.13.3 -> 11.4.0; model unchanged", "outputs": [
                                            {"nodeid", "output", "status": "regressed" | "improved" | "within" |
                                             "unchanged", "metrics": {"max_abs": {"old", "new", "status", "change",
                                             "threshold", "note"}, ...}}],
                                          "precision_changes": [{"module", "pattern", "old", "new", "nodes", ...}],
                                          "layerwise_growth": [...], ...}}
    }

``tolerance_ratio`` and ``binding`` (:func:`pytest_trt.report.rows.tolerance_bound`, the one
computation the terminal, JSON and HTML show): > 1 exactly when the output fails. The largest
of: the element rule's ``element_ratio`` (an element fails iff its error exceeds atol *and*
rtol*|expected|, i.e. ``max(atol, rtol*|expected|)``; the ratio is the largest error over that
limit, the share of its own tolerance the worst element uses, or for a failure the factor by
which both tolerances would have to grow); where a cosine floor applied (``min_cosine`` not
null) ``(1 - cosine) / (1 - min_cosine)``; where an SNR floor applied ``10 ** ((min_snr_db -
snr_db) / 10)``. ``binding`` names the largest (``"cosine"`` at exactly 1 means the output sits
on the cosine floor). ``"inf"`` for NaN/Inf mismatches (``nan_inf``) and missing or misshapen
outputs (``structure``); null (both) when a passing output's figures were not computed. The error grid views the output as
rows = leading dims flattened (row-major) by columns = last dim, max-pooled in blocks.

Records (what rides on each test report: :mod:`pytest_trt.core.records`, one dataclass per kind)
-------------------------------------------------------------------------------------------------
A test's records travel from an xdist worker to the controller as their JSON forms
(``Record.to_json()``: ``{"kind", <fields>}``, optional fields left out while unset) and are
read back with ``record_from_json``, which rejects an unknown kind, a missing or an unknown key.

* ``EngineRecord`` ``{"kind": "engine", "model", "policy", "backend", "cache_hit": bool, "build_seconds": float,
  "key", "gpu": {...} | null, "via": "suggest" | "locate" (optional)}``
* ``BaselineFallbackRecord`` ``{"kind": "baseline_fallback", "model", "provider": "cuda",
  "nodes": [[name, op_type], ...]}``
* ``AccuracyRecord`` ``{"kind": "accuracy", "model", "backend", "policy", "seed", "baseline", "gpu",
  "result": CompareResult.to_json(), "figures": {output: error_figures(...)}}`` (``figures`` only for
  failing float outputs)
* ``PrecisionRecord`` ``{"kind": "precision", "pattern", "precision", "passed": bool (optional), "report":
  PrecisionCheck.to_json(), "network": [scope rows]}`` (verify/precision.py; a ``LayerReport.to_json()`` with every
  node is read too, its statuses ``ok/mismatch/unverifiable/fixed``, the constrained nodes selected by the pattern)
* ``LayerwiseRecord`` ``{"kind": "layerwise", "model", "backend", "policy", "seed", "note", "threshold", "jump",
  "found", "first": {tensor row} | null, "tensors": [{tensor row}, ...]}``: a layerwise comparison
  (:func:`pytest_trt.report.plots.layerwise_record` of a ``Divergence``). Tensor rows, in
  topological order: ``{"tensor", "node", "canonical", "op_type", "index", "precision" (planned), "compute",
  "available", "max_abs", "rel" (max abs error / max |reference|), "jump", "divergent", "nonfinite"}``;
  ``first`` also has ``"module"`` and ``"module_class"``.
* ``ParserRecord`` ``{"kind": "parser", <ParserCheck.to_json()>, "message", "explicit": bool (optional)}``
* ``LedgerRecord`` ``{"kind": "ledger", "model", "policy", "backend", "ledger": Ledger.to_json(), "auto": bool
  (optional)}``

Every kind may carry ``"examples": n`` when condensed (``report/condense.py``).
"""

from __future__ import annotations

import datetime
import json
import platform
from pathlib import Path
from typing import Any

import pytest

from .._version import __version__
from ..cache.remote import CacheStats
from ..core import environment
from ..core.records import (
    AccuracyRecord,
    EngineRecord,
    LayerwiseRecord,
    LedgerRecord,
    ParserRecord,
    RealizedRecord,
)
from .files import write_atomically
from .outcomes import CAUGHT_VERDICTS, caught_in_test, checked_nothing, checked_something, verdict_text
from .rows import (
    accuracy_rows,
    baseline_fallbacks,
    caught,
    engine_counts,
    ledger_rows,
    parser_promotions,
    parser_rows,
    precision_rows,
    records_of,
    result_records,
    tolerance_bound,
)

SCHEMA_VERSION = 11


def session_metadata(session) -> dict[str, Any]:
    """What produced the results: versions, GPU, backend and why, run-wide options."""
    s = session.settings
    gpus = [{"name": g.name, "compute_capability": g.compute_capability, "driver": g.driver,
             "memory_mib": g.memory_mib, "uuid": getattr(g, "uuid", "") or None} for g in environment.gpus()]
    return {
        "pytest_trt": __version__,
        "pytest": pytest.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "libraries": dict(environment.library_versions()),
        "gpu": environment.gpu_summary(),
        "gpus": gpus,
        "gpu_assignment": getattr(session, "gpu_assignment", None),
        "backend": session.backend.name,
        "backend_reason": session.backend_reason,
        "backend_disclaimer": session.backend.disclaimer,
        "precision": "as-is" if s.as_is else s.precision,
        "precision_source": s.precision_source,
        "as_is": bool(s.as_is),
        "typing": s.typing,
        "seed": s.seed,
        "baseline_provider": s.baseline_provider,
        "atol": s.atol,
        "rtol": s.rtol,
        "keep_fp32": list(s.keep_fp32),
        "cache_dir": str(s.cache_dir),
        "rebuild": bool(s.rebuild),
        "remote_cache": _remote_metadata(session),
        "fingerprint": fingerprint_of(session),
    }


def fingerprint_of(session) -> dict[str, Any] | None:
    """The session's environment fingerprint (:attr:`TrtSession.fingerprint
    <pytest_trt.run.session.TrtSession.fingerprint>`)."""
    return session.fingerprint


def _remote_metadata(session) -> dict[str, Any] | None:
    remote = session.opened_remote
    if remote is None:
        return None
    return {"url": remote.url, "mode": remote.mode, "trusted_key_ids": sorted(remote.trusted)}


def cache_summary(session) -> dict[str, Any]:
    """The summary's cache figures (zeros when the session never opened the cache)."""
    stats = session.cache_stats() if hasattr(session, "cache_stats") else CacheStats()
    return {"local_hits": stats.local_hits, "cache_builds": stats.builds, "remote_hits": stats.remote_hits,
            "remote_misses": stats.remote_misses, "remote_rejected": stats.remote_rejected,
            "remote_uploads": stats.remote_uploads, "remote_bytes": stats.remote_bytes,
            "remote_requests": stats.remote_requests, "cache_seconds_saved": round(stats.seconds_saved, 4),
            "cache_evictions": stats.evictions, "cache_evicted_bytes": stats.evicted_bytes}


def _jsonable_ratio(x):
    if x is None:
        return None
    return "inf" if x == float("inf") else round(x, 6)


def entry_of_test(res: dict) -> dict[str, Any]:
    """One test's entry of ``tests`` from its collected records."""
    single = [res]
    parser = [{k: v for k, v in rec.to_json().items() if k not in ("kind", "message")}
              for _, rec in records_of(single, ParserRecord)]
    fallbacks = [{k: v for k, v in f.items() if k != "tests"} for f in baseline_fallbacks(single)]
    return {"nodeid": res["nodeid"], "outcome": res.get("outcome"), "verdict": verdict_text(res),
            "checked": checked_something(res.get("records")), "message": res.get("message"), "expected_failure": res.get("expected_failure"),
            "engines": [_engine_entry(rec) for _, rec in records_of(single, EngineRecord)],
            "accuracy": [_accuracy_entry(rec) for _, rec in records_of(single, AccuracyRecord)],
            "precision": _precision_entries(single),
            "layerwise": [{k: v for k, v in rec.to_json().items() if k != "kind"}
                          for _, rec in records_of(single, LayerwiseRecord)],
            "parser": parser, "baseline_fallbacks": fallbacks,
            "ledgers": [{"auto": bool(rec.auto), **rec.ledger} for _, rec in records_of(single, LedgerRecord)],
            "realized": list(dict.fromkeys(rec.engine for _, rec in records_of(single, RealizedRecord)))}


def _engine_entry(rec: EngineRecord) -> dict[str, Any]:
    return {"model": rec.model, "policy": rec.policy, "backend": rec.backend, "cache_hit": bool(rec.cache_hit),
            "build_seconds": float(rec.build_seconds or 0.0), "key": rec.key, "gpu": rec.gpu, "via": rec.via}


def _accuracy_entry(rec: AccuracyRecord) -> dict[str, Any]:
    figures = rec.figures or {}
    outputs = []
    for name, out in rec.outputs.items():
        entry = {"name": name, **{k: v for k, v in out.items() if k != "name"}}
        ratio, binding = tolerance_bound(out)
        entry["tolerance_ratio"] = _jsonable_ratio(ratio)
        entry["binding"] = binding
        if name in figures:
            entry["figures"] = figures[name]
        outputs.append(entry)
    return {"model": rec.model, "backend": rec.backend, "policy": rec.policy, "seed": rec.seed,
            "baseline": rec.baseline, "gpu": rec.gpu, "passed": rec.passed, "precision": rec.precision,
            "no_check": rec.no_check, "examples": rec.count, "criterion": rec.criterion,
            "fingerprint": rec.fingerprint, "outputs_file": rec.outputs_file, "outputs": outputs}


def realized_maps(results: list[dict]) -> dict[str, dict[str, Any]]:
    """``{"<backend>:<plan>": {"model", "model_sha256", "plan", "policy", "backend", "source", "nodes"}}``:
    the realized precision of every engine the session used, once each (the first map recorded)."""
    found: dict[str, dict[str, Any]] = {}
    for _, rec in records_of(results, RealizedRecord):
        if rec.nodes is not None and rec.engine not in found:
            found[rec.engine] = {"model": rec.model, "model_sha256": rec.model_sha256, "plan": rec.plan,
                                 "policy": rec.policy, "backend": rec.backend, "source": rec.source,
                                 "nodes": dict(rec.nodes)}
    return found


def _precision_entries(results: list[dict]) -> list[dict[str, Any]]:
    return [{"pattern": row["pattern"], "precision": row["precision"], "passed": row["passed"],
             "source": row["source"], "typing": row["typing"], "emulated": row["emulated"],
             "counts": row["counts"], "evidence": row["evidence"], "nodes": row["constrained"], "notes": row["notes"]}
            for row in precision_rows(results)]


def build_report(session, results, exitstatus=None) -> dict[str, Any]:
    """The whole report as a dict (see the module docstring for the schema)."""
    rows = accuracy_rows(results)
    prec = precision_rows(results)
    counts = engine_counts(results)
    parser = parser_rows(results)
    fallbacks = baseline_fallbacks(results)
    ledgers = ledger_rows(results)
    outcomes: dict[str, int] = {}
    for res in results:
        outcomes[res.get("outcome") or "?"] = outcomes.get(res.get("outcome") or "?", 0) + 1
    return {
        "schema_version": SCHEMA_VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "exitstatus": None if exitstatus is None else int(exitstatus),
        "session": session_metadata(session),
        "summary": {
            "tests": len(results), "outcomes": outcomes,
            "passed_unchecked": sum(1 for res in results if checked_nothing(res)),
            **{f"{outcome}_caught_in_test": sum(1 for res in results if res.get("outcome") == outcome
                                                and caught_in_test(res)) for outcome in CAUGHT_VERDICTS},
            # caught: failed as a negative control expected (xfail with pytest-trt's verdict), or inside a
            # test that passed (it caught the failure itself), counted apart, so that *_failed is zero on a green run
            "outputs": len(rows), "outputs_failed": _failed(rows), "outputs_caught": _caught(rows),
            "precision_checks": len(prec), "precision_checks_failed": _failed(prec),
            "precision_checks_caught": _caught(prec),
            "engines_built": counts["built"], "engines_reused": counts["reused"], "engine_uses": counts["uses"],
            "engine_session_reuses": counts["session_reuses"],
            "build_seconds": counts["build_seconds"],
            "parser_checks": len(parser), "parser_checks_failed": _failed(parser),
            "parser_checks_caught": _caught(parser),
            "parser_promotions": len(parser_promotions(parser)),
            "baseline_fallbacks": len(fallbacks), "baseline_fallback_nodes": sum(len(f["nodes"]) for f in fallbacks),
            "ledgers": len(ledgers), "ledgers_timed": sum(1 for row in ledgers if row["ledger"].get("time_source")),
            **cache_summary(session),
        },
        "tests": [_extended(session, entry_of_test(res), res) for res in results],
        "realized": realized_maps(results),
        "history": _history(session),
    }


def _history(session) -> dict[str, Any] | None:
    history = getattr(session, "history", None)
    return None if history is None else history.to_json()


def _failed(rows: list[dict]) -> int:
    """Rows (outputs, precision or parser checks) that failed, not counting caught failures (:func:`caught`)."""
    return sum(1 for r in rows if not r.get("passed") and not caught(r))


def _caught(rows: list[dict]) -> int:
    """Rows that failed where the failure was caught: a negative control (``expected_failure.verdict ==
    "caught"``) or a test that passed (:func:`~pytest_trt.report.rows.caught_by_test`)."""
    return sum(1 for r in rows if caught(r))


def _extended(session, entry: dict[str, Any], res: dict) -> dict[str, Any]:
    """The entry as plugins extend it (the ``pytest_trt_report_test`` hook, :mod:`pytest_trt.glue.hookspec`)."""
    extend = getattr(session, "extend_test_entry", None)
    if extend is not None:  # hook implementations get the records' JSON forms (dicts with a "kind")
        extend(entry, [rec.to_json() for rec in result_records(res)])
    return entry


def _clean(value):
    """Non-finite floats as strings, so the file is strict JSON whatever a record holds."""
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def clean(value):
    """``value`` (a report, or any part of one) as strict JSON values: non-finite floats as strings."""
    return _clean(value)


def render_json(session, results, exitstatus=None) -> str:
    """The report as JSON text (strict JSON: non-finite numbers as strings)."""
    data = _clean(build_report(session, results, exitstatus))
    return json.dumps(data, indent=1, allow_nan=False, default=str) + "\n"


def write_json_report(path, session, results, exitstatus=None) -> Path:
    """Write the report to ``path`` atomically (a reader never sees half a file; on failure no
    temporary file is left and the OSError is raised); returns the path."""
    return write_atomically(Path(path), render_json(session, results, exitstatus))


__all__ = ["SCHEMA_VERSION", "build_report", "clean", "entry_of_test", "fingerprint_of", "realized_maps", "render_json",
           "session_metadata", "write_json_report"]
