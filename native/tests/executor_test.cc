// The Executor on 1..8 ranks as threads over InProcessTransport, running the responses that
// negotiation (Coordinator, then PlanFusion) makes from every rank's requests: fused allreduce
// with every op and scale factors, broadcast from every root, allgather with uneven rows,
// alltoall with a split matrix, reducescatter, a joined rank's stand-ins, and an output that
// cannot be allocated. Allreduces run by the ring, by recursive doubling and through shared
// memory (one segment that the threads share). Inputs depend on rank and index, expected values are closed forms, and
// every rank must hold the same bits.
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "check.h"
#include "numeric_cases.h"
#include "core/coordinator.h"
#include "core/executor.h"
#include "core/fusion.h"
#include "core/ring.h"
#include "core/shm_collectives.h"
#include "core/shm_segment.h"
#include "core/stand_in.h"
#include "on_ranks.h"

using namespace mpirep;
using mpirep_test::OnRanks;

namespace {

constexpr int64_t kChunk = 64;        // bytes: many chunks per segment, segments split mid-chunk
constexpr int64_t kSoloBytes = 1024;  // an allreduce this large runs alone instead of packed
char g_empty[1];                // the address of an empty buffer

// One rank's side of a test.
struct RankWork {
  std::vector<Request> requests;
  std::vector<std::vector<char>> inputs;  // one per request
  bool joined = false;                    // joined before the others submitted
  std::set<std::string> cannot_allocate;  // tensors whose output this rank fails to allocate

  template <typename T>
  void Submit(Request request, const std::vector<T>& input) {
    requests.push_back(std::move(request));
    std::vector<char>& bytes = inputs.emplace_back(input.size() * sizeof(T));
    if (!bytes.empty()) std::memcpy(bytes.data(), input.data(), bytes.size());
  }
};

// What one rank got, by tensor name.
struct Outcome {
  std::map<std::string, std::vector<char>> outputs;
  std::map<std::string, Shape> shapes;
  std::map<std::string, Status> statuses;
  std::map<std::string, OperationResult> results;
  std::map<std::string, std::vector<std::string>> phases;  // the executor's PhaseLog, by name

