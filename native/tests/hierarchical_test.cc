// Hierarchical allreduce on fake hosts: ranks as threads, each with three in-process transports
// (all ranks, its host's ranks, its peers of the same local index on the other hosts), laid out
// by slot (ranks of a host consecutive) and by node (round robin), and with the stages inside
// each host through a shared-memory segment per host instead of its ring. The Executor runs fused
// batches and solo tensors of uneven sizes with every op and scale factors, hierarchically and
// on the flat ring. Results must equal a reference folded element by element from every rank's
// input (exactly for integers and for floats whose sums are exact; within rounding otherwise),
// be bit-identical on every rank, and match the flat ring's bits where the sums are exact. A
// counting transport checks which path ran and how many bytes crossed between hosts. Chunk size
// and path changed between collectives, as autotuning does, take effect and keep the bits.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "numeric_cases.h"
#include "core/executor.h"
#include "core/shm_segment.h"
#include "core/stand_in.h"
#include "inproc_transport.h"

using namespace mpirep;

namespace {

constexpr int64_t kChunk = 64;  // bytes: many chunks per slice, slices split mid-chunk
constexpr size_t kShmSlotBytes = 96;  // many rounds per stage, pieces of a few elements

struct Layout {
  int hosts;
  int per_host;
  bool round_robin;  // rank r on host r % hosts (mpirun --map-by node), else r / per_host
  int size() const { return hosts * per_host; }
  int HostOf(int rank) const { return round_robin ? rank % hosts : rank / per_host; }
  int LocalOf(int rank) const { return round_robin ? rank / hosts : rank % per_host; }
  std::string Name() const {
    return std::to_string(hosts) + "x" + std::to_string(per_host) + (round_robin ? " by node" : " by slot");
  }
};

// Counts what a rank sends, and the bytes that leave its host.
class CountingTransport : public Transport {
 public:
  CountingTransport(Transport& inner, std::function<bool(int peer)> crosses_hosts)
      : inner_(inner), crosses_hosts_(std::move(crosses_hosts)) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  Handle Isend(int peer, const void* data, size_t bytes) override {
    ++sends;
    if (crosses_hosts_(peer)) cross_host_bytes += static_cast<int64_t>(bytes);
    return inner_.Isend(peer, data, bytes);
  }
  Handle Irecv(int peer, void* data, size_t bytes) override { return inner_.Irecv(peer, data, bytes); }
  void Wait(Handle handle) override { inner_.Wait(handle); }
  bool Test(Handle handle) override { return inner_.Test(handle); }
  void Abandon(Handle handle) override { inner_.Abandon(handle); }

  int64_t sends = 0;
  int64_t cross_host_bytes = 0;

