"""Collectives on numpy arrays, blocking and asynchronous.

Every function submits the array to the core's background thread and returns at once (the
``*_async`` forms) or after waiting for the result. Results are new arrays; inputs are only read.
An unnamed operation gets a name from a counter per collective and process set, so ranks must
issue unnamed operations in the same order; named operations may be issued in any order, and a
name is scoped to its process set (mpirep/_naming.py).
"""

import numpy as np

from mpirep import _naming, session
from mpirep._naming import core_name
from mpirep._core_loader import core
from mpirep.errors import InvalidArgumentError, MpirepError, UnsupportedError


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
    """An operation in flight whose result is not simply its output array (a group, alltoall's
    received splits); pass it to :func:`poll` or :func:`synchronize`. An operation whose result
    is its output array returns the core's own handle, which answers the same calls and has a
    ``name`` too. Dropping either (or the input array) before the operation ends is safe: the
    core keeps the input alive."""

    __slots__ = ("_native", "_finish", "name")

    def __init__(self, native, finish, name):
        self._native = native
        self._finish = finish
        self.name = name

    def poll(self):
        return self._native.poll()

    def synchronize(self):
        return self._finish(self._native)


def poll(handle):
    """Whether the operation has finished (successfully or not); never blocks."""
    return handle.poll()


def synchronize(handle):
    """Waits for the operation and returns its result, or raises its error."""
    return handle.synchronize()


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


def submit(collective, x, core_name, op=0, root_rank=0, prescale=1.0, postscale=1.0, splits=None,
           process_set=0, group_size=0, new_set_ranks=None, removed_set=0, group="", blocking=False):
    """Submits to the core under ``core_name``, the name as the core knows it
    (mpirep/_naming.py); returns the core's handle, which has that name. `op`: a code.
    `blocking`: the caller synchronizes at once; the call returns when the operation has ended,
    this thread having run the core's rounds meanwhile, which saves two thread hand-offs. The
    core converts ``x`` to a C-contiguous array and looks its dtype up (``_dtype_code``)."""
    session._require_init()
    native = core()
    return native.submit(  # positional: keyword parsing costs microseconds here
        native.COLLECTIVES[collective], core_name, x, op, int(root_rank), float(prescale),
        float(postscale), splits, int(process_set), group_size, new_set_ranks, removed_set, group,
        blocking,
    )


def _output(native):
    """Waits, raises the operation's error, or returns its output array."""
    return native.result()


def _output_and_splits(native):
    return native.result(), np.asarray(native.received_splits(), dtype=np.int64)


def _wait(native):
    """Waits and raises the operation's error, for operations without an output array."""
    native.wait()


def _last_joined_rank(native):
    native.wait()
    return native.last_joined_rank()


def _new_process_set(native):
    native.wait()
    return native.new_process_set()


_op_codes = None


def _op_code(op):
    """The core's code for a reduction op, given as a constant (``mpirep.Sum``) or a name; None
    is Average."""
    global _op_codes
    if _op_codes is None:
        ops = core().REDUCE_OPS
        _op_codes = {**{code: code for code in ops.values()}, **ops, None: ops["Average"]}
    try:
        return _op_codes[op]
    except (KeyError, TypeError):
        raise InvalidArgumentError(f"rank {session.rank()}: unknown reduction op {op!r}") from None


def allreduce_async(x, op=None, name=None, prescale_factor=1.0, postscale_factor=1.0, process_set=0):
    """Starts reducing ``x`` over all ranks (of ``process_set``: an id from
    :func:`add_process_set`, 0 for all ranks); every rank gets the result. ``op`` defaults to
    Average (integer average is the floor of the mean). ``prescale_factor`` multiplies each
    input before the reduction, ``postscale_factor`` the result."""
    return _submit_allreduce(x, op, name, prescale_factor, postscale_factor, process_set, False)


def allreduce(x, op=None, name=None, prescale_factor=1.0, postscale_factor=1.0, process_set=0):
    # The blocking forms skip the Handle: the submission returns once the operation has ended.
    return _output(_submit_allreduce(x, op, name, prescale_factor, postscale_factor, process_set,
                                     True))


