"""Every rank gives a different shape for one tensor and does not catch the error."""
import numpy as np

import mpirep

mpirep.init()
mpirep.allreduce(np.zeros(mpirep.rank() + 2), name="grads/dense_kernel")
