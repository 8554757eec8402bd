// The ring collectives with 1..8 ranks as threads over InProcessTransport, at sizes that hit
// the edge cases: empty, a single element, fewer elements than ranks, uneven segments, and many
// chunks (a chunk of 64 bytes). Inputs depend on rank and index; expected values are closed
// forms; every rank must hold the same bits.
#include <cstring>
#include <vector>

#include "check.h"
#include "core/half.h"
#include "core/ring.h"
#include "on_ranks.h"
#include "rank_scaled.h"

using namespace mpirep;
using mpirep_test::Expected;
using mpirep_test::Factor;
using mpirep_test::OnRanks;

namespace {

template <typename T>
void CheckAllreduce(int n, int64_t count, DataType dtype, ReduceOp op, bool in_place, size_t chunk,
                    size_t receive_window = Ring::kReceiveWindowBytes) {
  std::vector<std::vector<T>> results(n);
  OnRanks(n, [&](Transport& t) {
    std::vector<T> in(count), out(count);
    for (int64_t i = 0; i < count; ++i) in[i] = static_cast<T>((t.rank() + 1) * Factor(i));
    Ring ring(t, chunk, receive_window);
    T* target = in_place ? in.data() : out.data();
    ring.Allreduce(in.data(), target, count, dtype, op, [](void*, int64_t) {});
    results[t.rank()].assign(target, target + count);
  });
  for (int64_t i = 0; i < count; ++i) {
    CHECK(results[0][i] == static_cast<T>(Expected(op, n, i)),
          << "n=" << n << " count=" << count << " op=" << ReduceOpName(op) << " i=" << i
          << " got " << static_cast<double>(results[0][i]));
  }
  for (int r = 1; r < n; ++r) {
    CHECK(results[r] == results[0],
          << "rank " << r << " differs from rank 0, n=" << n << " count=" << count);
  }
}

// An input in pieces of uneven sizes, whose ends fall inside chunks and segments, reduces as
// the same values packed would: the ring copies only what it sends first and reads the rest in
// place; the pieces themselves are never written.
void CheckPiecesInput(int n, int64_t count, size_t chunk) {
  std::vector<std::vector<int64_t>> results(n);
  std::vector<char> inputs_intact(n);  // not vector<bool>: the ranks are threads writing their own entries
  OnRanks(n, [&](Transport& t) {
    std::vector<std::vector<int64_t>> pieces;
    for (int64_t at = 0, size = 1; at < count; at += size, size = size % 13 + 4) {
      std::vector<int64_t>& piece = pieces.emplace_back();
      for (int64_t i = at; i < std::min(count, at + size); ++i) piece.push_back((t.rank() + 1) * Factor(i));
    }
    const std::vector<std::vector<int64_t>> before = pieces;
    Pieces in;
    for (const auto& piece : pieces) in.Add(piece.data(), static_cast<int64_t>(piece.size() * sizeof(int64_t)));
    std::vector<int64_t> out(count);
    Ring ring(t, chunk);
    ring.Allreduce(in, out.data(), count, DataType::INT64, ReduceOp::SUM, [](void*, int64_t) {});
    results[t.rank()] = out;
    inputs_intact[t.rank()] = pieces == before;
  });
  for (int64_t i = 0; i < count; ++i) {
    CHECK(results[0][i] == static_cast<int64_t>(Expected(ReduceOp::SUM, n, i)),
          << "pieces n=" << n << " count=" << count << " chunk=" << chunk << " i=" << i);
  }
  for (int r = 0; r < n; ++r) {
    CHECK(results[r] == results[0], << "pieces: rank " << r << " differs from rank 0, n=" << n);
    CHECK(inputs_intact[r], << "pieces: rank " << r << " wrote into its input, n=" << n);
  }
}

// The epilogue runs exactly once per element, on the segment's owner, before sharing.
void CheckEpilogueRunsOnce(int n, int64_t count) {
  std::vector<std::vector<double>> results(n);
  OnRanks(n, [&](Transport& t) {
    std::vector<double> buf(count);
    for (int64_t i = 0; i < count; ++i) buf[i] = (t.rank() + 1) * Factor(i);
    Ring ring(t, 64);
    ring.Allreduce(buf.data(), buf.data(), count, DataType::FLOAT64, ReduceOp::SUM, [](void* data, int64_t c) {
      for (int64_t i = 0; i < c; ++i) static_cast<double*>(data)[i] *= 0.5;
    });
    results[t.rank()] = buf;
  });
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < count; ++i) {
      CHECK(results[r][i] == 0.5 * Expected(ReduceOp::SUM, n, i), << "n=" << n << " r=" << r << " i=" << i);
    }
  }
}

