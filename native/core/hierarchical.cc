#include "hierarchical.h"

#include <algorithm>
#include <numeric>

namespace mpirep {

void HierarchicalAllreduce::WorkWhileWaiting::RunNext() {
  if (queue_.empty()) return;
  std::function<void()> work = std::move(queue_.front());
  queue_.pop_front();
  work();
}

HierarchicalAllreduce::HierarchicalAllreduce(const HostTransports& transports, size_t chunk_bytes)
    : hosts_(transports.across->size()),
      ranks_per_host_(transports.host->size()),
      local_rank_(transports.host->rank()),
      chunk_bytes_(chunk_bytes),
      across_(*transports.across),
      host_ring_(*transports.host, chunk_bytes),
      host_memory_(transports.host_memory),
      across_ring_(across_, chunk_bytes) {}

void HierarchicalAllreduce::SetChunkBytes(size_t chunk_bytes) {
  chunk_bytes_ = chunk_bytes;
  host_ring_.SetChunkBytes(chunk_bytes);
  across_ring_.SetChunkBytes(chunk_bytes);
}

void HierarchicalAllreduce::Allreduce(const void* in, void* out, int64_t count, DataType dtype,
                                      ReduceOp op, const Ring::Epilogue& epilogue) {
  const int64_t esize = static_cast<int64_t>(ElementSize(dtype));
  const int64_t chunk_elements = std::max<int64_t>(1, static_cast<int64_t>(chunk_bytes_) / esize);
  const int64_t per_block = chunk_elements * ranks_per_host_ * hosts_;
  const std::vector<int64_t> blocks =
      EvenSegments(count, static_cast<int>(std::clamp<int64_t>(count / per_block, 1, kMaxBlocks)));
  std::vector<int64_t> starts(blocks.size(), 0);
  std::partial_sum(blocks.begin(), blocks.end() - 1, starts.begin() + 1);
  const char* const in_bytes = static_cast<const char*>(in);
  char* const out_bytes = static_cast<char*>(out);

  // Partial sums inside the host are not final: they get no epilogue.
  auto reduce_in_host = [&](size_t b) {
    const std::vector<int64_t> slices = EvenSegments(blocks[b], ranks_per_host_);
    const auto none = [](void*, int64_t) {};
    if (host_memory_) {
      host_memory_->ReduceScatter(in_bytes + starts[b] * esize, out_bytes + starts[b] * esize, slices, dtype, op, none);
    } else {
      host_ring_.ReduceScatter(in_bytes + starts[b] * esize, out_bytes + starts[b] * esize, slices, dtype, op, none);
    }
  };
  auto spread_in_host = [&](size_t b) {
    const std::vector<int64_t> slices = EvenSegments(blocks[b], ranks_per_host_);
    if (host_memory_) {
      host_memory_->Allgather(out_bytes + starts[b] * esize, slices, esize);
    } else {
      host_ring_.Allgather(out_bytes + starts[b] * esize, slices, esize);
    }
  };
  auto reduce_across = [&](size_t b) {
    const std::vector<int64_t> slices = EvenSegments(blocks[b], ranks_per_host_);
    const int64_t first = starts[b] + std::accumulate(slices.begin(), slices.begin() + local_rank_, int64_t{0});
    char* mine = out_bytes + first * esize;
    across_ring_.Allreduce(mine, mine, slices[local_rank_], dtype, op, epilogue);
  };

  reduce_in_host(0);
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (b + 1 < blocks.size()) across_.Queue([&, b] { reduce_in_host(b + 1); });
    if (b > 0) across_.Queue([&, b] { spread_in_host(b - 1); });
    reduce_across(b);
    across_.RunAll();  // what no wait ran, e.g. with nothing to wait for across hosts
  }
  spread_in_host(blocks.size() - 1);
}

}  // namespace mpirep