  template <typename T>
  std::vector<T> Values(const std::string& name) const {
    const std::vector<char>& bytes = outputs.at(name);
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
};

Request Make(Collective collective, const std::string& name, DataType dtype, Shape shape) {
  Request r;
  r.collective = collective;
  r.name = name;
  r.dtype = dtype;
  r.shape = std::move(shape);
  return r;
}

// Rank 0's part, done here for all ranks at once: negotiation, then the fusion plan.
std::vector<Response> Negotiate(const std::vector<RankWork>& work, int64_t fusion_threshold) {
  const ProcessSets sets(static_cast<int>(work.size()));
  Coordinator coordinator(static_cast<int>(work.size()), sets);
  const auto now = Coordinator::Clock::now();
  for (int r = 0; r < static_cast<int>(work.size()); ++r) {
    if (work[r].joined) {
      Request join = Make(Collective::JOIN, "join", DataType::UINT8, {0});
      join.rank = r;
      coordinator.Submit(join, now);
    }
    for (Request request : work[r].requests) {
      request.rank = r;
      coordinator.Submit(request, now);
    }
  }
  return PlanFusion(coordinator.TakeReady(), fusion_threshold, kSoloBytes);
}

// Slots of shared memory this small: a lone allreduce of kSoloBytes passes in many blocks.
constexpr size_t kShmSlotBytes = 64;

// Every rank carries out every response in order, as the runtime does; a joined rank stands in
// for the tensors it never submitted. Allreduces go through shared memory with `shm`, else by
// recursive doubling up to `small_allreduce_bytes` and by the ring above.
std::vector<Outcome> Run(std::vector<RankWork>& work, int64_t small_allreduce_bytes = 0,
                         int64_t fusion_threshold = 1 << 20, bool shm = false) {
  const std::vector<Response> responses = Negotiate(work, fusion_threshold);
  std::vector<Outcome> outcomes(work.size());
  const int n = static_cast<int>(work.size());
  const std::string segment_name = SharedSegment::UniqueName();
  const SharedSegment segment = SharedSegment::Create(segment_name, ShmCollectives::SegmentBytes(n, kShmSlotBytes));
  SharedSegment::Unlink(segment_name);
  OnRanks(n, [&](Transport& transport) {
    const int rank = transport.rank();
    const RankWork& mine = work[rank];
    Outcome& out = outcomes[rank];
    std::map<std::string, Operation> submitted;
    for (size_t i = 0; i < mine.requests.size(); ++i) {
      Operation op;
      op.request = mine.requests[i];
      op.request.rank = rank;
      op.input = mine.inputs[i].empty() ? g_empty : mine.inputs[i].data();
      const std::string name = op.request.name;
      const size_t esize = ElementSize(op.request.dtype);
      const bool fails = mine.cannot_allocate.count(name) > 0;
      op.allocate = [&out, name, esize, fails](const Shape& shape) -> void* {
        if (fails) return nullptr;
        out.shapes[name] = shape;
        std::vector<char>& buffer = out.outputs[name];
        buffer.assign(NumElements(shape) * esize, 0);
        return buffer.empty() ? g_empty : buffer.data();
      };
      submitted.emplace(name, std::move(op));
    }
    ShmCollectives shared(segment.data(), rank, n, kShmSlotBytes);
    Executor executor(transport, kChunk, small_allreduce_bytes, std::nullopt, -1, shm ? &shared : nullptr);
    for (const Response& response : responses) {
      CHECK(response.kind == Response::Kind::EXECUTE, << response.error);
      if (response.kind != Response::Kind::EXECUTE) continue;
      std::vector<Operation*> ops;
      std::vector<std::unique_ptr<StandIn>> stand_ins;
      for (size_t i = 0; i < response.names.size(); ++i) {
        auto it = submitted.find(response.names[i]);
        if (it != submitted.end()) {
          ops.push_back(&it->second);
        } else {
          CHECK(mine.joined, << "rank " << rank << " was told to run " << response.names[i]);
          ops.push_back(&stand_ins.emplace_back(std::make_unique<StandIn>(response, i))->op);
        }
      }
      OperationResult result;
      PhaseLog log;
      const std::vector<Status> statuses = executor.Run(response, ops, &result, &log);
      std::vector<std::string> phases;
      for (size_t p = 0; p < log.phases().size(); ++p) {
        const PhaseLog::Phase& phase = log.phases()[p];
        phases.push_back(phase.name);
        CHECK(phase.begin <= phase.end && (p == 0 || log.phases()[p - 1].end == phase.begin),
              << phase.name << " does not follow the phase before it");
      }
      for (size_t i = 0; i < response.names.size(); ++i) {
        if (!submitted.count(response.names[i])) continue;
        out.statuses[response.names[i]] = statuses[i];
        out.results[response.names[i]] = result;
        out.phases[response.names[i]] = phases;
      }
    }
  });
  return outcomes;
}

void CheckSameOnEveryRank(const std::vector<Outcome>& outcomes, const std::string& name) {
  for (size_t r = 1; r < outcomes.size(); ++r) {
    CHECK(outcomes[r].outputs.at(name) == outcomes[0].outputs.at(name),
          << name << ": rank " << r << " differs from rank 0 (n=" << outcomes.size() << ")");
  }
}

// The reduction inputs: element i on rank r of n, with k = i % 7 + 1 and a sign that is -1
// where i % 3 == 1. Every op has a closed form in n (before scaling):
//   Sum = sign * k * n(n+1)/2, Max = k*n or -k, Min = k or -k*n,
//   Product: rank i % n holds sign * (i % 3 + 1), rank (i + 1) % n holds 2, the others 1.
int64_t K(int64_t i) { return i % 7 + 1; }
int64_t Sign(int64_t i) { return i % 3 == 1 ? -1 : 1; }

int64_t Input(ReduceOp op, int r, int n, int64_t i) {
  if (op == ReduceOp::PRODUCT) {
    if (r == i % n) return Sign(i) * (i % 3 + 1);
    return r == (i + 1) % n ? 2 : 1;
  }
  return Sign(i) * (r + 1) * K(i);
}

int64_t Reduced(ReduceOp op, int n, int64_t i) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVERAGE:
      return Sign(i) * K(i) * n * (n + 1) / 2;
    case ReduceOp::MAX:
      return Sign(i) > 0 ? K(i) * n : -K(i);
    case ReduceOp::MIN:
      return Sign(i) > 0 ? K(i) : -K(i) * n;
    case ReduceOp::PRODUCT:
      return Sign(i) * (i % 3 + 1) * (n > 1 ? 2 : 1);
  }
  return 0;
}