 private:
  Transport& inner_;
  std::function<bool(int)> crosses_hosts_;
};

struct Traffic {
  int64_t flat_sends = 0, host_sends = 0, across_sends = 0;
  std::vector<int64_t> cross_host_bytes;  // per host
};

// What the test runs on every rank: one allreduce response after another, in order.
struct Job {
  std::vector<Response> responses;
  // inputs[rank][tensor name]: raw bytes
  std::vector<std::map<std::string, std::vector<char>>> inputs;
  int joined_rank = -1;  // stands in with zeros for every tensor
};

using Outputs = std::vector<std::map<std::string, std::vector<char>>>;  // [rank][name]

// Changes an executor's settings before the response of the given index runs, as autotuning does.
using Retuning = std::function<void(Executor&, size_t response)>;

// Runs `job` on `layout` with the setting `mode`; fills `traffic` when given. With
// `host_memory`, the ranks of each host share a segment for the stages inside the host.
Outputs RunOnHosts(const Layout& layout, const Job& job, int64_t mode, Traffic* traffic = nullptr,
                   const Retuning& retune = nullptr, bool host_memory = false) {
  const int n = layout.size();
  InProcessWorld flat_world(n);
  std::vector<std::unique_ptr<InProcessWorld>> host_worlds, across_worlds;
  std::vector<SharedSegment> segments;
  for (int h = 0; h < layout.hosts; ++h) {
    host_worlds.push_back(std::make_unique<InProcessWorld>(layout.per_host));
    const std::string name = SharedSegment::UniqueName();
    segments.push_back(SharedSegment::Create(name, ShmCollectives::SegmentBytes(layout.per_host, kShmSlotBytes)));
    SharedSegment::Unlink(name);
  }
  for (int l = 0; l < layout.per_host; ++l) across_worlds.push_back(std::make_unique<InProcessWorld>(layout.hosts));
  Outputs outputs(n);
  std::vector<Traffic> per_rank(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      const int host = layout.HostOf(r), local = layout.LocalOf(r);
      InProcessTransport flat_inner(flat_world, r);
      InProcessTransport host_inner(*host_worlds[host], local);
      InProcessTransport across_inner(*across_worlds[local], host);
      CountingTransport flat(flat_inner, [&](int peer) { return layout.HostOf(peer) != host; });
      CountingTransport on_host(host_inner, [](int) { return false; });
      CountingTransport across(across_inner, [](int) { return true; });
      std::optional<ShmCollectives> shared;
      if (host_memory) shared.emplace(segments[host].data(), local, layout.per_host, kShmSlotBytes);
      Executor executor(flat, kChunk, /*small_allreduce_bytes=*/0,
                        HostTransports{&on_host, &across, shared ? &*shared : nullptr}, mode);
      CHECK(executor.HierarchicalIsAChoice() == (layout.hosts > 1 && layout.per_host > 1), << layout.Name());
      for (size_t k = 0; k < job.responses.size(); ++k) {
        const Response& response = job.responses[k];
        if (retune) retune(executor, k);
        std::vector<std::unique_ptr<StandIn>> stand_ins;
        std::vector<Operation> mine(response.names.size());
        std::vector<Operation*> ops;
        for (size_t i = 0; i < response.names.size(); ++i) {
          const std::string& name = response.names[i];
          if (r == job.joined_rank) {
            ops.push_back(&stand_ins.emplace_back(std::make_unique<StandIn>(response, i))->op);
            continue;
          }
          Operation& op = mine[i];
          op.request.name = name;
          op.request.dtype = response.dtype;
          op.request.shape = response.shapes[i];
          op.input = job.inputs[r].at(name).data();
          std::vector<char>& out = outputs[r][name];
          op.allocate = [&out, &op](const Shape& shape) -> void* {
            out.assign(std::max<int64_t>(1, NumElements(shape) * ElementSize(op.request.dtype)), 0);
            return out.data();
          };
          ops.push_back(&op);
        }
        OperationResult result;
        for (const Status& status : executor.Run(response, ops, &result)) CHECK(status.ok(), << status.message);
      }
      per_rank[r] = {flat.sends, on_host.sends, across.sends, {flat.cross_host_bytes + across.cross_host_bytes}};
    });
  }
  for (std::thread& t : threads) t.join();
  if (traffic) {
    traffic->cross_host_bytes.assign(layout.hosts, 0);
    for (int r = 0; r < n; ++r) {
      traffic->flat_sends += per_rank[r].flat_sends;
      traffic->host_sends += per_rank[r].host_sends;
      traffic->across_sends += per_rank[r].across_sends;
      traffic->cross_host_bytes[layout.HostOf(r)] += per_rank[r].cross_host_bytes[0];
    }
  }
  return outputs;
}

// Input of rank r at element i. `exact`: small whole numbers (with a sign), whose sums and
// products are exact in every dtype; otherwise fractions, whose float sums round by order.
double InputValue(ReduceOp op, int r, int n, int64_t i, bool exact) {
  const double sign = i % 3 == 1 ? -1 : 1;
  if (op == ReduceOp::PRODUCT) {  // one factor of +-(1..3) and one of 2 per element, else 1
    if (r == i % n) return sign * static_cast<double>(i % 3 + 1);
    return r == (i + 1) % n ? 2 : 1;
  }
  const double whole = sign * (r + 1) * static_cast<double>(i % 7 + 1);
  return exact ? whole : whole * 0.1 + 1.0 / (3 + r + i % 5);
}

