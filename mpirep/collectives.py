"""Collectives on numpy arrays, blocking and asynchronous.

Every function submits the array to the core's background thread and returns at once (the
``*_async`` forms) or after waiting for the result. Results are new arrays; inputs are only read.
An unnamed operation gets a name from a per-collective counter, so ranks must issue unnamed
operations in the same order; named operations may be issued in any order.
"""

import itertools

import numpy as np

from mpirep import session
from mpirep._native import core
from mpirep.errors import InvalidArgumentError, UnsupportedError, raise_for_status


def reduce_op(name):
    """The core's code for a reduction op name (``"Sum"``, ``"Average"``, ...)."""
    return core().REDUCE_OPS[name]


def reduce_op_attribute(module, name):
    """For a module's ``__getattr__``: ``mpirep.Sum``, ``mpirep.tensorflow.Average``, ... are the
    codes of the core's reduction ops (common.h), looked up on first use, so that importing the
    module loads no native code. Other names raise AttributeError; lower-case and private ones
    without loading the core."""
    if name[:1].isupper():
        code = core().REDUCE_OPS.get(name)
        if code is not None:
            setattr(module, name, code)  # later lookups skip __getattr__
            return code
    raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")


class Handle:
    """An operation in flight; pass it to :func:`poll` or :func:`synchronize`."""

    __slots__ = ("_native", "_finish", "name")

    def __init__(self, native, finish, name):
        self._native = native
        self._finish = finish
        self.name = name


# Handles not yet synchronized. Holding them keeps each input array alive (the core reads it in
# place) even when the caller drops the handle; finished ones are swept out as the set grows.
_pending = {}
_sweep_at = 64


def _track(handle):
    global _sweep_at
    _pending[id(handle)] = handle
    if len(_pending) >= _sweep_at:
        for key in [k for k, h in _pending.items() if h._native.poll()]:
            del _pending[key]
        _sweep_at = max(64, 2 * len(_pending))


def poll(handle):
    """Whether the operation has finished (successfully or not); never blocks."""
    return handle._native.poll()


def synchronize(handle):
    """Waits for the operation and returns its result, or raises its error."""
    _pending.pop(id(handle), None)
    status, message = handle._native.wait()
    if status != 0:
        raise_for_status(status, message)
    return handle._finish(handle._native)


_counters = {}


def _auto_name(collective, name, process_set=0):
    """Unnamed operations are numbered per collective and process set, so that a set's
    operations, which only its members issue, do not shift the numbering of the others."""
    if name is not None:
        return str(name)
    counter = _counters.setdefault((collective, process_set), itertools.count())
    prefix = f"{collective}.set{process_set}" if process_set else collective
    return f"{prefix}.noname.{next(counter)}"


_dtype_codes = None


def _dtype_code(dtype):
    """The core's code for a numpy dtype, or raises UnsupportedError."""
    global _dtype_codes
    if _dtype_codes is None:
        import ml_dtypes  # noqa: F401  (registers bfloat16 with numpy)

        _dtype_codes = {np.dtype(name): code for name, code in core().DTYPES.items()}
    code = _dtype_codes.get(dtype)
    if code is None:
        supported = ", ".join(core().DTYPES)
        raise UnsupportedError(
            f"rank {session.rank()}: dtype {dtype} is not supported (supported: {supported})"
        )
    return code


def _submit(collective, x, name, op="Sum", root_rank=0, prescale=1.0, postscale=1.0, splits=(),
            process_set=0, group_size=0, new_set_ranks=(), removed_set=0, group=""):
    session._require_init()
    array = np.asarray(x)
    dtype_code = _dtype_code(array.dtype)
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    native = core()
    name = _auto_name(collective, name, process_set)
    handle_native = native.submit(  # positional: keyword parsing costs microseconds here
        native.COLLECTIVES[collective], name, dtype_code, array.reshape(-1).view(np.uint8),
        array.shape, native.REDUCE_OPS[op], int(root_rank), float(prescale), float(postscale),
        splits, int(process_set), group_size, new_set_ranks, removed_set, group,
    )
    return array.dtype, name, handle_native


def _array_result(dtype):
    def finish(native):
        flat, shape = native.take_output()
        return flat.view(dtype).reshape(shape)

    return finish


