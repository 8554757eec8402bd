"""Which rank owns which variable under ZeroRedundancyOptimizer, and where each gradient and
each parameter sits in the flat buffers that one reducescatter and one allgather exchange.

Ownership is by whole variables, balanced by bytes: a greedy pass gives each variable, largest
first, to the rank that holds the fewest bytes of its group so far (then of all groups, then
the lowest rank). Every rank computes the same plan from the same shapes, dtypes and order.

Each (group, dtype) is one exchange. Its reducescatter buffer holds, for rank 0, 1, ..., the
flattened gradients of that rank's variables (in variable order) padded with zeros to the
longest rank's length, so the core's equal blocks are exactly the owners' segments. Its
allgather sends each rank's parameters unpadded (allgather takes different lengths)."""

from dataclasses import dataclass, field


@dataclass
class Exchange:
    """One (group, dtype): ``segments[r]`` lists rank r's variable indices in order,
    ``block`` is the padded length of every rank's segment, in elements."""
    dtype: str
    segments: list
    block: int
    name: str

    def length(self, rank, sizes):
        return sum(sizes[i] for i in self.segments[rank])


@dataclass
class ShardPlan:
    size: int
    rank: int
    owner: list            # owner[i]: the rank within the set that owns variable i
    sizes: list            # sizes[i]: variable i's number of elements
    exchanges: list = field(default_factory=list)

    @property
    def owned(self):
        return [i for i, r in enumerate(self.owner) if r == self.rank]

    def owned_bytes(self, itemsizes, rank=None):
        rank = self.rank if rank is None else rank
        return sum(self.sizes[i] * itemsizes[i] for i, r in enumerate(self.owner) if r == rank)


def make_plan(sizes, dtypes, itemsizes, size, rank, groups=None):
    """``sizes``, ``dtypes`` (names) and ``itemsizes`` per variable; ``groups`` lists of variable
    indices, each exchanged on its own (default: all in one group)."""
    count = len(sizes)
    if groups is None:
        groups = [list(range(count))]
    owner = [0] * count
    total = [0] * size
    exchanges = []
    for g, group in enumerate(groups):
        held = [0] * size
        for i in sorted(group, key=lambda i: (-sizes[i] * itemsizes[i], i)):
            r = min(range(size), key=lambda r: (held[r], total[r], r))
            owner[i] = r
            held[r] += sizes[i] * itemsizes[i]
            total[r] += sizes[i] * itemsizes[i]
        for dtype in sorted({dtypes[i] for i in group}):
            members = [i for i in sorted(group) if dtypes[i] == dtype]
            segments = [[i for i in members if owner[i] == r] for r in range(size)]
            block = max(sum(sizes[i] for i in segment) for segment in segments)
            exchanges.append(Exchange(dtype, segments, block, f"zero.{g}.{dtype}"))
    return ShardPlan(size, rank, owner, list(sizes), exchanges)


def consecutive_groups(count, num_groups):
    """``num_groups`` groups of consecutive indices (one group when 0)."""
    if not num_groups or count == 0:
        return [list(range(count))]
    step = -(-count // num_groups)
    return [list(range(k, min(k + step, count))) for k in range(0, count, step)]
