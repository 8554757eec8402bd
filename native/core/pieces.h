// A buffer made of separate pieces, used where they lie: the inputs of a fused allreduce, which
// the ring reduces from in place instead of after a copy into the fusion buffer (ring.h), and
// its outputs, which the shared-memory allreduce writes straight into (shm_collectives.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace mpirep {

// `Byte` is `const char` for pieces read from and `char` for pieces written to.
template <typename Byte>
class PieceList {
 public:
  using Address = std::conditional_t<std::is_const_v<Byte>, const void*, void*>;

  PieceList() = default;
  PieceList(Address data, int64_t bytes) { Add(data, bytes); }

  // Appends `bytes` at `data`, which must stay usable while this is used.
  void Add(Address data, int64_t bytes) {
    if (bytes <= 0) return;
    data_.push_back(static_cast<Byte*>(data));
    ends_.push_back(this->bytes() + bytes);
  }
  int64_t bytes() const { return ends_.empty() ? 0 : ends_.back(); }

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

 protected:
  std::vector<Byte*> data_;
  std::vector<int64_t> ends_;  // each piece's end, in bytes from the start of the first
};

class Pieces : public PieceList<const char> {
 public:
  using PieceList::PieceList;
  // The start of [offset, offset + bytes) when one piece holds all of it, else null.
  const char* Contiguous(int64_t offset, int64_t bytes) const;
  // Copies [offset, offset + bytes) to `out`.
  void CopyTo(void* out, int64_t offset, int64_t bytes) const;
};

using OutputPieces = PieceList<char>;

}  // namespace mpirep