def _async(collective, x, name, **kwargs):
    dtype, name, native = _submit(collective, x, name, **kwargs)
    handle = Handle(native, _array_result(dtype), name)
    _track(handle)
    return handle


_op_names = None


def _op_name(op):
    """Accepts the op constants (``mpirep.Sum``) and their names."""
    global _op_names
    if _op_names is None:
        _op_names = {code: name for name, code in core().REDUCE_OPS.items()}
        _op_names.update({name: name for name in core().REDUCE_OPS})
    try:
        return _op_names[op]
    except (KeyError, TypeError):
        raise InvalidArgumentError(f"rank {session.rank()}: unknown reduction op {op!r}") from None


def allreduce_async(x, op=None, name=None, prescale_factor=1.0, postscale_factor=1.0, process_set=0):
    """Starts reducing ``x`` over all ranks (of ``process_set``: an id from
    :func:`add_process_set`, 0 for all ranks); every rank gets the result. ``op`` defaults to
    Average (integer average is the floor of the mean). ``prescale_factor`` multiplies each
    input before the reduction, ``postscale_factor`` the result."""
    return _async("allreduce", x, name, op=_op_name(op if op is not None else "Average"),
                  prescale=prescale_factor, postscale=postscale_factor, process_set=process_set)


def allreduce(x, op=None, name=None, prescale_factor=1.0, postscale_factor=1.0, process_set=0):
    return synchronize(allreduce_async(x, op, name, prescale_factor, postscale_factor, process_set))


def grouped_allreduce_async(xs, op=None, name=None, prescale_factor=1.0, postscale_factor=1.0,
                            process_set=0):
    """Starts allreduces of every array in ``xs`` together (they fuse into as few ring passes as
    the fusion threshold allows). Returns one handle for the list. Ranks that pass lists of
    different lengths all get a MismatchError."""
    base = _auto_name("grouped_allreduce", name, process_set)
    handles = [group_member_allreduce_async(x, op, f"{base}.{i}", prescale_factor, postscale_factor,
                                            process_set, len(xs), base)
               for i, x in enumerate(xs)]
    group = Handle(_GroupNative(handles), lambda native: [synchronize(h) for h in native.handles], base)
    _track(group)
    return group


def group_member_allreduce_async(x, op, name, prescale_factor, postscale_factor, process_set,
                                 group_size, group):
    """One allreduce of the group named ``group``, of ``group_size`` members (the core checks
    that every rank's group has that many; if not, every member fails on every rank)."""
    return _async("allreduce", x, name, op=_op_name(op if op is not None else "Average"),
                  prescale=prescale_factor, postscale=postscale_factor, process_set=process_set,
                  group_size=group_size, group=group)


class _GroupNative:
    """Looks like a core handle to poll/synchronize; finishes when all members have."""

    def __init__(self, handles):
        self.handles = handles

    def poll(self):
        return all(h._native.poll() for h in self.handles)

    def wait(self):
        return 0, ""


def grouped_allreduce(xs, op=None, name=None, prescale_factor=1.0, postscale_factor=1.0, process_set=0):
    return synchronize(grouped_allreduce_async(xs, op, name, prescale_factor, postscale_factor, process_set))


def allgather_async(x, name=None, process_set=0):
    """Starts concatenating every rank's ``x`` along the first dimension, in rank order. The
    first dimension may differ between ranks; the others must match."""
    return _async("allgather", x, name, process_set=process_set)


def allgather(x, name=None, process_set=0):
    return synchronize(allgather_async(x, name, process_set))


def broadcast_async(x, root_rank, name=None, process_set=0):
    """Starts sending ``root_rank``'s ``x`` to every rank (all ranks pass the same shape). In a
    process set, ``root_rank`` counts the set's ranks."""
    return _async("broadcast", x, name, root_rank=root_rank, process_set=process_set)


def broadcast(x, root_rank, name=None, process_set=0):
    return synchronize(broadcast_async(x, root_rank, name, process_set))