// Allgather with a different row count per rank (allgatherv).
void CheckUnevenAllgather(int n) {
  std::vector<int64_t> segments;
  for (int r = 0; r < n; ++r) segments.push_back(r % 3 == 1 ? 0 : 5 * r + 3);
  int64_t total = 0;
  for (int64_t s : segments) total += s;
  std::vector<std::vector<int32_t>> results(n);
  OnRanks(n, [&](Transport& t) {
    std::vector<int32_t> buf(total, -1);
    int64_t offset = 0;
    for (int r = 0; r < t.rank(); ++r) offset += segments[r];
    for (int64_t i = 0; i < segments[t.rank()]; ++i) buf[offset + i] = 1000 * t.rank() + static_cast<int32_t>(i);
    Ring ring(t, 64);
    ring.Allgather(buf.data(), segments, sizeof(int32_t));
    results[t.rank()] = buf;
  });
  for (int r = 0; r < n; ++r) {
    int64_t at = 0;
    for (int owner = 0; owner < n; ++owner) {
      for (int64_t i = 0; i < segments[owner]; ++i, ++at) {
        CHECK(results[r][at] == 1000 * owner + i, << "n=" << n << " rank " << r << " element " << at);
      }
    }
  }
}

// Reduce-scatter into segments of different sizes: rank r's segment holds the full sum.
void CheckReduceScatter(int n) {
  std::vector<int64_t> segments;
  for (int r = 0; r < n; ++r) segments.push_back((r * 7) % 5);
  int64_t total = 0;
  for (int64_t s : segments) total += s;
  std::vector<std::vector<int64_t>> results(n);
  OnRanks(n, [&](Transport& t) {
    std::vector<int64_t> in(total), out(total, 0);
    for (int64_t i = 0; i < total; ++i) in[i] = (t.rank() + 1) * Factor(i);
    Ring ring(t, 64);
    ring.ReduceScatter(in.data(), out.data(), segments, DataType::INT64, ReduceOp::SUM, [](void*, int64_t) {});
    results[t.rank()] = out;
  });
  int64_t offset = 0;
  for (int r = 0; r < n; ++r) {
    for (int64_t i = offset; i < offset + segments[r]; ++i) {
      CHECK(results[r][i] == Expected(ReduceOp::SUM, n, i), << "n=" << n << " rank " << r << " i=" << i);
    }
    offset += segments[r];
  }
}

void CheckHalfPrecision(int n) {
  const int64_t count = 37;
  std::vector<std::vector<uint16_t>> results(n);
  OnRanks(n, [&](Transport& t) {
    std::vector<BFloat16> buf(count);
    for (int64_t i = 0; i < count; ++i) buf[i] = FloatToBFloat16(static_cast<float>((t.rank() + 1) * Factor(i)));
    Ring ring(t, 64);
    ring.Allreduce(buf.data(), buf.data(), count, DataType::BFLOAT16, ReduceOp::SUM, [](void*, int64_t) {});
    for (BFloat16 v : buf) results[t.rank()].push_back(v.bits);
  });
  for (int64_t i = 0; i < count; ++i) {
    BFloat16 v{results[0][i]};
    CHECK(BFloat16ToFloat(v) == static_cast<float>(Expected(ReduceOp::SUM, n, i)), << "bf16 n=" << n << " i=" << i);
  }
  for (int r = 1; r < n; ++r) CHECK(results[r] == results[0], << "bf16 rank " << r << " differs");
}

}  // namespace

TEST(Ring, AllreduceForEveryOpSizeChunkAndRankCount) {
  const ReduceOp ops[] = {ReduceOp::SUM, ReduceOp::MIN, ReduceOp::MAX, ReduceOp::PRODUCT};
  for (int n = 1; n <= 8; ++n) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{n - 1}, int64_t{n}, int64_t{n + 1},
                          int64_t{7 * n + 3}, int64_t{1000}}) {
      for (ReduceOp op : ops) CheckAllreduce<int64_t>(n, count, DataType::INT64, op, false, 64);
      CheckAllreduce<int64_t>(n, count, DataType::INT64, ReduceOp::SUM, true, 64);
      // the smallest window (4 chunks), so that receive slots are reused
      CheckAllreduce<int64_t>(n, count, DataType::INT64, ReduceOp::SUM, false, 64, 0);
      CheckAllreduce<float>(n, count, DataType::FLOAT32, ReduceOp::SUM, true, 1 << 20);
      CheckAllreduce<double>(n, count, DataType::FLOAT64, ReduceOp::MAX, false, 128);
      CheckAllreduce<int8_t>(n, count, DataType::INT8, ReduceOp::MIN, false, 64);
    }
  }
}

TEST(Ring, AllreduceReadsPiecesInPlace) {
  for (int n = 1; n <= 8; ++n) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{7 * n + 3}, int64_t{1000}}) {
      CheckPiecesInput(n, count, 64);
      CheckPiecesInput(n, count, 1 << 20);
    }
  }
}

TEST(Ring, EpilogueRunsOnce) {
  for (int n = 1; n <= 8; ++n) CheckEpilogueRunsOnce(n, 333);
}

TEST(Ring, UnevenAllgather) {
  for (int n = 1; n <= 8; ++n) CheckUnevenAllgather(n);
}

TEST(Ring, ReduceScatter) {
  for (int n = 1; n <= 8; ++n) CheckReduceScatter(n);
}

TEST(Ring, HalfPrecision) {
  for (int n = 1; n <= 8; ++n) CheckHalfPrecision(n);
}