// The result with prescale `pre` (a positive whole number, exact in every dtype) and postscale
// `post`: integers are scaled in double and truncated toward zero, and average to the floor.
double Expected(ReduceOp op, int n, int64_t i, double pre, double post, bool integer) {
  double v = Reduced(op, n, i) * (op == ReduceOp::PRODUCT ? std::pow(pre, n) : pre);
  if (op == ReduceOp::AVERAGE) v = integer ? std::floor(v / n) : v / n;
  return integer ? std::trunc(v * post) : v * post;
}

template <typename T>
std::vector<T> ReductionInput(ReduceOp op, int r, int n, int64_t count, int64_t first) {
  std::vector<T> x(count);
  for (int64_t i = 0; i < count; ++i) x[i] = static_cast<T>(Input(op, r, n, first + i));
  return x;
}

template <typename T>
void CheckReduced(const std::vector<T>& got, ReduceOp op, int n, int64_t first, double pre, double post,
                  const std::string& what) {
  const bool integer = std::is_integral_v<T>;
  // Averages of floats divide by n, or multiply by post / n: one rounding of the dtype.
  const double tolerance = integer || op != ReduceOp::AVERAGE ? 0 : std::is_same_v<T, float> ? 1e-6 : 1e-14;
  for (size_t i = 0; i < got.size(); ++i) {
    const double expected = Expected(op, n, first + static_cast<int64_t>(i), pre, post, integer);
    CHECK(std::fabs(static_cast<double>(got[i]) - expected) <= tolerance * std::fabs(expected),
          << what << " n=" << n << " element " << i << ": got " << static_cast<double>(got[i]) << ", expected "
          << expected);
  }
}

