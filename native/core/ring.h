// Ring collectives over a Transport, written once for every dtype and rank count.
//
// The buffer is cut into one segment per rank (segment r ends up owned by rank r) and every
// segment into chunks of at most `chunk_bytes`. Chunks, not segments, are the unit that moves:
// a chunk reduced at one step is forwarded at the next while later chunks are still arriving,
// so sending, receiving and reducing overlap. Counts are 64-bit; only chunk sizes reach MPI.
#pragma once

#include <functional>
#include <vector>

#include "common.h"
#include "pieces.h"
#include "transport.h"
#include "work_buffer.h"

namespace mpirep {

// Element counts of `count` elements split over `parts` ranks: the first count % parts get one
// more.
std::vector<int64_t> EvenSegments(int64_t count, int parts);

class Ring {
 public:
  // Applied to each chunk of this rank's own segment once it is fully reduced, before it is
  // shared (postscaling, averaging). Arguments: data, element count.
  using Epilogue = std::function<void(void*, int64_t)>;

  // How far ahead of the reduction the reduce-scatter posts its receives: at least
  // `receive_window_bytes` and 4 chunks. A message that arrives before its receive is posted
  // waits for the receiver's go-ahead, and over TCP that go-ahead queues behind the receiver's
  // own outgoing chunks (docs/core.md, "Fusion").
  static constexpr size_t kReceiveWindowBytes = size_t{16} << 20;

  Ring(Transport& transport, size_t chunk_bytes, size_t receive_window_bytes = kReceiveWindowBytes);
  void SetChunkBytes(size_t chunk_bytes);

  // out = reduction of every rank's `in`. `in` may be `out`. Rank r's segment of `out` holds
  // the finished result; other segments hold partial sums. `in` is read where it lies: of a
  // fused buffer's pieces only the segment this rank sends first is copied (into `out`), the
  // rest are reduced from in place.
  void ReduceScatter(const Pieces& in, void* out, const std::vector<int64_t>& segments,
                     DataType dtype, ReduceOp op, const Epilogue& epilogue);
  void ReduceScatter(const void* in, void* out, const std::vector<int64_t>& segments,
                     DataType dtype, ReduceOp op, const Epilogue& epilogue);

  // In place: on entry segment `rank` of `buf` is this rank's; on return all are filled.
  void Allgather(void* buf, const std::vector<int64_t>& segments, size_t element_size);

  void Allreduce(const Pieces& in, void* out, int64_t count, DataType dtype, ReduceOp op,
                 const Epilogue& epilogue);
  void Allreduce(const void* in, void* out, int64_t count, DataType dtype, ReduceOp op,
                 const Epilogue& epilogue);

 private:
  struct ChunkRange {
    int64_t offset;  // elements from the start of the buffer
    int64_t count;
  };
  std::vector<ChunkRange> Chunks(const std::vector<int64_t>& segments, int segment,
                                 size_t element_size) const;

  static constexpr size_t kMinReceiveWindow = 4;
  Transport& transport_;
  size_t chunk_bytes_;
  size_t receive_window_bytes_;
  WorkBuffer scratch_;  // the receive window's slots
};

}  // namespace mpirep
