// The shared-memory collectives with 1..4 ranks as threads over one segment: the allreduce, and
// the reduce-scatter and allgather of the hierarchical allreduce, with every dtype and op, sizes
// 0, 1, odd and many slots long, input and output in place and in pieces, outputs large enough
// to be streamed past the cache, slots of one element and of many. Inputs depend on rank and
// index, expected values are closed forms, and every rank must hold the same bits. A wait for a
// rank that never arrives ends when the wait's check throws, as the runtime's liveness check
// ends the job. (The executor's tests run fused allreduces with scale factors and stand-ins
// through it too, and the hierarchical tests its stages.)
#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "core/half.h"
#include "core/reduce.h"
#include "core/shm_collectives.h"
#include "core/shm_segment.h"
#include "rank_scaled.h"

using namespace mpirep;
using mpirep_test::Expected;
using mpirep_test::Factor;

namespace {

// A segment for `n` ranks whose name is gone at once, as in production.
SharedSegment MakeSegment(int n, size_t slot_bytes) {
  const std::string name = SharedSegment::UniqueName();
  SharedSegment segment = SharedSegment::Create(name, ShmCollectives::SegmentBytes(n, slot_bytes));
  SharedSegment::Unlink(name);
  return segment;
}

// Runs body(allreduce, rank) on `n` threads sharing one segment.
template <typename Body>
void OnSharedRanks(int n, size_t slot_bytes, Body body) {
  const SharedSegment segment = MakeSegment(n, slot_bytes);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ShmCollectives allreduce(segment.data(), r, n, slot_bytes);
      body(allreduce, r);
    });
  }
  for (auto& t : threads) t.join();
}

template <typename T>
T Value(int64_t v) {
  if constexpr (std::is_same_v<T, Float16>) return FloatToFloat16(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, BFloat16>) return FloatToBFloat16(static_cast<float>(v));
  else return static_cast<T>(v);
}

template <typename T>
bool Same(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

// Twice in a row on the same segment (the second reuses the slots and the flags), the first
// out of place from pieces into pieces cut elsewhere, the second in place.
template <typename T>
void CheckAllreduce(int n, int64_t count, DataType dtype, ReduceOp op, size_t slot_bytes) {
  std::vector<std::vector<T>> first(n), second(n);
  OnSharedRanks(n, slot_bytes, [&](ShmCollectives& allreduce, int r) {
    std::vector<T> in(count), out(count);
    for (int64_t i = 0; i < count; ++i) in[i] = Value<T>((r + 1) * Factor(i));
    const std::vector<T> before = in;
    const int64_t esize = sizeof(T);
    Pieces pieces;
    for (int64_t at = 0, size = 1; at < count; at += size, size = size % 5 + 2) {
      pieces.Add(in.data() + at, std::min(size, count - at) * esize);
    }
    OutputPieces outputs;
    for (int64_t at = 0, size = 3; at < count; at += size, size = size % 7 + 1) {
      outputs.Add(out.data() + at, std::min(size, count - at) * esize);
    }
    allreduce.Allreduce(pieces, outputs, count, dtype, op, [](void*, int64_t) {});
    first[r] = out;
    CHECK(count == 0 || std::memcmp(in.data(), before.data(), count * sizeof(T)) == 0, << "rank " << r << " wrote into its input");
    allreduce.Allreduce(Pieces(in.data(), count * sizeof(T)), in.data(), count, dtype, op, [](void*, int64_t) {});
    second[r] = in;
  });
  for (int64_t i = 0; i < count; ++i) {
    CHECK(Same(first[0][i], Value<T>(Expected(op, n, i))),
          << DataTypeName(dtype) << " " << ReduceOpName(op) << " n=" << n << " count=" << count << " slot=" << slot_bytes
          << " i=" << i);
  }
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < count; ++i) {
      CHECK(Same(first[r][i], first[0][i]) && Same(second[r][i], first[0][i]),
            << DataTypeName(dtype) << " n=" << n << " count=" << count << ": rank " << r << " differs at " << i);
    }
  }
}