// Several allreduces of each op, packed into one ring pass, plus one large enough to run alone;
// counts add up to uneven segments.
template <typename T>
void CheckFusedAllreduce(int n, DataType dtype, ReduceOp op, double pre, double post, int64_t small_allreduce_bytes,
                         bool shm) {
  const std::vector<int64_t> counts = {1, 5, 0, 13, 31, 600};  // 600 elements run alone
  std::vector<RankWork> work(n);
  for (int r = 0; r < n; ++r) {
    for (size_t t = 0; t < counts.size(); ++t) {
      Request request = Make(Collective::ALLREDUCE, "t" + std::to_string(t), dtype, {counts[t]});
      request.op = op;
      request.prescale = pre;
      request.postscale = post;
      work[r].Submit(request, ReductionInput<T>(op, r, n, counts[t], static_cast<int64_t>(t)));
    }
  }
  const std::vector<Response> plan = Negotiate(work, 1 << 20);
  CHECK(plan.size() == 2 && plan[0].names.size() == counts.size() - 1, << "expected one packed batch and one solo");
  const std::vector<Outcome> outcomes = Run(work, small_allreduce_bytes, 1 << 20, shm);
  const std::string what = std::string(ReduceOpName(op)) + " " + DataTypeName(dtype) +
                           " small_allreduce_bytes=" + std::to_string(small_allreduce_bytes) +
                           (shm ? " shm" : "");
  for (size_t t = 0; t < counts.size(); ++t) {
    const std::string name = "t" + std::to_string(t);
    for (int r = 0; r < n; ++r) {
      CHECK(outcomes[r].statuses.at(name).ok(), << outcomes[r].statuses.at(name).message);
      CHECK(outcomes[r].shapes.at(name) == Shape{counts[t]});
    }
    CheckReduced(outcomes[0].Values<T>(name), op, n, static_cast<int64_t>(t), pre, post, what + " " + name);
    CheckSameOnEveryRank(outcomes, name);
  }
  for (int r = 0; r < n; ++r) {  // inputs are only read
    for (size_t t = 0; t < counts.size(); ++t) {
      const std::vector<T> expected = ReductionInput<T>(op, r, n, counts[t], static_cast<int64_t>(t));
      CHECK(work[r].inputs[t].size() == expected.size() * sizeof(T) &&
            (expected.empty() || std::memcmp(work[r].inputs[t].data(), expected.data(), work[r].inputs[t].size()) == 0),
            << "input of t" << t << " on rank " << r << " was modified");
    }
  }
}

// By the ring, then with every buffer small enough for recursive doubling, then (up to 4 ranks,
// as many as a test host holds) through shared memory.
void CheckAllreduces(int n) {
  for (auto [small_allreduce_bytes, shm] : {std::pair{int64_t{0}, false}, std::pair{int64_t{1} << 20, false},
                                            std::pair{int64_t{0}, true}}) {
    if (shm && n > 4) continue;
    mpirep_test::ForEachNumericCase([&](auto element, DataType dtype, ReduceOp op, double pre, double post) {
      CheckFusedAllreduce<decltype(element)>(n, dtype, op, pre, post, small_allreduce_bytes, shm);
    });
  }
}

template <typename T>
std::vector<T> Pattern(int seed, int64_t count) {
  std::vector<T> v(count);
  for (int64_t i = 0; i < count; ++i) v[i] = static_cast<T>((seed * 31 + i * 7) % 97 - 48);
  return v;
}

template <typename T>
void CheckBroadcast(int n, DataType dtype) {
  const int64_t multi_chunk = 3 * kChunk / static_cast<int64_t>(sizeof(T)) + 5;
  const std::vector<int64_t> counts = {0, 1, 37, multi_chunk};
  std::vector<RankWork> work(n);
  for (int r = 0; r < n; ++r) {
    for (int root = 0; root < n; ++root) {
      for (int64_t count : counts) {
        Request request = Make(Collective::BROADCAST, "b" + std::to_string(root) + "." + std::to_string(count),
                               dtype, {count});
        request.root = root;
        work[r].Submit(request, Pattern<T>(r, count));
      }
    }
  }
  const std::vector<Outcome> outcomes = Run(work);
  for (int root = 0; root < n; ++root) {
    for (int64_t count : counts) {
      const std::string name = "b" + std::to_string(root) + "." + std::to_string(count);
      for (int r = 0; r < n; ++r) {
        CHECK(outcomes[r].statuses.at(name).ok());
        CHECK(outcomes[r].Values<T>(name) == Pattern<T>(root, count),
              << name << " on rank " << r << " of " << n << " (" << DataTypeName(dtype) << ")");
      }
    }
  }
  for (int r = 0; r < n; ++r) {
    size_t i = 0;
    for (int root = 0; root < n; ++root) {
      for (int64_t count : counts) {
        std::vector<char> expected(count * sizeof(T));
        const std::vector<T> values = Pattern<T>(r, count);
        if (count) std::memcpy(expected.data(), values.data(), expected.size());
        CHECK(work[r].inputs[i++] == expected, << "broadcast input modified on rank " << r);
      }
    }
  }
}