template <typename T>
std::vector<char> InputBytes(ReduceOp op, int r, int n, int64_t count, int64_t first, bool exact) {
  std::vector<char> bytes(std::max<int64_t>(1, count * static_cast<int64_t>(sizeof(T))));
  for (int64_t i = 0; i < count; ++i) {
    const T v = static_cast<T>(InputValue(op, r, n, first + i, exact));
    std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
  }
  return bytes;
}

template <typename T>
T ValueAt(const std::vector<char>& bytes, int64_t i) {
  T v;
  std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}

// The reference: element i of every contributing rank's input, prescaled and folded in rank
// order in double (integers scale with truncation, average to the floor), then postscaled.
// `magnitude` receives what rounding errors scale with: the same fold of absolute values.
template <typename T>
double Reference(const Job& job, const std::string& name, int n, int64_t i, ReduceOp op, double pre,
                 double post, double* magnitude) {
  constexpr bool integer = std::is_integral_v<T>;
  double acc = 0, absolute = 0;
  for (int r = 0; r < n; ++r) {
    double x = r == job.joined_rank ? 0.0 : static_cast<double>(ValueAt<T>(job.inputs[r].at(name), i));
    x = integer ? std::trunc(x * pre) : x * pre;
    absolute += std::fabs(x);
    if (r == 0) {
      acc = x;
    } else if (op == ReduceOp::SUM || op == ReduceOp::AVERAGE) {
      acc += x;
    } else if (op == ReduceOp::MIN) {
      acc = std::min(acc, x);
    } else if (op == ReduceOp::MAX) {
      acc = std::max(acc, x);
    } else {
      acc *= x;
    }
  }
  const double divisor = op == ReduceOp::AVERAGE ? n : 1;
  *magnitude = std::max(std::fabs(acc), absolute) * std::fabs(post) / divisor;
  if (op == ReduceOp::AVERAGE && integer) return std::trunc(std::floor(acc / n) * post);
  return integer ? std::trunc(acc * post) : acc * post / divisor;
}

// One fused batch of uneven tensors and one solo tensor, of dtype T, with `op` and scales.
template <typename T>
Job MakeJob(DataType dtype, ReduceOp op, double pre, double post, int n, bool exact) {
  const std::vector<int64_t> batch = {1, 5, 0, 13, 31};
  const int64_t solo = 601;
  Job job;
  job.inputs.resize(n);
  Response fused, alone;
  for (Response* response : {&fused, &alone}) {
    response->collective = Collective::ALLREDUCE;
    response->dtype = dtype;
    response->op = op;
    response->prescale = pre;
    response->postscale = post;
  }
  auto add = [&](Response& response, const std::string& name, int64_t count, int64_t first) {
    response.names.push_back(name);
    response.shapes.push_back({count});
    for (int r = 0; r < n; ++r) job.inputs[r][name] = InputBytes<T>(op, r, n, count, first, exact);
  };
  for (size_t t = 0; t < batch.size(); ++t) add(fused, "t" + std::to_string(t), batch[t], static_cast<int64_t>(t));
  add(alone, "solo", solo, 7);
  job.responses = {fused, alone};
  return job;
}

template <typename T>
void CheckAgainstReference(const Layout& layout, const Job& job, const Outputs& got, double tolerance,
                           const std::string& what) {
  const int n = layout.size();
  for (const Response& response : job.responses) {
    for (size_t t = 0; t < response.names.size(); ++t) {
      const std::string& name = response.names[t];
      const int64_t count = NumElements(response.shapes[t]);
      const int first_rank = job.joined_rank == 0 ? 1 : 0;
      for (int64_t i = 0; i < count; ++i) {
        double magnitude = 0;
        const double expected =
            Reference<T>(job, name, n, i, response.op, response.prescale, response.postscale, &magnitude);
        const double value = static_cast<double>(ValueAt<T>(got[first_rank].at(name), i));
        CHECK(std::fabs(value - expected) <= tolerance * magnitude,
              << what << " " << name << "[" << i << "]: got " << value << ", expected " << expected);
      }
      for (int r = 0; r < n; ++r) {
        if (r == first_rank || r == job.joined_rank) continue;
        CHECK(got[r].at(name) == got[first_rank].at(name), << what << " " << name << ": rank " << r << " differs");
      }
    }
  }
}