// `count` elements cut into one segment per rank, unevenly: rank r's weighs r + 1, but rank 1's
// is empty.
std::vector<int64_t> UnevenSegments(int64_t count, int n) {
  std::vector<int64_t> weights(n), segments(n);
  for (int r = 0; r < n; ++r) weights[r] = r == 1 ? 0 : r + 1;
  int64_t total = 0, given = 0;
  for (int64_t w : weights) total += w;
  for (int r = 0; r < n; ++r) given += segments[r] = count * weights[r] / total;
  segments[n - 1] += count - given;
  return segments;
}

// The stages of the hierarchical allreduce inside a host: a reduce-scatter out of place, which
// leaves the rest of the output alone, the same in place, and then the allgather of its result.
template <typename T>
void CheckReduceScatterThenAllgather(int n, int64_t count, DataType dtype, ReduceOp op, size_t slot_bytes) {
  const std::vector<int64_t> segments = UnevenSegments(count, n);
  std::vector<std::vector<T>> gathered(n);
  OnSharedRanks(n, slot_bytes, [&](ShmCollectives& shared, int r) {
    std::vector<T> in(count), out(count, Value<T>(99));
    for (int64_t i = 0; i < count; ++i) in[i] = Value<T>((r + 1) * Factor(i));
    std::vector<T> in_place = in;
    shared.ReduceScatter(in.data(), out.data(), segments, dtype, op, [](void*, int64_t) {});
    shared.ReduceScatter(in_place.data(), in_place.data(), segments, dtype, op, [](void*, int64_t) {});
    int64_t first = 0;
    for (int s = 0; s < r; ++s) first += segments[s];
    for (int64_t i = 0; i < count; ++i) {
      const bool mine = i >= first && i < first + segments[r];
      CHECK(Same(out[i], mine ? Value<T>(Expected(op, n, i)) : Value<T>(99)),
            << DataTypeName(dtype) << " " << ReduceOpName(op) << " n=" << n << " count=" << count << " rank " << r
            << ": reduce-scatter at " << i << (mine ? "" : ", outside its segment"));
      if (mine) CHECK(Same(in_place[i], out[i]), << "in place, rank " << r << " at " << i);
    }
    shared.Allgather(out.data(), segments, sizeof(T));
    gathered[r] = out;
  });
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < count; ++i) {
      CHECK(Same(gathered[r][i], Value<T>(Expected(op, n, i))),
            << DataTypeName(dtype) << " " << ReduceOpName(op) << " n=" << n << " count=" << count << " rank " << r
            << ": allgather at " << i);
    }
  }
}

// Every element is scaled once, by its owner, before the others copy it.
void CheckEpilogueRunsOnce(int n, int64_t count, size_t slot_bytes) {
  std::vector<std::vector<double>> results(n);
  OnSharedRanks(n, slot_bytes, [&](ShmCollectives& allreduce, int r) {
    std::vector<double> buf(count);
    for (int64_t i = 0; i < count; ++i) buf[i] = (r + 1) * Factor(i);
    allreduce.Allreduce(Pieces(buf.data(), count * 8), buf.data(), count, DataType::FLOAT64, ReduceOp::SUM,
                        [](void* data, int64_t c) {
                          for (int64_t i = 0; i < c; ++i) static_cast<double*>(data)[i] *= 0.5;
                        });
    results[r] = buf;
  });
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < count; ++i) {
      CHECK(results[r][i] == 0.5 * Expected(ReduceOp::SUM, n, i), << "n=" << n << " rank " << r << " i=" << i);
    }
  }
}