// Rank r contributes (5r + 1) % 4 rows (some none) of width 3.
void CheckUnevenAllgather(int n) {
  auto rows = [](int r) { return static_cast<int64_t>((5 * r + 1) % 4); };
  auto value = [](int r, int64_t j) { return static_cast<int32_t>(1000 * r + j); };
  std::vector<RankWork> work(n);
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    std::vector<int32_t> mine(rows(r) * 3);
    for (size_t j = 0; j < mine.size(); ++j) mine[j] = value(r, static_cast<int64_t>(j));
    work[r].Submit(Make(Collective::ALLGATHER, "g", DataType::INT32, {rows(r), 3}), mine);
    total += rows(r);
  }
  std::vector<int32_t> expected;
  for (int r = 0; r < n; ++r) {
    for (int64_t j = 0; j < rows(r) * 3; ++j) expected.push_back(value(r, j));
  }
  const std::vector<Outcome> outcomes = Run(work);
  for (int r = 0; r < n; ++r) {
    CHECK(outcomes[r].shapes.at("g") == (Shape{total, 3}), << "n=" << n << " rank " << r);
    CHECK(outcomes[r].Values<int32_t>("g") == expected, << "allgather n=" << n << " rank " << r);
  }
}

// Rank s sends (s + 2d) % 3 rows of width 2 to rank d; row j of that block holds
// 10000 s + 100 d + j in both columns, negated in the second.
void CheckAlltoall(int n) {
  auto split = [](int s, int d) { return static_cast<int64_t>((s + 2 * d) % 3); };
  std::vector<RankWork> work(n);
  for (int s = 0; s < n; ++s) {
    std::vector<int64_t> mine;
    Request request = Make(Collective::ALLTOALL, "a", DataType::INT64, {0, 2});
    for (int d = 0; d < n; ++d) {
      request.splits.push_back(split(s, d));
      for (int64_t j = 0; j < split(s, d); ++j) {
        mine.push_back(10000 * s + 100 * d + j);
        mine.push_back(-(10000 * s + 100 * d + j));
      }
    }
    request.shape[0] = static_cast<int64_t>(mine.size() / 2);
    work[s].Submit(request, mine);
  }
  const std::vector<Outcome> outcomes = Run(work);
  for (int d = 0; d < n; ++d) {
    std::vector<int64_t> expected, received;
    for (int s = 0; s < n; ++s) {
      received.push_back(split(s, d));
      for (int64_t j = 0; j < split(s, d); ++j) {
        expected.push_back(10000 * s + 100 * d + j);
        expected.push_back(-(10000 * s + 100 * d + j));
      }
    }
    CHECK(outcomes[d].Values<int64_t>("a") == expected, << "alltoall n=" << n << " rank " << d);
    CHECK(outcomes[d].results.at("a").received_splits == received, << "received splits n=" << n << " rank " << d);
    CHECK(outcomes[d].shapes.at("a") == (Shape{static_cast<int64_t>(expected.size() / 2), 2}));
  }
}

// 2n + 1 rows of width 3: rank r gets its block of EvenSegments, scaled once.
template <typename T>
void CheckReducescatter(int n, DataType dtype, ReduceOp op, double pre, double post) {
  const int64_t rows = 2 * n + 1;
  std::vector<RankWork> work(n);
  for (int r = 0; r < n; ++r) {
    Request request = Make(Collective::REDUCESCATTER, "rs", dtype, {rows, 3});
    request.op = op;
    request.prescale = pre;
    request.postscale = post;
    work[r].Submit(request, ReductionInput<T>(op, r, n, rows * 3, 0));
  }
  const std::vector<Outcome> outcomes = Run(work);
  const std::vector<int64_t> blocks = EvenSegments(rows, n);
  int64_t first_row = 0;
  for (int r = 0; r < n; ++r) {
    CHECK(outcomes[r].shapes.at("rs") == (Shape{blocks[r], 3}));
    CheckReduced(outcomes[r].Values<T>("rs"), op, n, first_row * 3, pre, post,
                 std::string("reducescatter ") + DataTypeName(dtype) + " rank " + std::to_string(r));
    first_row += blocks[r];
  }
}

