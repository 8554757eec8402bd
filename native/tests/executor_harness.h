// The executor's test harness: every rank of a job as a thread over InProcessTransport runs
// the responses that negotiation (Coordinator, then PlanFusion) makes from every rank's
// requests, and reports what it got; and the reduction inputs with their closed forms. Used by
// executor_test.cc and the tests of each collective (collective_<name>_test.cc).
#pragma once

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "check.h"
#include "core/coordinator.h"
#include "core/executor.h"
#include "core/fusion.h"
#include "core/shm_collectives.h"
#include "core/shm_segment.h"
#include "core/stand_in.h"
#include "on_ranks.h"

namespace mpirep_test::executor_harness {

using namespace mpirep;

constexpr int64_t kChunk = 64;        // bytes: many chunks per segment, segments split mid-chunk
constexpr int64_t kSoloBytes = 1024;  // an allreduce this large runs alone instead of packed
inline char g_empty[1];                // the address of an empty buffer

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

inline Request Make(Collective collective, const std::string& name, DataType dtype, Shape shape) {
  Request r;
  r.collective = collective;
  r.name = name;
  r.dtype = dtype;
  r.shape = std::move(shape);
  return r;
}

// Rank 0's part, done here for all ranks at once: negotiation, then the fusion plan.
inline std::vector<Response> Negotiate(const std::vector<RankWork>& work, int64_t fusion_threshold) {
  ProcessSets sets(static_cast<int>(work.size()));
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
inline std::vector<Outcome> Run(std::vector<RankWork>& work, int64_t small_allreduce_bytes = 0,
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

inline void CheckSameOnEveryRank(const std::vector<Outcome>& outcomes, const std::string& name) {
  for (size_t r = 1; r < outcomes.size(); ++r) {
    CHECK(outcomes[r].outputs.at(name) == outcomes[0].outputs.at(name),
          << name << ": rank " << r << " differs from rank 0 (n=" << outcomes.size() << ")");
  }
}

// The reduction inputs: element i on rank r of n, with k = i % 7 + 1 and a sign that is -1
// where i % 3 == 1. Every op has a closed form in n (before scaling):
//   Sum = sign * k * n(n+1)/2, Max = k*n or -k, Min = k or -k*n,
//   Product: rank i % n holds sign * (i % 3 + 1), rank (i + 1) % n holds 2, the others 1.
inline int64_t K(int64_t i) { return i % 7 + 1; }
inline int64_t Sign(int64_t i) { return i % 3 == 1 ? -1 : 1; }

inline int64_t Input(ReduceOp op, int r, int n, int64_t i) {
  if (op == ReduceOp::PRODUCT) {
    if (r == i % n) return Sign(i) * (i % 3 + 1);
    return r == (i + 1) % n ? 2 : 1;
  }
  return Sign(i) * (r + 1) * K(i);
}

inline int64_t Reduced(ReduceOp op, int n, int64_t i) {
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
inline double Expected(ReduceOp op, int n, int64_t i, double pre, double post, bool integer) {
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

// Values that differ by rank (`seed`) and index.
template <typename T>
 std::vector<T> Pattern(int seed, int64_t count) {
  std::vector<T> v(count);
  for (int64_t i = 0; i < count; ++i) v[i] = static_cast<T>((seed * 31 + i * 7) % 97 - 48);
  return v;
}

}  // namespace mpirep_test::executor_harness