template <typename T>
void CheckEveryOp(int n, int64_t count, DataType dtype, size_t slot_bytes) {
  for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVERAGE, ReduceOp::MIN, ReduceOp::MAX, ReduceOp::PRODUCT}) {
    if (!ReduceOpSupported(dtype, op)) continue;
    // The closed forms must hold in the type: products wrap alike in 16-bit integers and
    // wider, and round alike in 16-bit floats up to 3 ranks (7 * 14 * 21 = 2058); the sums fit
    // everything.
    const bool half_float = sizeof(T) == 2 && IsFloating(dtype);
    if (op == ReduceOp::PRODUCT && (sizeof(T) == 1 || (half_float && n > 3))) continue;
    CheckAllreduce<T>(n, count, dtype, op, slot_bytes);
    CheckReduceScatterThenAllgather<T>(n, count, dtype, op, slot_bytes);
  }
}

// Bools: element i of rank r is whether i % (n + 1) differs from r, so their and (MIN) holds
// where i % (n + 1) == n, and their or (MAX) everywhere but at n = 1, i even.
void CheckBool(int n, int64_t count, size_t slot_bytes) {
  for (ReduceOp op : {ReduceOp::MIN, ReduceOp::MAX}) {
    std::vector<std::vector<bool>> results(n);
    OnSharedRanks(n, slot_bytes, [&](ShmCollectives& allreduce, int r) {
      std::vector<uint8_t> buf(count);
      for (int64_t i = 0; i < count; ++i) buf[i] = i % (n + 1) != r;
      allreduce.Allreduce(Pieces(buf.data(), count), buf.data(), count, DataType::BOOL, op, [](void*, int64_t) {});
      results[r].assign(buf.begin(), buf.end());
    });
    for (int r = 0; r < n; ++r) {
      for (int64_t i = 0; i < count; ++i) {
        const bool expected = op == ReduceOp::MIN ? i % (n + 1) == n : !(n == 1 && i % 2 == 0);
        CHECK(results[r][i] == expected, << "bool " << ReduceOpName(op) << " n=" << n << " rank " << r << " i=" << i);
      }
    }
  }
}

bool AnyMpirepSegment() {
  DIR* dir = opendir("/dev/shm");
  if (!dir) return false;
  bool found = false;
  while (dirent* entry = readdir(dir)) found |= std::strncmp(entry->d_name, "mpirep-", 7) == 0 &&
                                                std::strstr(entry->d_name, std::to_string(getpid()).c_str());
  closedir(dir);
  return found;
}

}  // namespace

TEST(ShmCollectives, EveryDtypeOpSizeAndRankCount) {
  for (int n = 1; n <= 4; ++n) {
    // Slots of 64 bytes (one to 64 elements per block, many blocks) and one slot for everything.
    for (auto [count, slot] : {std::pair{int64_t{0}, size_t{64}}, std::pair{int64_t{1}, size_t{64}},
                               std::pair{int64_t{7 * n + 3}, size_t{64}}, std::pair{int64_t{1001}, size_t{64}},
                               std::pair{int64_t{1001}, size_t{1} << 16}}) {
      CheckEveryOp<uint8_t>(n, count, DataType::UINT8, slot);
      CheckEveryOp<int8_t>(n, count, DataType::INT8, slot);
      CheckEveryOp<uint16_t>(n, count, DataType::UINT16, slot);
      CheckEveryOp<int16_t>(n, count, DataType::INT16, slot);
      CheckEveryOp<int32_t>(n, count, DataType::INT32, slot);
      CheckEveryOp<int64_t>(n, count, DataType::INT64, slot);
      CheckEveryOp<Float16>(n, count, DataType::FLOAT16, slot);
      CheckEveryOp<BFloat16>(n, count, DataType::BFLOAT16, slot);
      CheckEveryOp<float>(n, count, DataType::FLOAT32, slot);
      CheckEveryOp<double>(n, count, DataType::FLOAT64, slot);
      CheckBool(n, count, slot);
    }
  }
}

TEST(ShmCollectives, EpilogueRunsOnce) {
  for (int n = 1; n <= 4; ++n) {
    CheckEpilogueRunsOnce(n, 333, 64);
    CheckEpilogueRunsOnce(n, 333, 1 << 16);
  }
}

