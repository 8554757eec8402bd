#include "hierarchical.h"

#include <numeric>

namespace mpirep {

HierarchicalAllreduce::HierarchicalAllreduce(const HostTransports& transports, size_t chunk_bytes)
    : hosts_(transports.across->size()),
      ranks_per_host_(transports.host->size()),
      local_rank_(transports.host->rank()),
      host_ring_(*transports.host, chunk_bytes),
      across_ring_(*transports.across, chunk_bytes) {}

void HierarchicalAllreduce::Allreduce(const void* in, void* out, int64_t count, DataType dtype,
                                      ReduceOp op, const Ring::Epilogue& epilogue) {
  const size_t esize = ElementSize(dtype);
  const std::vector<int64_t> slices = EvenSegments(count, ranks_per_host_);
  // Partial sums inside the host are not final: they get no epilogue.
  host_ring_.ReduceScatter(in, out, slices, dtype, op, [](void*, int64_t) {});
  const int64_t first = std::accumulate(slices.begin(), slices.begin() + local_rank_, int64_t{0});
  char* mine = static_cast<char*>(out) + first * static_cast<int64_t>(esize);
  across_ring_.Allreduce(mine, mine, slices[local_rank_], dtype, op, epilogue);
  host_ring_.Allgather(out, slices, esize);
}

}  // namespace mpirep
