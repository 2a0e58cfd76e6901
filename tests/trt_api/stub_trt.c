/* Stub TensorRT libraries for the trt_api tier (tests/trt_api/trt_api_support.py).
 *
 * The TensorRT Python bindings (tensorrt_bindings/tensorrt.so, tensorrt_rtx_bindings/tensorrt_rtx.so)
 * need only these nine C entry points from TensorRT's libraries (nm -D --undefined-only); every other
 * call goes through C++ virtual interfaces. Built once per library name (libnvinfer.so.10,
 * libnvonnxparser.so.11, libtensorrt_rtx.so.1, ...), each copy defining all nine, they let the real
 * bindings import on a machine without TensorRT or a GPU. Every factory returns NULL, so nothing runs:
 * trt.Builder(logger) raises "factory function returned nullptr". Classes, enums, properties and
 * docstrings (signatures) are the real ones.
 */
void *createInferBuilder_INTERNAL(void *logger, int version) { return 0; }
void *createInferRefitter_INTERNAL(void *engine, void *logger, int version) { return 0; }
void *createInferRuntime_INTERNAL(void *logger, int version) { return 0; }
void *getBuilderPluginRegistry(int capability) { return 0; }
void *getPluginRegistry(void) { return 0; }
void *createNvOnnxParser_INTERNAL(void *network, void *logger, int version) { return 0; }
void *createNvOnnxParserRefitter_INTERNAL(void *refitter, void *logger, int version) { return 0; }
int getNvOnnxParserVersion(void) { return 0; }
int initLibNvInferPlugins(void *logger, const char *ns) { return 0; }
