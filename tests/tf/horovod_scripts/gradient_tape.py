# A Keras 2 Horovod script: a custom tf.function loop with DistributedGradientTape.
import numpy as np
import tensorflow as tf
import horovod.tensorflow as hvd

from linear_data import FEATURES, rank_data, sgd_reference

STEPS, LR = 4, 0.05

hvd.init()
x, y = rank_data(hvd.rank())
model = tf.keras.Sequential([tf.keras.layers.Dense(1, kernel_initializer="zeros")])
model.build((None, FEATURES))
opt = tf.optimizers.SGD(LR)
loss = tf.losses.MeanSquaredError()


@tf.function
def training_step(first_batch):
    with tf.GradientTape() as tape:
        loss_value = loss(y, model(x, training=True))
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss_value, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    # Horovod's advice: broadcast after the first step, once the optimizer has its variables
    if first_batch:
        hvd.broadcast_variables(model.variables, root_rank=0)
        hvd.broadcast_variables(opt.variables(), root_rank=0)
    return loss_value


for step in range(STEPS):
    training_step(step == 0)

kernel, bias = (w.numpy() for w in model.weights)
want_kernel, want_bias = sgd_reference(hvd.size(), [LR] * STEPS)
np.testing.assert_allclose(kernel, want_kernel, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(bias, want_bias, rtol=1e-5, atol=1e-6)
assert abs(float(opt.lr) - LR) < 1e-7
if hvd.rank() == 0:
    print("gradient_tape: ok")
