"""What the projections price: the gradients of three image models and the compute time of one
training step on one GPU, and the scaling Horovod published for them.

Gradients: the trainable variables of tf.keras.applications.<Model>(weights=None), 1,000
classes, TensorFlow 2.21.0 (benchmarks/resnet50_shapes.py, keras_tensors.py), as float32, in
backprop order (the last layer first).

Compute per step: 64 images / the single-GPU rate TensorFlow published for an NVIDIA Tesla P100
(DGX-1, synthetic data, batch 64 per GPU, May 2017), "Details for NVIDIA DGX-1 (NVIDIA Tesla
P100)", https://github.com/tensorflow/docs/blob/master/site/en/r1/guide/performance/benchmarks.md
(no ResNet-101 there, so ResNet-101 is left out).

Horovod's figures: https://github.com/horovod/horovod/blob/master/docs/benchmarks.rst, "128
servers with 4 Pascal GPUs each connected by RoCE-capable 25 Gbit/s network. Horovod achieves 90%
scaling efficiency for both Inception V3 and ResNet-101, and 68% scaling efficiency for VGG-16"
(tf_cnn_benchmarks, batch 64 per GPU).
"""
from dataclasses import dataclass

from keras_tensors import INCEPTION_V3, VGG16
from measurements import RESNET50_TENSOR_BYTES

BATCH = 64
# The backward pass is taken as 2/3 of a step's compute (about twice the forward pass): an
# assumption of this model, not a measurement.
BACKWARD_FRACTION = 2 / 3


@dataclass(frozen=True)
class Workload:
    name: str
    tensor_bytes: list  # backprop order
    p100_images_per_second: float
    horovod_512_efficiency: float | None  # 128 hosts x 4 GPUs, 25 Gbit/s

    @property
    def gradient_bytes(self):
        return sum(self.tensor_bytes)

    @property
    def compute_seconds(self):
        return BATCH / self.p100_images_per_second


WORKLOADS = [
    Workload("ResNet-50", RESNET50_TENSOR_BYTES, 219, None),
    Workload("Inception V3", [4 * n for n in reversed(INCEPTION_V3)], 142, 0.90),
    Workload("VGG-16", [4 * n for n in reversed(VGG16)], 154, 0.68),
]
