// A buffer made of separate pieces, read where they lie: the inputs of a fused allreduce, which
// the ring reduces from in place instead of after a copy into the fusion buffer (ring.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace mpirep {

class Pieces {
 public:
  Pieces() = default;
  Pieces(const void* data, int64_t bytes) { Add(data, bytes); }

  // Appends `bytes` at `data`, which must stay readable while this is used.
  void Add(const void* data, int64_t bytes);
  int64_t bytes() const { return ends_.empty() ? 0 : ends_.back(); }
  // The start of [offset, offset + bytes) when one piece holds all of it, else null.
  const char* Contiguous(int64_t offset, int64_t bytes) const;
  // Copies [offset, offset + bytes) to `out`.
  void CopyTo(void* out, int64_t offset, int64_t bytes) const;

  // Calls visit(part, done, part_bytes) for the parts of [offset, offset + bytes) in order,
  // `part` being within one piece and `done` the bytes of the range before it.
  template <typename Visit>
  void ForEach(int64_t offset, int64_t bytes, Visit visit) const {
    size_t i = std::upper_bound(ends_.begin(), ends_.end(), offset) - ends_.begin();
    for (int64_t done = 0; done < bytes; ++i) {
      const int64_t start = i == 0 ? 0 : ends_[i - 1];
      const int64_t at = offset + done - start;
      const int64_t take = std::min(bytes - done, ends_[i] - start - at);
      visit(data_[i] + at, done, take);
      done += take;
    }
  }

 private:
  std::vector<const char*> data_;
  std::vector<int64_t> ends_;  // each piece's end, in bytes from the start of the first
};

}  // namespace mpirep
