"""Collectives inside XLA-compiled functions (``tf.function(jit_compile=True)``, and Keras's
``jit_compile``, which Keras 3 turns on by itself where a GPU is listed).

Under XLA a collective becomes one MpirepXlaCollective op per group, which the XLA kernels
(native/bindings/tensorflow/mpirep_tf_xla.cc) lower to one custom call into the core on the host.
Where that cannot happen, the collective raises :class:`XlaCollectiveError` while the function is
traced, naming the fix, instead of TensorFlow's "No registered OpKernel" at the first step:

- on TensorFlow releases whose XLA kernels do not build (docs/tensorflow.md, "Limits");
- for a function compiled for an accelerator: the custom call exists for the host only;
- for allgather, alltoall and reducescatter, whose output shapes depend on the other ranks,
  and for join;
- when TensorFlow compiled with XLA before ``init()`` loaded the kernels: tf2xla takes in the
  kernels it knows once per process.
"""

import ctypes

import tensorflow as tf
from tensorflow.python.framework import kernels
from tensorflow.python.ops import control_flow_util

from mpirep._core_loader import core
from mpirep.tensorflow import _op_library

_ops = None
_unavailable = None  # why the XLA kernels could not be loaded, once tried
_registered = False  # tf2xla has taken in our kernel


class XlaCollectiveError(NotImplementedError):
    """A collective inside an XLA-compiled function that mpirep cannot compile there."""

    # AutoGraph re-raises an error from a traced function as its own type only when that type
    # keeps Exception's constructor; otherwise the user would get a StagingError.
    __init__ = Exception.__init__


def load():
    """Builds (if needed) and loads the XLA kernels; called by ``init()``, before TensorFlow can
    first compile with XLA, and at the latest when a collective is traced for XLA (a program
    that started with ``mpirep.init()``). A failure is remembered and reported only when a
    jit-compiled function holds a collective."""
    global _ops, _unavailable
    if _ops is not None or _unavailable is not None:
        return
    try:
        path = str(_op_library.library_path(_op_library.XLA))
        module = tf.load_op_library(path)
        mismatch = ctypes.CDLL(path).mpirep_tf_xla_set_api(
            ctypes.c_void_p(core().api_table_address()))
        if mismatch:
            raise RuntimeError(f"the XLA kernels were built for another C API version than the "
                               f"core's ({mismatch})")
        _ops = module
    except Exception as error:  # optional: any failure leaves jit-free training working
        _unavailable = f"{type(error).__name__}: {str(error).strip()[-1500:]}"


def tracing_for_xla():
    """Whether the ops being built now belong to a function that XLA will compile."""
    if tf.executing_eagerly():
        return False
    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def accelerator_listed():
    """Whether TensorFlow places work on a device other than the CPU by default: where a jit-
    compiled step runs unless the user pins it to the CPU."""
    return any(d.device_type != "CPU" for d in tf.config.list_logical_devices())


def unavailable_reason(device=""):
    """Why mpirep's collectives cannot be compiled by XLA for ``device`` (an op's device, "" for
    TensorFlow's default placement), or None when they can."""
    load()  # in time unless TensorFlow has compiled with XLA already (checked below)
    if _ops is None:
        return f"mpirep's XLA kernels could not be built for TensorFlow {tf.__version__}"
    device_type = tf.DeviceSpec.from_string(device).device_type if device else None
    if device_type not in (None, "CPU") or (device_type is None and accelerator_listed()):
        return ("mpirep's XLA collectives run on the host (CPU) only, and this function is "
                "compiled for an accelerator")
    if not _kernels_registered():
        return ("TensorFlow compiled a function with XLA before mpirep's XLA kernels were "
                "loaded, and takes in XLA kernels once per process: call hvd.init() first")
    return None


def _kernels_registered():
    """Whether tf2xla took in our kernel, or has not taken in any kernel yet (then it will)."""
    global _registered
    if not _registered:
        def jit_devices(op):
            return {k.device_type for k in kernels.get_registered_kernels_for_op(op).kernel}
        _registered = ("XLA_CPU_JIT" in jit_devices("MpirepXlaCollective")
                       or "XLA_CPU_JIT" not in jit_devices("Identity"))
    return _registered


_FIX = ("Compile the step without XLA (jit_compile=False in model.compile or tf.function), "
        "or with Keras fit pass one of hvd.callbacks (e.g. BroadcastGlobalVariablesCallback), "
        "which turns XLA off where mpirep cannot compile its collectives.")


def check(collective, tensors):
    """Raises XlaCollectiveError unless ``collective`` of ``tensors`` can join the XLA
    computation being traced."""
    traits = core().COLLECTIVE_TRAITS[collective]
    if traits["joins"]:
        raise XlaCollectiveError(f"mpirep's {collective} cannot be compiled by XLA: call it "
                                 f"outside the jit-compiled function. {_FIX}")
    if not traits["compiles"]:
        raise XlaCollectiveError(
            f"mpirep's {collective} cannot be compiled by XLA: its output shape depends on the "
            f"other ranks, and XLA needs static shapes. Call it outside the jit-compiled "
            f"function. {_FIX}")
    reason = unavailable_reason(tensors[0].op.device if tensors else "")
    if reason is not None:
        detail = f" ({_unavailable})" if _unavailable and _ops is None else ""
        raise XlaCollectiveError(f"{reason}{detail}. {_FIX}")


def run_group(collective, tensors, names, group="", reduce_op=0, root_rank=0, prescale=1.0,
              postscale=1.0, process_set=0):
    """One custom call for all of ``tensors``: the core receives them at once, as one group
    when there are several, and fuses them."""
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    check(collective, tensors)
    return _ops.mpirep_xla_collective(
        tensors, names=list(names), group=group if len(tensors) > 1 else "",
        collective=core().COLLECTIVES[collective], reduce_op=reduce_op, root_rank=root_rank,
        prescale=prescale, postscale=postscale, process_set=process_set)