// Outputs from ShmCollectives::kStreamOutputBytes up are written past the cache: one output
// that starts off the stores' alignment and ends inside their width, and a fused batch's outputs,
// pieces from one element (shorter than a store) to many stores long, each off the alignment.
TEST(ShmCollectives, LargeOutputsStreamPastTheCache) {
  const int64_t count = ShmCollectives::kStreamOutputBytes / 4 + 13;
  for (bool fused : {false, true}) {
    for (int n : {1, 2, 3}) {
      std::vector<std::vector<float>> results(n);
      OnSharedRanks(n, 1 << 20, [&](ShmCollectives& allreduce, int r) {
        std::vector<float> in(count), out(count + 1, -1.0f);
        for (int64_t i = 0; i < count; ++i) in[i] = static_cast<float>((r + 1) * Factor(i));
        OutputPieces outputs;
        const int64_t sizes[] = {1, 17, 1000, 40000};
        for (int64_t at = 0, k = 0; at < count; at += sizes[k++ % 4]) {
          outputs.Add(out.data() + 1 + at, std::min(fused ? sizes[k % 4] : count, count - at) * 4);
          if (!fused) break;
        }
        allreduce.Allreduce(Pieces(in.data(), count * 4), outputs, count, DataType::FLOAT32, ReduceOp::SUM,
                            [](void*, int64_t) {});
        CHECK(out[0] == -1.0f, << "rank " << r << " wrote before its output");
        results[r].assign(out.begin() + 1, out.end());
      });
      for (int r = 0; r < n; ++r) {
        for (int64_t i = 0; i < count; ++i) {
          CHECK(results[r][i] == static_cast<float>(Expected(ReduceOp::SUM, n, i)),
                << "n=" << n << (fused ? " fused" : "") << " rank " << r << " i=" << i);
        }
      }
    }
  }
}

// Rank 1 never arrives: the others wait until their check gives up, and their wait ends with
// its exception rather than hanging.
TEST(ShmCollectives, AbortEndsAWaitForARankThatNeverArrives) {
  const int n = 3;
  const SharedSegment segment = MakeSegment(n, 64);
  std::atomic<int> ended{0};
  std::vector<std::thread> threads;
  for (int r : {0, 2}) {
    threads.emplace_back([&, r] {
      int polls = 0;
      const std::function<void()> check = [&polls] {
        if (++polls == 1000) throw std::runtime_error("peer lost");
      };
      ShmCollectives allreduce(segment.data(), r, n, 64, &check);
      std::vector<int32_t> buf(100, r);
      try {
        allreduce.Allreduce(Pieces(buf.data(), 400), buf.data(), 100, DataType::INT32, ReduceOp::SUM, [](void*, int64_t) {});
      } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == "peer lost");
        ++ended;
      }
      CHECK(polls == 1000, << "rank " << r << " polled " << polls << " times");
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ended == 2, << "a wait for a rank that never came did not end with the check's exception");
}

// The segment's name is gone once unlinked, and mapping it twice shows one memory.
TEST(ShmCollectives, SegmentNameIsRemovedAndMemoryShared) {
  const std::string name = SharedSegment::UniqueName();
  SharedSegment created = SharedSegment::Create(name, 4096);
  SharedSegment opened = SharedSegment::Open(name, 4096);
  CHECK(AnyMpirepSegment(), << "the segment should be listed in /dev/shm until unlinked");
  SharedSegment::Unlink(name);
  CHECK(!AnyMpirepSegment(), << "a segment of this process is left in /dev/shm");
  static_cast<char*>(created.data())[100] = 42;
  CHECK(static_cast<char*>(opened.data())[100] == 42);
  bool refused = false;
  try {
    SharedSegment::Open(name, 4096);
  } catch (const std::runtime_error& e) {
    refused = std::string(e.what()).find(name) != std::string::npos;
  }
  CHECK(refused, << "opening a removed segment should fail naming it");
}