// Ranks that joined take part with zeros (no rows for allgather) and discard the result;
// Average still divides by all n ranks.
void CheckJoinedRanksStandIn(int n, int64_t small_allreduce_bytes, bool shm = false) {
  std::set<int> joined = {1};
  if (n > 3) joined.insert(3);
  int64_t active_weight = 0;  // sum of r + 1 over the ranks that did not join
  std::vector<RankWork> work(n);
  for (int r = 0; r < n; ++r) {
    if (joined.count(r)) {
      work[r].joined = true;
      continue;
    }
    active_weight += r + 1;
    Request sum = Make(Collective::ALLREDUCE, "sum", DataType::INT64, {11});
    work[r].Submit(sum, ReductionInput<int64_t>(ReduceOp::SUM, r, n, 11, 0));
    Request average = Make(Collective::ALLREDUCE, "average", DataType::FLOAT64, {11});
    average.op = ReduceOp::AVERAGE;
    work[r].Submit(average, ReductionInput<double>(ReduceOp::SUM, r, n, 11, 0));
    work[r].Submit(Make(Collective::ALLGATHER, "gather", DataType::INT32, {r + 1, 2}),
                   std::vector<int32_t>(2 * (r + 1), r));
    Request bcast = Make(Collective::BROADCAST, "bcast", DataType::INT32, {9});
    work[r].Submit(bcast, Pattern<int32_t>(r, 9));
    Request scatter = Make(Collective::REDUCESCATTER, "scatter", DataType::INT64, {2 * n + 1});
    work[r].Submit(scatter, ReductionInput<int64_t>(ReduceOp::SUM, r, n, 2 * n + 1, 0));
  }
  const std::vector<Outcome> outcomes = Run(work, small_allreduce_bytes, 1 << 20, shm);
  std::vector<int32_t> gathered;
  for (int r = 0; r < n; ++r) {
    if (!joined.count(r)) gathered.insert(gathered.end(), 2 * (r + 1), r);
  }
  const std::vector<int64_t> blocks = EvenSegments(2 * n + 1, n);
  int64_t first = 0;
  for (int r = 0; r < n; ++r) {
    const Outcome& out = outcomes[r];
    if (joined.count(r)) {
      CHECK(out.outputs.empty(), << "a joined rank got results");
      first += blocks[r];
      continue;
    }
    const std::vector<int64_t> sums = out.Values<int64_t>("sum");
    const std::vector<double> averages = out.Values<double>("average");
    for (int64_t i = 0; i < 11; ++i) {
      CHECK(sums[i] == Sign(i) * K(i) * active_weight, << "join sum n=" << n << " i=" << i);
      CHECK(averages[i] == static_cast<double>(Sign(i) * K(i) * active_weight) * (1.0 / n),
            << "join average n=" << n << " i=" << i << " got " << averages[i]);
    }
    CHECK(out.Values<int32_t>("gather") == gathered, << "join allgather n=" << n);
    CHECK(out.Values<int32_t>("bcast") == Pattern<int32_t>(0, 9), << "join broadcast n=" << n);
    const std::vector<int64_t> block = out.Values<int64_t>("scatter");
    CHECK(static_cast<int64_t>(block.size()) == blocks[r]);
    for (size_t i = 0; i < block.size(); ++i) {
      const int64_t idx = first + static_cast<int64_t>(i);
      CHECK(block[i] == Sign(idx) * K(idx) * active_weight, << "join reducescatter n=" << n << " rank " << r);
    }
    first += blocks[r];
  }
}