def reducescatter_async(x, op=None, name=None, process_set=0, prescale_factor=1.0,
                        postscale_factor=1.0):
    """Starts reducing ``x`` over all ranks and giving each rank a block of rows of the result:
    rank r gets rows [start_r, start_r + rows_r), where the first dim0 % size ranks get one
    row more than the others. ``prescale_factor`` multiplies each input before the reduction,
    ``postscale_factor`` the result, as for allreduce."""
    return _async("reducescatter", x, name, op=_op_name(op if op is not None else "Average"),
                  prescale=prescale_factor, postscale=postscale_factor, process_set=process_set)


def reducescatter(x, op=None, name=None, process_set=0, prescale_factor=1.0, postscale_factor=1.0):
    return synchronize(reducescatter_async(x, op, name, process_set, prescale_factor,
                                           postscale_factor))


def alltoall_async(x, splits=None, name=None, process_set=0):
    """Starts sending ``splits[i]`` consecutive rows of ``x`` to rank i and receiving what
    every rank sends here, concatenated in rank order. Without splits, the first dimension is
    divided evenly. The result is the array, or ``(array, received_splits)`` when splits were
    given."""
    array = np.asarray(x)
    size = process_set_size(process_set)
    if splits is None:
        if array.ndim == 0 or array.shape[0] % size:
            raise InvalidArgumentError(
                f"rank {session.rank()}: alltoall without splits needs a first dimension "
                f"divisible by the number of ranks ({size}), got shape {array.shape}"
            )
        split_list = [array.shape[0] // size] * size
    else:
        split_list = np.asarray(splits, dtype=np.int64).reshape(-1).tolist()
    dtype, name, native = _submit("alltoall", array, name, splits=split_list, process_set=process_set)
    as_array = _array_result(dtype)
    if splits is None:
        finish = as_array
    else:
        def finish(n):
            return as_array(n), np.asarray(n.received_splits(), dtype=np.int64)
    handle = Handle(native, finish, name)
    _track(handle)
    return handle


def alltoall(x, splits=None, name=None, process_set=0):
    return synchronize(alltoall_async(x, splits, name, process_set))


def join():
    """Says this rank has run out of work, and waits until every rank has said so. Meanwhile
    this rank takes part in the other ranks' collectives with zeros (allreduce, reducescatter)
    or no rows (allgather); Average still divides by the number of all ranks. Alltoall, and a
    broadcast from a rank that has joined, fail while a rank has joined. Returns the rank that
    joined last. Unnamed operations are numbered from zero again afterwards, so ranks that
    issued different numbers of them before joining line up again."""
    _, name, native = _submit("join", np.zeros(0, np.uint8), None)
    last = synchronize(Handle(native, lambda n: n.last_joined_rank(), name))
    _counters.clear()
    return last


def add_process_set(ranks):
    """Creates a process set of ``ranks`` and returns its id, for the ``process_set`` argument
    of every collective. Collective over all ranks, which must pass the same ranks. Inside the
    set, ranks are numbered in increasing order from 0."""
    members = sorted(int(r) for r in ranks)
    _, name, native = _submit("add_process_set", np.zeros(0, np.uint8), None, new_set_ranks=members)
    return synchronize(Handle(native, lambda n: n.new_process_set(), name))


def remove_process_set(process_set):
    """Removes a process set made by :func:`add_process_set`. Collective over all ranks."""
    _, name, native = _submit("remove_process_set", np.zeros(0, np.uint8), None,
                              removed_set=int(process_set))
    synchronize(Handle(native, lambda _: None, name))


def process_set_ranks(process_set=0):
    """The ranks of a process set, in increasing order."""
    session._require_init()
    ranks = core().process_set_ranks(int(process_set))
    if not ranks:
        raise InvalidArgumentError(f"rank {session.rank()}: unknown process set {process_set}")
    return ranks


def process_set_size(process_set=0):
    return len(process_set_ranks(process_set))


def process_set_rank(process_set=0):
    """This rank's number inside a process set; raises if it is not a member."""
    ranks = process_set_ranks(process_set)
    if session.rank() not in ranks:
        raise InvalidArgumentError(f"rank {session.rank()} is not in process set {process_set}")
    return ranks.index(session.rank())


def barrier():
    """Returns once every rank has called barrier."""
    _, name, native = _submit("barrier", np.zeros(0, np.uint8), None)
    synchronize(Handle(native, lambda _: None, name))
