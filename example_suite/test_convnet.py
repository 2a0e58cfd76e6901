"""A convolutional model in the session precision: Conv, Resize, pooling, Gemm head."""

import pytest

pytestmark = pytest.mark.trt(model="models/convnet.onnx", shapes={"image": (4, 3, 32, 32)},
                             val_range={"image": (0.0, 1.0)})


def test_convnet_logits(trt):
    result = trt.check(min_cosine=0.999)
    assert result.passed


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_convnet_several_input_sets(trt, seed):
    trt.check(trt.feeds(seed=seed))
