// Allocations on the cache-hit path, the steady state of training: a step whose every tensor
// runs from the response cache (Negotiator::Submit, Contribute, Agree on every rank) must not
// allocate more than it did when this test was written. The test binary counts every call of
// the global operator new (replaced here, for the whole binary).
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "check.h"
#include "core/negotiator.h"
#include "core/process_sets.h"

namespace {
std::atomic<int64_t> g_allocations{0};
}  // namespace

void* operator new(size_t bytes) {
  ++g_allocations;
  if (void* p = std::malloc(bytes ? bytes : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

using namespace mpirep;

namespace {

// A job of `size` negotiators in one thread that runs steps of `tensors` allreduces, each named
// longer than a short string's inline buffer, so that a copy of a name allocates.
class HitJob {
 public:
  HitJob(int size, int tensors) : ops_(size, std::vector<Operation>(tensors)) {
    Config config;
    config.cache_capacity = 1024;
    for (int r = 0; r < size; ++r) {
      sets_.push_back(std::make_unique<ProcessSets>(size));
      ranks_.push_back(std::make_unique<Negotiator>(r, size, config, *sets_.back()));
      for (int t = 0; t < tensors; ++t) {
        Request& request = ops_[r][t].request;
        request.rank = r;
        request.name = "gradients/layer_" + std::to_string(t) + "/kernel";
        request.shape = {256};
      }
    }
  }

  // Submits every tensor on every rank and runs rounds until all have run; returns the
  // allocations made by the negotiators meanwhile, and whether every tensor ran from the cache.
  int64_t Step(bool* all_hits) {
    const auto now = Negotiator::Clock::now();
    int64_t counted = 0;
    auto counting = [&](auto call) {
      const int64_t before = g_allocations.load();
      call();
      counted += g_allocations.load() - before;
    };
    *all_hits = true;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      for (Operation& op : ops_[r]) {
        op.state = TensorState::kSubmitted;
        counting([&] { ranks_[r]->Submit(op); });
      }
    }
    for (int round = 0; round < 10 && ranks_[0]->Busy(); ++round) {
      std::vector<RoundWords*> words;
      for (auto& n : ranks_) counting([&] { words.push_back(&n->Contribute(now)); });
      std::vector<uint64_t> agreed(words[0]->data(), words[0]->data() + words[0]->size());
      for (RoundWords* w : words) {
        for (int64_t i = 0; i < w->size(); ++i) agreed[i] &= w->data()[i];
      }
      for (size_t r = 0; r < ranks_.size(); ++r) {
        std::copy(agreed.begin(), agreed.end(), words[r]->data());
        counting([&] { ranks_[r]->Agree(*words[r], now); });
      }
      if (ranks_[0]->SlowPhase()) {
        *all_hits = false;
        SlowPhase(now);
      }
    }
    return counted;
  }

 private:
  void SlowPhase(Negotiator::Clock::time_point now) {
    std::vector<RequestList> lists(ranks_.size());
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (ranks_[r]->SendsRequests()) lists[r] = ranks_[r]->TakeRequests();
    }
    for (int sender : ranks_[0]->Senders()) ranks_[0]->Receive(sender, lists[sender], now);
    const ResponseList list = ranks_[0]->Decide();
    for (const Response& response : list.responses) {
      for (auto& n : ranks_) n->Accept(response);
    }
  }

  std::vector<std::unique_ptr<ProcessSets>> sets_;
  std::vector<std::unique_ptr<Negotiator>> ranks_;
  std::vector<std::vector<Operation>> ops_;
};

// The allocations of a step that runs wholly from the cache, after two steps that fill it.
int64_t HitStepAllocations(int size, int tensors) {
  HitJob job(size, tensors);
  bool all_hits = false;
  job.Step(&all_hits);
  job.Step(&all_hits);
  const int64_t allocations = job.Step(&all_hits);
  CHECK(all_hits, << "size " << size << ", " << tensors << " tensors: a step after two did not run from the cache");
  return allocations;
}

}  // namespace

// The counts measured when this test was written, before the collectives' traits table; a
// change that allocates more per tensor on this path must say why here.
TEST(HitPathAllocations, NoMoreThanBefore) {
  const struct {
    int size, tensors;
    int64_t recorded;
  } cases[] = {{1, 16, 27}, {1, 64, 77}, {3, 16, 81}, {3, 64, 231}};
  for (const auto& c : cases) {
    const int64_t now = HitStepAllocations(c.size, c.tensors);
    CHECK(now <= c.recorded, << c.size << " ranks, " << c.tensors << " tensors: " << now
                             << " allocations in a step of cache hits, " << c.recorded << " before");
  }
}