def _submit_allreduce(x, op, name, prescale_factor, postscale_factor, process_set, blocking):
    """submit for an allreduce, on the core's own short path (training submits one per
    gradient, often hundreds per step, so each Python call here counts): the core converts the
    scale factors and the process set itself."""
    session._require_init()
    code = _op_code(op)  # before naming: a refused op takes no number from the unnamed ones
    return core().submit_allreduce(x, core_name("allreduce", name, process_set), code,
                                   prescale_factor, postscale_factor, process_set, blocking)


def grouped_allreduce_async(xs, op=None, name=None, prescale_factor=1.0, postscale_factor=1.0,
                            process_set=0):
    """Starts allreduces of every array in ``xs`` together (they fuse into as few ring passes as
    the fusion threshold allows). Returns one handle for the list. Ranks that pass lists of
    different lengths all get a MismatchError."""
    base = core_name("grouped_allreduce", name, process_set)
    handles = [group_member_allreduce_async(x, op, f"{base}.{i}", prescale_factor, postscale_factor,
                                            process_set, len(xs), base)
               for i, x in enumerate(xs)]
    return Handle(_GroupNative(handles), _group_outputs, base)


def group_member_allreduce_async(x, op, core_name, prescale_factor, postscale_factor, process_set,
                                 group_size, group):
    """One allreduce, named ``core_name`` in the core, of the group named ``group``, of
    ``group_size`` members (the core checks that every rank's group has that many; if not, every
    member fails on every rank)."""
    return submit("allreduce", x, core_name, _op_code(op), 0, prescale_factor,
                  postscale_factor, None, process_set, group_size, None, 0, group)


class _GroupNative:
    """Looks like a core handle to poll/synchronize; finishes when all members have."""

    def __init__(self, handles):
        self.handles = handles

    def poll(self):
        return all(h.poll() for h in self.handles)


def _group_outputs(native):
    """Every member's output; if some failed, raises the first error once all have ended, so
    that the group's names are free again when it raises."""
    outputs, first_error = [], None
    for h in native.handles:
        try:
            outputs.append(synchronize(h))
        except MpirepError as error:
            first_error = first_error or error
    if first_error is not None:
        raise first_error
    return outputs


def grouped_allreduce(xs, op=None, name=None, prescale_factor=1.0, postscale_factor=1.0, process_set=0):
    return synchronize(grouped_allreduce_async(xs, op, name, prescale_factor, postscale_factor, process_set))


def allgather_async(x, name=None, process_set=0):
    """Starts concatenating every rank's ``x`` along the first dimension, in rank order. The
    first dimension may differ between ranks; the others must match."""
    return submit("allgather", x, core_name("allgather", name, process_set), process_set=process_set)


def allgather(x, name=None, process_set=0):
    return _output(submit("allgather", x, core_name("allgather", name, process_set),
                          process_set=process_set, blocking=True))


def broadcast_async(x, root_rank, name=None, process_set=0):
    """Starts sending ``root_rank``'s ``x`` to every rank (all ranks pass the same shape). In a
    process set, ``root_rank`` counts the set's ranks."""
    return submit("broadcast", x, core_name("broadcast", name, process_set), root_rank=root_rank,
                  process_set=process_set)


def broadcast(x, root_rank, name=None, process_set=0):
    return _output(submit("broadcast", x, core_name("broadcast", name, process_set),
                          root_rank=root_rank, process_set=process_set, blocking=True))


def reducescatter_async(x, op=None, name=None, process_set=0, prescale_factor=1.0,
                        postscale_factor=1.0):
    """Starts reducing ``x`` over all ranks and giving each rank a block of rows of the result:
    rank r gets rows [start_r, start_r + rows_r), where the first dim0 % size ranks get one
    row more than the others. ``prescale_factor`` multiplies each input before the reduction,
    ``postscale_factor`` the result, as for allreduce."""
    code = _op_code(op)  # before naming: a refused op takes no number from the unnamed ones
    return submit("reducescatter", x, core_name("reducescatter", name, process_set), code, 0,
                  prescale_factor, postscale_factor, None, process_set)


def reducescatter(x, op=None, name=None, process_set=0, prescale_factor=1.0, postscale_factor=1.0):
    return synchronize(reducescatter_async(x, op, name, process_set, prescale_factor,
                                           postscale_factor))


