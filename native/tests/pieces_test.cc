// Pieces: where a range lies in one piece, and copying a range across pieces.
#include <cstring>
#include <string>

#include "check.h"
#include "core/pieces.h"

using namespace mpirep;

TEST(Pieces, ContiguousRangesCopiesAndPartsAcrossPieces) {
  const std::string a = "abc", b = "", c = "defgh";
  Pieces pieces;
  for (const std::string* s : {&a, &b, &c}) pieces.Add(s->data(), static_cast<int64_t>(s->size()));
  CHECK(pieces.bytes() == 8);
  CHECK(pieces.Contiguous(0, 3) == a.data());
  CHECK(pieces.Contiguous(1, 2) == a.data() + 1);
  CHECK(pieces.Contiguous(3, 5) == c.data(), << "an empty piece takes no place");
  CHECK(pieces.Contiguous(2, 2) == nullptr, << "a range across two pieces is not contiguous");
  CHECK(pieces.Contiguous(7, 2) == nullptr, << "a range past the end is not contiguous");
  char out[9] = {};
  pieces.CopyTo(out, 0, 8);
  CHECK(std::string(out) == "abcdefgh");
  std::memset(out, 0, sizeof out);
  pieces.CopyTo(out, 2, 3);
  CHECK(std::string(out) == "cde");
  std::string parts;
  pieces.ForEach(1, 6, [&](const char* part, int64_t done, int64_t bytes) {
    parts += std::to_string(done) + ":" + std::string(part, bytes) + " ";
  });
  CHECK(parts == "0:bc 2:defg ", << "got " << parts);
}