// A rank whose output cannot be allocated still takes part (the others depend on it) and then
// fails that operation alone.
// A rank that cannot allocate one output of a fused batch still takes its part (the batch
// goes through the fusion buffer there), and every other output is right, over the ring and
// over shared memory alike.
void CheckFailedAllocation(bool shm) {
  const int n = 3;
  std::vector<RankWork> work(n);
  for (int r = 0; r < n; ++r) {
    for (const char* name : {"x", "y"}) {
      work[r].Submit(Make(Collective::ALLREDUCE, name, DataType::INT32, {40}),
                     ReductionInput<int32_t>(ReduceOp::SUM, r, n, 40, 0));
    }
  }
  work[1].cannot_allocate.insert("x");
  const std::vector<Outcome> outcomes = Run(work, 0, 1 << 20, shm);
  CHECK(outcomes[1].statuses.at("x").code == StatusCode::INTERNAL &&
            outcomes[1].statuses.at("x").message == "rank 1: could not allocate the output of 'x'",
        << outcomes[1].statuses.at("x").message);
  for (int r = 0; r < n; ++r) {
    for (const char* name : {"x", "y"}) {
      if (r == 1 && name[0] == 'x') continue;
      CHECK(outcomes[r].statuses.at(name).ok());
      CheckReduced(outcomes[r].Values<int32_t>(name), ReduceOp::SUM, n, 0, 1.0, 1.0,
                   std::string("after a failed allocation, ") + name + (shm ? " shm" : ""));
    }
  }
}

// The phases each collective records for the timeline: packing only where it copies into a
// buffer of its own, the transfer named for its algorithm, unpacking where it copies out.
void CheckPhases(int n) {
  using Phases = std::vector<std::string>;
  std::vector<RankWork> work(n);
  for (int r = 0; r < n; ++r) {
    for (const char* name : {"fused.0", "fused.1"}) {
      work[r].Submit(Make(Collective::ALLREDUCE, name, DataType::INT32, {5}), ReductionInput<int32_t>(ReduceOp::SUM, r, n, 5, 0));
    }
    work[r].Submit(Make(Collective::ALLREDUCE, "solo", DataType::INT64, {kSoloBytes / 8}),
                   ReductionInput<int64_t>(ReduceOp::SUM, r, n, kSoloBytes / 8, 0));
    Request scaled = Make(Collective::ALLREDUCE, "scaled", DataType::FLOAT64, {3});
    scaled.prescale = 2.0;
    work[r].Submit(scaled, ReductionInput<double>(ReduceOp::SUM, r, n, 3, 0));
    work[r].Submit(Make(Collective::ALLGATHER, "gather", DataType::INT32, {1}), std::vector<int32_t>{r});
    work[r].Submit(Make(Collective::BROADCAST, "bcast", DataType::INT32, {2}), std::vector<int32_t>{r, r});
    work[r].Submit(Make(Collective::REDUCESCATTER, "scatter", DataType::INT32, {n}), std::vector<int32_t>(n, r));
    Request exchange = Make(Collective::ALLTOALL, "exchange", DataType::INT32, {n});
    exchange.splits.assign(n, 1);
    work[r].Submit(exchange, std::vector<int32_t>(n, r));
    work[r].Submit(Make(Collective::BARRIER, "barrier", DataType::UINT8, {0}), std::vector<uint8_t>{});
  }
  const std::vector<Outcome> outcomes = Run(work);
  for (int r = 0; r < n; ++r) {
    const auto& phases = outcomes[r].phases;
    CHECK(phases.at("fused.0") == (Phases{"RING_ALLREDUCE", "UNPACK"}) && phases.at("fused.1") == phases.at("fused.0"),
          << "the ring reads a fused allreduce's inputs in place: no packing beforehand");
    CHECK(phases.at("solo") == (Phases{"RING_ALLREDUCE"}));
    CHECK(phases.at("scaled") == (Phases{"PACK", "RING_ALLREDUCE"}), << "a lone prescaled allreduce scales into its output");
    CHECK(phases.at("gather") == (Phases{"PACK", "RING_ALLGATHER"}));
    CHECK(phases.at("bcast") == (Phases{"CHAIN_BROADCAST"}));
    CHECK(phases.at("scatter") == (Phases{"RING_REDUCESCATTER", "UNPACK"}));
    CHECK(phases.at("exchange") == (Phases{"PACK", "PAIRWISE_ALLTOALL"}));
    CHECK(phases.at("barrier").empty());
  }
  const std::vector<Outcome> shared = Run(work, 0, 1 << 20, /*shm=*/true);
  for (int r = 0; r < n; ++r) {
    const auto& phases = shared[r].phases;
    CHECK(phases.at("fused.0") == (Phases{"SHM_ALLREDUCE"}),
          << "inputs are copied in where they lie and results straight into the outputs");
    CHECK(phases.at("solo") == (Phases{"SHM_ALLREDUCE"}));
    CHECK(phases.at("scaled") == (Phases{"PACK", "SHM_ALLREDUCE"}));
    CHECK(phases.at("gather") == (Phases{"PACK", "RING_ALLGATHER"}), << "other collectives keep the transport");
  }
  if (n < 3) return;  // the ring at one or two ranks, whatever the size
  const std::vector<Outcome> doubled = Run(work, /*small_allreduce_bytes=*/64);  // not "solo"
  for (int r = 0; r < n; ++r) {
    const auto& phases = doubled[r].phases;
    CHECK(phases.at("fused.0") == (Phases{"PACK", "DOUBLING_ALLREDUCE", "UNPACK"}));
    CHECK(phases.at("solo") == (Phases{"RING_ALLREDUCE"}));
    CHECK(phases.at("scaled") == (Phases{"PACK", "DOUBLING_ALLREDUCE"}));
  }
}

}  // namespace