template <typename T>
void CheckOp(const Layout& layout, DataType dtype, ReduceOp op, double pre, double post) {
  const int n = layout.size();
  const std::string what = layout.Name() + " " + DataTypeName(dtype) + " " + ReduceOpName(op) +
                           " pre=" + std::to_string(pre) + " post=" + std::to_string(post);
  // Exact inputs: the hierarchical bits, with the host's stages on its ring or in its shared
  // memory, equal the flat ring's and the reference's.
  const Job exact = MakeJob<T>(dtype, op, pre, post, n, true);
  const Outputs hierarchical = RunOnHosts(layout, exact, 1);
  const Outputs shared = RunOnHosts(layout, exact, 1, nullptr, nullptr, /*host_memory=*/true);
  const Outputs flat = RunOnHosts(layout, exact, 0);
  const double rounding = std::is_integral_v<T> ? 0 : std::numeric_limits<T>::epsilon();
  CheckAgainstReference<T>(layout, exact, hierarchical, rounding, what + " exact");
  CHECK(hierarchical == flat, << what << ": hierarchical and flat results differ");
  CHECK(shared == flat, << what << ": hierarchical through shared memory and flat results differ");
  if (std::is_integral_v<T> || op == ReduceOp::PRODUCT) return;
  // Fractions: another order of summation rounds differently, within n roundings.
  const Job inexact = MakeJob<T>(dtype, op, pre, post, n, false);
  CheckAgainstReference<T>(layout, inexact, RunOnHosts(layout, inexact, 1), 4 * n * rounding, what + " inexact");
  CheckAgainstReference<T>(layout, inexact, RunOnHosts(layout, inexact, 1, nullptr, nullptr, true), 4 * n * rounding,
                           what + " inexact, shared memory");
}

void CheckEveryOp(const Layout& layout) {
  mpirep_test::ForEachNumericCase([&](auto element, DataType dtype, ReduceOp op, double pre, double post) {
    CheckOp<decltype(element)>(layout, dtype, op, pre, post);
  });
}

// A joined rank stands in with zeros; Average still divides by every rank.
void CheckJoinedRank(const Layout& layout) {
  Job job = MakeJob<double>(DataType::FLOAT64, ReduceOp::AVERAGE, 1.0, 1.0, layout.size(), true);
  job.joined_rank = 1;
  CheckAgainstReference<double>(layout, job, RunOnHosts(layout, job, 1), 1e-15, layout.Name() + " joined rank");
}

// Auto takes the hierarchical path only with several hosts and several ranks on each; then the
// flat transport carries nothing, and each host sends 2(h-1)/h of the buffer across, against
// 2(n-1)/n for the flat ring.
void CheckPathAndCrossHostBytes(const Layout& layout) {
  const int n = layout.size(), h = layout.hosts;
  const int64_t count = 240 * n;  // every slice and segment the same size
  Job job;
  job.inputs.resize(n);
  Response response;
  response.names = {"x"};
  response.shapes = {{count}};
  response.dtype = DataType::INT32;
  for (int r = 0; r < n; ++r) job.inputs[r]["x"] = InputBytes<int32_t>(ReduceOp::SUM, r, n, count, 0, true);
  job.responses = {response};
  const int64_t bytes = count * 4;
  const bool automatic = h > 1 && layout.per_host > 1;
  Traffic auto_traffic, flat_traffic, forced_traffic, shared_traffic;
  const Outputs by_auto = RunOnHosts(layout, job, -1, &auto_traffic);
  RunOnHosts(layout, job, 0, &flat_traffic);
  RunOnHosts(layout, job, 1, &forced_traffic);
  const Outputs shared = RunOnHosts(layout, job, 1, &shared_traffic, nullptr, /*host_memory=*/true);
  CheckAgainstReference<int32_t>(layout, job, by_auto, 0, layout.Name() + " auto");
  CheckAgainstReference<int32_t>(layout, job, shared, 0, layout.Name() + " shared memory");
  const std::string what = layout.Name() + ": ";
  CHECK((auto_traffic.flat_sends == 0) == automatic && (auto_traffic.across_sends > 0) == (automatic && h > 1),
        << what << "auto took the wrong path");
  CHECK(flat_traffic.host_sends == 0 && flat_traffic.across_sends == 0, << what << "off still used the hosts");
  CHECK(forced_traffic.flat_sends == 0, << what << "on still used the flat ring");
  CHECK(shared_traffic.flat_sends == 0 && shared_traffic.host_sends == 0 &&
            shared_traffic.cross_host_bytes == forced_traffic.cross_host_bytes,
        << what << "with shared memory the host's ring still ran, or the network carried other bytes");
  for (int host = 0; host < h; ++host) {
    CHECK(forced_traffic.cross_host_bytes[host] == 2 * (h - 1) * bytes / h,
          << what << "host " << host << " sent " << forced_traffic.cross_host_bytes[host] << " bytes across");
    if (!layout.round_robin && h > 1) {  // one ring link leaves each host
      CHECK(flat_traffic.cross_host_bytes[host] == 2 * (n - 1) * bytes / n,
            << what << "flat: host " << host << " sent " << flat_traffic.cross_host_bytes[host] << " bytes across");
    }
  }
}

