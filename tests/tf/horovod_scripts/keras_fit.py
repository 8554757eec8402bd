# A Keras 2 Horovod script: Keras's fit with Horovod's callbacks and Keras 2's spellings.
import glob
import os
import sys

import numpy as np
import tensorflow as tf
import horovod.tensorflow.keras as hvd

from linear_data import FEATURES, rank_data, sgd_reference

EPOCHS, LR = 3, 0.1
out = sys.argv[1]

hvd.init()
x, y = rank_data(hvd.rank())
model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(FEATURES,),
                                                   kernel_initializer="zeros")])
opt = tf.keras.optimizers.legacy.SGD(lr=LR)     # Keras 2's legacy optimizer, Keras 2's lr
opt = hvd.DistributedOptimizer(opt)
# Horovod's advice for TF 2: let the optimizer compute the gradients
model.compile(loss="mse", optimizer=opt, experimental_run_tf_function=False)

callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0)]
if hvd.rank() == 0:
    callbacks.append(tf.keras.callbacks.ModelCheckpoint(os.path.join(out, "weights-{epoch}.h5"),
                                                        save_weights_only=True))
    callbacks.append(tf.keras.callbacks.ModelCheckpoint(os.path.join(out, "model-{epoch}.h5")))
model.fit(x, y, batch_size=len(x), epochs=EPOCHS, shuffle=False, callbacks=callbacks,
          verbose=0, workers=1, use_multiprocessing=False, max_queue_size=10)


def batches():
    while True:
        yield x, y


# one more step at half the rate, through Keras 2's generator method
tf.keras.backend.set_value(model.optimizer.lr, LR / 2)
model.fit_generator(batches(), steps_per_epoch=1, epochs=1, verbose=0, workers=1)

kernel, bias = (w.numpy() for w in model.weights)
want_kernel, want_bias = sgd_reference(hvd.size(), [LR] * EPOCHS + [LR / 2])
np.testing.assert_allclose(kernel, want_kernel, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(bias, want_bias, rtol=1e-5, atol=1e-6)
every_rank = hvd.allgather(np.concatenate([kernel.ravel(), bias])[None, :]).numpy()
assert (every_rank == every_rank[0]).all(), every_rank
assert abs(float(model.optimizer.lr) - LR / 2) < 1e-7
if hvd.rank() == 0:
    model.save_weights(os.path.join(out, "final.h5"))
    written = sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, "*")))
    print("keras_fit: ok", " ".join(written))
