#include "ring.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "reduce.h"

namespace mpirep {
namespace {

int Wrap(int i, int n) { return ((i % n) + n) % n; }

char* At(void* buf, int64_t elements, size_t element_size) {
  return static_cast<char*>(buf) + elements * static_cast<int64_t>(element_size);
}

const char* At(const void* buf, int64_t elements, size_t element_size) {
  return static_cast<const char*>(buf) + elements * static_cast<int64_t>(element_size);
}

}  // namespace

std::vector<int64_t> EvenSegments(int64_t count, int parts) {
  std::vector<int64_t> segments(parts, count / parts);
  for (int64_t i = 0; i < count % parts; ++i) ++segments[i];
  return segments;
}

Ring::Ring(Transport& transport, size_t chunk_bytes, size_t receive_window_bytes)
    : transport_(transport), receive_window_bytes_(receive_window_bytes) {
  SetChunkBytes(chunk_bytes);
}

void Ring::SetChunkBytes(size_t chunk_bytes) { chunk_bytes_ = std::max<size_t>(chunk_bytes, 64); }

std::vector<Ring::ChunkRange> Ring::Chunks(const std::vector<int64_t>& segments, int segment,
                                           size_t element_size) const {
  int64_t offset = std::accumulate(segments.begin(), segments.begin() + segment, int64_t{0});
  const int64_t per_chunk = std::max<int64_t>(1, chunk_bytes_ / element_size);
  std::vector<ChunkRange> chunks;
  for (int64_t done = 0; done < segments[segment]; done += per_chunk) {
    chunks.push_back({offset + done, std::min(per_chunk, segments[segment] - done)});
  }
  return chunks;
}

// Step s (0 <= s < n-1): rank r sends segment r-s-1 to rank r+1 and receives segment r-s-2
// from rank r-1, reducing it with its own input into `out`. The segment received at step s is
// the one sent at step s+1, so each reduced chunk is forwarded at once. After n-1 steps the
// segment received last, r-(n-1)-1 = r, has every rank's contribution.
void Ring::ReduceScatter(const Pieces& in, void* out, const std::vector<int64_t>& segments,
                         DataType dtype, ReduceOp op, const Epilogue& epilogue) {
  const int n = transport_.size(), r = transport_.rank();
  const size_t esize = ElementSize(dtype);
  const int64_t esize64 = static_cast<int64_t>(esize);
  if (n == 1) {
    if (segments[0] > 0 && in.Contiguous(0, segments[0] * esize64) != out) in.CopyTo(out, 0, segments[0] * esize64);
    if (segments[0] > 0) epilogue(out, segments[0]);
    return;
  }
  const int right = Wrap(r + 1, n), left = Wrap(r - 1, n);
  std::vector<Transport::Handle> sends;
  for (const ChunkRange& c : Chunks(segments, Wrap(r - 1, n), esize)) {
    const char* chunk = in.Contiguous(c.offset * esize64, c.count * esize64);
    if (!chunk) {  // spans pieces: sent from its place in `out`, which the reduce-scatter never writes
      in.CopyTo(At(out, c.offset, esize), c.offset * esize64, c.count * esize64);
      chunk = At(out, c.offset, esize);
    }
    sends.push_back(transport_.Isend(right, chunk, c.count * esize));
  }
  const size_t slot_bytes = std::max<int64_t>(1, chunk_bytes_ / esize) * esize;
  const int64_t largest = *std::max_element(segments.begin(), segments.end());
  const size_t chunks_in_largest = static_cast<size_t>((largest * esize64 + slot_bytes - 1) / slot_bytes);
  const size_t window = std::max<size_t>(1, std::min(chunks_in_largest,
                                                     std::max(kMinReceiveWindow, receive_window_bytes_ / slot_bytes)));
  char* slots = scratch_.Reserve(slot_bytes * window);
  for (int step = 0; step < n - 1; ++step) {
    const std::vector<ChunkRange> chunks = Chunks(segments, Wrap(r - step - 2, n), esize);
    const bool last_step = step == n - 2;
    std::vector<Transport::Handle> receives(chunks.size());
    auto post_receive = [&](size_t i) {
      receives[i] = transport_.Irecv(left, slots + (i % window) * slot_bytes,
                                     chunks[i].count * esize);
    };
    for (size_t i = 0; i < chunks.size() && i < window; ++i) post_receive(i);
    for (size_t i = 0; i < chunks.size(); ++i) {
      transport_.Wait(receives[i]);
      const ChunkRange& c = chunks[i];
      char* target = At(out, c.offset, esize);
      const char* received = slots + (i % window) * slot_bytes;
      in.ForEach(c.offset * esize64, c.count * esize64, [&](const char* mine, int64_t done, int64_t bytes) {
        Reduce(target + done, mine, received + done, bytes / esize64, dtype, op);
      });
      if (i + window < chunks.size()) post_receive(i + window);
      if (last_step) {
        epilogue(target, c.count);
      } else {
        sends.push_back(transport_.Isend(right, target, c.count * esize));
      }
    }
  }
  for (Transport::Handle h : sends) transport_.Wait(h);
}

void Ring::ReduceScatter(const void* in, void* out, const std::vector<int64_t>& segments,
                         DataType dtype, ReduceOp op, const Epilogue& epilogue) {
  const int64_t count = std::accumulate(segments.begin(), segments.end(), int64_t{0});
  ReduceScatter(Pieces(in, count * static_cast<int64_t>(ElementSize(dtype))), out, segments, dtype, op, epilogue);
}

// Step s: rank r sends segment r-s to rank r+1 and receives segment r-s-1 from rank r-1
// straight into place, forwarding each chunk at the next step.
void Ring::Allgather(void* buf, const std::vector<int64_t>& segments, size_t element_size) {
  const int n = transport_.size(), r = transport_.rank();
  if (n == 1) return;
  const int right = Wrap(r + 1, n), left = Wrap(r - 1, n);
  std::vector<Transport::Handle> sends;
  for (const ChunkRange& c : Chunks(segments, r, element_size)) {
    sends.push_back(transport_.Isend(right, At(buf, c.offset, element_size), c.count * element_size));
  }
  for (int step = 0; step < n - 1; ++step) {
    const std::vector<ChunkRange> chunks = Chunks(segments, Wrap(r - step - 1, n), element_size);
    std::vector<Transport::Handle> receives;
    for (const ChunkRange& c : chunks) {
      receives.push_back(transport_.Irecv(left, At(buf, c.offset, element_size), c.count * element_size));
    }
    for (size_t i = 0; i < chunks.size(); ++i) {
      transport_.Wait(receives[i]);
      if (step < n - 2) {
        sends.push_back(transport_.Isend(right, At(buf, chunks[i].offset, element_size),
                                         chunks[i].count * element_size));
      }
    }
  }
  for (Transport::Handle h : sends) transport_.Wait(h);
}

void Ring::Allreduce(const Pieces& in, void* out, int64_t count, DataType dtype, ReduceOp op,
                     const Epilogue& epilogue) {
  const std::vector<int64_t> segments = EvenSegments(count, transport_.size());
  ReduceScatter(in, out, segments, dtype, op, epilogue);
  Allgather(out, segments, ElementSize(dtype));
}

void Ring::Allreduce(const void* in, void* out, int64_t count, DataType dtype, ReduceOp op,
                     const Epilogue& epilogue) {
  Allreduce(Pieces(in, count * static_cast<int64_t>(ElementSize(dtype))), out, count, dtype, op, epilogue);
}

}  // namespace mpirep
