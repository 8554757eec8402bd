#include "pieces.h"

#include <cstring>

namespace mpirep {

const char* Pieces::Contiguous(int64_t offset, int64_t bytes) const {
  const size_t i = std::upper_bound(ends_.begin(), ends_.end(), offset) - ends_.begin();
  if (i == ends_.size() || offset + bytes > ends_[i]) return nullptr;
  return data_[i] + (offset - (i == 0 ? 0 : ends_[i - 1]));
}

void Pieces::CopyTo(void* out, int64_t offset, int64_t bytes) const {
  ForEach(offset, bytes, [out](const char* part, int64_t done, int64_t part_bytes) {
    std::memcpy(static_cast<char*>(out) + done, part, part_bytes);
  });
}

}  // namespace mpirep
