"""Which rank owns which part of the parameters under ZeroRedundancyOptimizer, and where each
gradient and each parameter sits in the flat buffers that one reducescatter and one allgather
exchange (docs/zero.md, "How a step runs").

A rank owns pieces: element ranges of the flattened variables. Two ways to cut them:
- whole variables, balanced by bytes: a greedy pass gives each variable, largest first, to the
  rank that holds the fewest bytes of its group so far (then of all groups, then the lowest
  rank). Exact for any optimizer, since each variable is updated whole.
- slices: each exchange's flattened variables are cut into equal ranges, one per rank, across
  variable boundaries. Balanced to the element whatever the variables' sizes, for optimizers
  whose update is element-wise.
Every rank computes the same plan from the same shapes, dtypes and order.

Each (group, dtype) is one exchange. Its reducescatter buffer holds, for rank 0, 1, ..., the
flattened gradients of that rank's pieces padded with zeros to the longest rank's length, so
the core's equal blocks are exactly the owners' segments. Its allgather sends each rank's
pieces unpadded (allgather takes different lengths); there every variable's elements are
consecutive, ready to be assigned in one piece."""

from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Piece:
    """Elements [start, stop) of the flattened variable ``index``."""
    index: int
    start: int
    stop: int

    @property
    def size(self):
        return self.stop - self.start


@dataclass
class Exchange:
    """One (group, dtype): ``segments[r]`` lists rank r's pieces in buffer order, ``block`` is
    the padded length of every rank's segment, in elements."""
    dtype: str
    segments: list
    block: int
    name: str

    def length(self, rank):
        return sum(piece.size for piece in self.segments[rank])

    def buffer_parts(self, padded):
        """The exchange's buffer in order: a Piece for each run of one variable's elements (its
        pieces on consecutive ranks are one run where nothing lies between them) and, where
        ``padded`` (the reducescatter's buffer), the length of each rank's padding of zeros.
        Taking whole runs, a gradient is cut only where the buffer really cuts it."""
        parts = []
        for r, segment in enumerate(self.segments):
            for piece in segment:
                last = parts[-1] if parts else None
                if isinstance(last, Piece) and last.index == piece.index and \
                        last.stop == piece.start:
                    parts[-1] = Piece(piece.index, last.start, piece.stop)
                else:
                    parts.append(piece)
            padding = self.block - self.length(r)
            if padded and padding:
                parts.append(padding)
        return parts

    def variable_ranges(self):
        """(variable index, first element in the allgather's output), for each variable of the
        exchange in that output's order."""
        ranges, offset = [], 0
        for run in self.buffer_parts(padded=False):
            ranges.append((run.index, offset))
            offset += run.size
        return ranges


@dataclass
class ShardPlan:
    size: int
    rank: int
    sizes: list            # sizes[i]: variable i's number of elements
    exchanges: list

    @cached_property
    def owned(self):
        """This rank's pieces in the variables' order (the order a plain optimizer builds in)."""
        return sorted((piece for exchange in self.exchanges
                       for piece in exchange.segments[self.rank]),
                      key=lambda piece: (piece.index, piece.start))

    def is_whole(self, piece):
        return piece.start == 0 and piece.stop == self.sizes[piece.index]

    def owned_bytes(self, itemsizes, rank=None):
        rank = self.rank if rank is None else rank
        return sum(piece.size * itemsizes[piece.index]
                   for exchange in self.exchanges for piece in exchange.segments[rank])


def make_plan(sizes, dtypes, itemsizes, size, rank, groups=None, sliced=False):
    """``sizes``, ``dtypes`` (names) and ``itemsizes`` per variable; ``groups`` lists of variable
    indices, each exchanged on its own (default: all in one group); ``sliced`` cuts slices
    instead of whole variables."""
    if groups is None:
        groups = [list(range(len(sizes)))]
    total = [0] * size   # bytes each rank owns so far, for the whole-variable balance
    exchanges = []
    for g, group in enumerate(groups):
        owner = None if sliced else _owners(group, sizes, itemsizes, size, total)
        for dtype in sorted({dtypes[i] for i in group}):
            members = [i for i in sorted(group) if dtypes[i] == dtype]
            if sliced:
                segments = _slices(members, sizes, size)
            else:
                segments = [[Piece(i, 0, sizes[i]) for i in members if owner[i] == r]
                            for r in range(size)]
            block = max(sum(piece.size for piece in segment) for segment in segments)
            exchanges.append(Exchange(dtype, segments, block, f"zero.{g}.{dtype}"))
    return ShardPlan(size, rank, list(sizes), exchanges)


def _owners(group, sizes, itemsizes, size, total):
    """The rank that owns each whole variable of ``group``, balanced over all its dtypes."""
    held = [0] * size
    owner = {}
    for i in sorted(group, key=lambda i: (-sizes[i] * itemsizes[i], i)):
        r = min(range(size), key=lambda r: (held[r], total[r], r))
        owner[i] = r
        held[r] += sizes[i] * itemsizes[i]
        total[r] += sizes[i] * itemsizes[i]
    return owner


def _slices(members, sizes, size):
    """Rank r gets elements [r * block, (r + 1) * block) of the members laid end to end."""
    length = sum(sizes[i] for i in members)
    block = -(-length // size)
    segments = [[] for _ in range(size)]
    offset = 0
    for i in members:
        if sizes[i] == 0:   # owned all the same, so that its slots are someone's
            segments[min(offset // block, size - 1) if block else 0].append(Piece(i, 0, 0))
        start = offset
        while start < offset + sizes[i]:
            r = start // block
            stop = min(offset + sizes[i], (r + 1) * block)
            segments[r].append(Piece(i, start - offset, stop - offset))
            start = stop
        offset += sizes[i]
    return segments


def consecutive_groups(count, num_groups):
    """``num_groups`` groups of consecutive indices (one group when 0)."""
    if not num_groups or count == 0:
        return [list(range(count))]
    step = -(-count // num_groups)
    return [list(range(k, min(k + step, count))) for k in range(0, count, step)]


def backprop_buckets(nbytes, bucket_bytes):
    """Groups of consecutive variables of at least ``bucket_bytes`` each (the first variables'
    group may hold less), listed from the last variables to the first: the order in which
    backprop produces their gradients, so that each group's exchange can start while backprop
    goes on."""
    buckets, current, held = [], [], 0
    for i in reversed(range(len(nbytes))):
        current.insert(0, i)
        held += nbytes[i]
        if held >= bucket_bytes:
            buckets.append(current)
            current, held = [], 0
    if current:
        buckets.append(current)
    return buckets