// Autotuning changes the chunk size and the path between collectives: each change takes effect
// in the next one (fewer messages with a larger chunk, the flat ring once switched off), and the
// results stay those of the reference, the same bits as without any change.
void CheckRetunedBetweenCollectives(const Layout& layout) {
  const int n = layout.size();
  const Job job = MakeJob<int64_t>(DataType::INT64, ReduceOp::SUM, 1.0, 1.0, n, true);
  const Outputs plain = RunOnHosts(layout, job, 1);
  const Retuning switching = [](Executor& executor, size_t k) {
    executor.SetChunkBytes(k == 0 ? 4096 : 8);
    executor.SetHierarchicalAllreduce(k == 0 ? 0 : 1);
  };
  const Outputs retuned = RunOnHosts(layout, job, 1, nullptr, switching);
  CheckAgainstReference<int64_t>(layout, job, retuned, 0, layout.Name() + " retuned");
  CHECK(retuned == plain, << layout.Name() + ": retuning changed the bits");

  Job solo = job;
  solo.responses.erase(solo.responses.begin());  // the 601-element tensor alone
  Traffic small_chunks, large_chunks, switched_off;
  RunOnHosts(layout, solo, 1, &small_chunks);
  RunOnHosts(layout, solo, 1, &large_chunks, [](Executor& e, size_t) { e.SetChunkBytes(1 << 20); });
  RunOnHosts(layout, solo, 1, &switched_off, [](Executor& e, size_t) { e.SetHierarchicalAllreduce(0); });
  const std::string what = layout.Name() + ": ";
  CHECK(large_chunks.host_sends + large_chunks.across_sends < small_chunks.host_sends + small_chunks.across_sends,
        << what << "the chunk size did not reach the hierarchical rings");
  CHECK(small_chunks.flat_sends == 0 && switched_off.flat_sends > 0 && switched_off.across_sends == 0,
        << what << "switching the hierarchical path off did not take effect");
}

}  // namespace

const Layout kLayouts[] = {Layout{2, 2, false}, Layout{3, 2, false}, Layout{2, 3, true},
                           Layout{1, 3, false}, Layout{3, 1, false}, Layout{2, 2, true}};

TEST(Hierarchical, EveryOpMatchesTheReferenceAndTheFlatRing) {
  for (const Layout& layout : kLayouts) CheckEveryOp(layout);
}

TEST(Hierarchical, JoinedRank) {
  for (const Layout& layout : kLayouts) CheckJoinedRank(layout);
}

TEST(Hierarchical, PathAndCrossHostBytes) {
  for (const Layout& layout : kLayouts) CheckPathAndCrossHostBytes(layout);
}

TEST(Hierarchical, RetunedBetweenCollectives) {
  for (const Layout& layout : kLayouts) CheckRetunedBetweenCollectives(layout);
}