def reduce_async(x, root_rank=0, op=None, name=None, prescale_factor=1.0, postscale_factor=1.0,
                 process_set=0):
    """Starts reducing ``x`` over all ranks (of ``process_set``) with ``op`` (default Average)
    onto ``root_rank`` (in a process set, counted among the set's ranks). The root's result is
    the reduction; every other rank's is zeros of ``x``'s shape and dtype (MPI leaves it
    undefined). Every rank passes the same shape, op, root and scale factors, which act as for
    allreduce."""
    code = _op_code(op)  # before naming: a refused op takes no number from the unnamed ones
    return submit("reduce", x, core_name("reduce", name, process_set), code, root_rank,
                  prescale_factor, postscale_factor, None, process_set)


def reduce(x, root_rank=0, op=None, name=None, prescale_factor=1.0, postscale_factor=1.0,
           process_set=0):
    code = _op_code(op)
    return _output(submit("reduce", x, core_name("reduce", name, process_set), code, root_rank,
                          prescale_factor, postscale_factor, None, process_set, blocking=True))


def alltoall_async(x, splits=None, name=None, process_set=0):
    """Starts sending ``splits[i]`` consecutive rows of ``x`` to rank i and receiving what
    every rank sends here, concatenated in rank order. Without splits, the first dimension is
    divided evenly. The result is the array, or ``(array, received_splits)`` when splits were
    given."""
    array, split_list = _alltoall_input(x, splits, process_set)  # refused before it takes a number
    return _alltoall_handle(submit("alltoall", array, core_name("alltoall", name, process_set),
                                   splits=split_list, process_set=process_set), splits)


def submit_alltoall(x, splits, core_name, process_set):
    """alltoall_async under ``core_name``, the name as the core knows it."""
    array, split_list = _alltoall_input(x, splits, process_set)
    return _alltoall_handle(submit("alltoall", array, core_name, splits=split_list,
                                   process_set=process_set), splits)


def _alltoall_input(x, splits, process_set):
    """``x`` as an array, and the rows it sends to each rank."""
    array = np.asarray(x)
    size = process_set_size(process_set)
    if splits is not None:
        return array, np.asarray(splits, dtype=np.int64).reshape(-1).tolist()
    if array.ndim == 0 or array.shape[0] % size:
        raise InvalidArgumentError(
            f"rank {session.rank()}: alltoall without splits needs a first dimension "
            f"divisible by the number of ranks ({size}), got shape {array.shape}"
        )
    return array, [array.shape[0] // size] * size


def _alltoall_handle(native, splits):
    return native if splits is None else Handle(native, _output_and_splits, native.name)


def alltoall(x, splits=None, name=None, process_set=0):
    return synchronize(alltoall_async(x, splits, name, process_set))


def join():
    """Says this rank has run out of work, and waits until every rank has said so. Meanwhile
    this rank takes part in the other ranks' collectives with zeros (allreduce, reduce,
    reducescatter) or no rows (allgather); Average still divides by the number of all ranks.
    Alltoall, and a broadcast or reduce whose root has joined, fail while a rank has joined.
    Returns the rank that joined last. Unnamed operations are numbered from zero again
    afterwards, so ranks that issued different numbers of them before joining line up again."""
    last = _last_joined_rank(submit("join", np.zeros(0, np.uint8), core_name("join"), blocking=True))
    _naming.restart_numbering()
    return last


def add_process_set(ranks):
    """Creates a process set of ``ranks`` and returns its id, for the ``process_set`` argument
    of every collective. Collective over all ranks, which must pass the same ranks. Inside the
    set, ranks are numbered in increasing order from 0."""
    members = sorted(int(r) for r in ranks)
    return _new_process_set(submit("add_process_set", np.zeros(0, np.uint8),
                                   core_name("add_process_set"), new_set_ranks=members,
                                   blocking=True))


def remove_process_set(process_set):
    """Removes a process set made by :func:`add_process_set`. Collective over all ranks."""
    _wait(submit("remove_process_set", np.zeros(0, np.uint8), core_name("remove_process_set"),
                 removed_set=int(process_set), blocking=True))


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
    _wait(submit("barrier", np.zeros(0, np.uint8), core_name("barrier"), blocking=True))
