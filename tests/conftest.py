"""Test-suite setup.

pytester's in-process runs snapshot ``sys.modules`` and drop modules first imported
inside the inner run; re-importing onnx's C extension in the same process then aborts
(protobuf registers its descriptors twice). Importing the C-extension libraries here,
before any inner run, keeps them in the snapshot. This is about our test harness only:
the plugin itself still imports them lazily (see test_import_leaves_tensorrt_and_onnxruntime_out).
"""

import hypothesis  # noqa: F401  (its pytest plugin would otherwise import it in every inner run)
import numpy  # noqa: F401
import onnx  # noqa: F401

try:
    import onnxruntime  # noqa: F401
except ImportError:  # the suite needs it, but let collection report that clearly
    pass

pytest_plugins = ["pytester"]