TEST(Executor, FusedAllreduces) {
  for (int n = 1; n <= 8; ++n) CheckAllreduces(n);
}

TEST(Executor, BroadcastFromEveryRoot) {
  for (int n = 1; n <= 8; ++n) {
    CheckBroadcast<int8_t>(n, DataType::INT8);
    CheckBroadcast<int32_t>(n, DataType::INT32);
    CheckBroadcast<double>(n, DataType::FLOAT64);
  }
}

TEST(Executor, UnevenAllgather) {
  for (int n = 1; n <= 8; ++n) CheckUnevenAllgather(n);
}

TEST(Executor, Alltoall) {
  for (int n = 1; n <= 8; ++n) CheckAlltoall(n);
}

TEST(Executor, Reducescatter) {
  for (int n = 1; n <= 8; ++n) {
    CheckReducescatter<int32_t>(n, DataType::INT32, ReduceOp::SUM, 3.0, 0.5);
    CheckReducescatter<int64_t>(n, DataType::INT64, ReduceOp::AVERAGE, 3.0, 0.5);
    CheckReducescatter<double>(n, DataType::FLOAT64, ReduceOp::AVERAGE, 3.0, 0.5);
    CheckReducescatter<float>(n, DataType::FLOAT32, ReduceOp::MAX, 1.0, 1.0);
  }
}

TEST(Executor, JoinedRanksStandIn) {
  for (int n = 2; n <= 8; ++n) {
    CheckJoinedRanksStandIn(n, 0);
    CheckJoinedRanksStandIn(n, 1 << 20);
    CheckJoinedRanksStandIn(n, 0, /*shm=*/true);
  }
}

TEST(Executor, Phases) {
  for (int n : {1, 2, 3}) CheckPhases(n);
}

TEST(Executor, FailedAllocation) {
  CheckFailedAllocation(/*shm=*/false);
  CheckFailedAllocation(/*shm=*/true);
}
