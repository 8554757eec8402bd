// The process-set registry: membership as framework threads see it (validation), and the
// channels of the sets a rank is in, dropped with the set.
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "core/executor.h"
#include "core/process_sets.h"
#include "inproc_transport.h"

using namespace mpirep;

namespace {

// A channel that counts how many of its kind are alive.
class CountedChannel : public SetChannel {
 public:
  CountedChannel(int* alive, Transport& transport) : alive_(alive), executor_(transport, 1 << 16, 1 << 16) { ++*alive_; }
  ~CountedChannel() override { --*alive_; }
  Executor& executor() override { return executor_; }

 private:
  int* alive_;
  Executor executor_;
};

Request Make(const std::string& name, int32_t set) {
  Request r;
  r.name = name;
  r.shape = {4};
  r.process_set = set;
  return r;
}

TEST(ProcessSets, MembershipAndValidation) {
  ProcessSets sets(4);
  CHECK(sets.Ranks(0) == (std::vector<int>{0, 1, 2, 3}));
  CHECK(sets.Ranks(1).empty() && sets.Find(1) == nullptr);
  CHECK(sets.Validate(Make("x", 1), 2).message == "rank 2: unknown process set 1 (tensor 'x')",
        << sets.Validate(Make("x", 1), 2).message);
  sets.Add(1, {1, 3});
  CHECK(sets.Ranks(1) == (std::vector<int>{1, 3}) && sets.Find(1) && *sets.Find(1) == sets.Ranks(1));
  CHECK(sets.Validate(Make("x", 1), 3).ok());
  CHECK(sets.Validate(Make("x", 1), 2).message == "rank 2: this rank is not in process set 1 (tensor 'x')",
        << sets.Validate(Make("x", 1), 2).message);
  sets.Remove(1);
  CHECK(sets.Ranks(1).empty() && !sets.Validate(Make("x", 1), 3).ok());
}

TEST(ProcessSets, ChannelsLiveAsLongAsTheirSet) {
  InProcessWorld world(1);
  InProcessTransport transport(world, 0);
  int alive = 0;
  ProcessSets sets(2);
  sets.Add(1, {0});
  sets.Attach(0, std::make_unique<CountedChannel>(&alive, transport));
  sets.Attach(1, std::make_unique<CountedChannel>(&alive, transport));
  CHECK(alive == 2 && sets.Channel(0) && sets.Channel(1) && !sets.Channel(2));
  int visited = 0;
  sets.ForEachChannel([&](SetChannel&) { ++visited; });
  CHECK(visited == 2);
  sets.Remove(1);
  CHECK(alive == 1 && !sets.Channel(1));
  sets.DropChannels();
  CHECK(alive == 0 && !sets.Channel(0) && sets.Ranks(0).size() == 2);
}

}  // namespace

// The registry hands out set ids (rank 0's Coordinator takes one per creation it decides): in
// order from 1, set 0 being every rank's, and never one twice, even after its set is removed.
TEST(ProcessSets, IdsAreNeverGivenTwice) {
  ProcessSets sets(3);
  const int32_t first = sets.NewId();
  sets.Add(first, {0, 1});
  const int32_t second = sets.NewId();
  sets.Remove(first);
  const int32_t third = sets.NewId();
  CHECK(first == 1 && second == 2 && third == 3, << first << ", " << second << ", " << third);
}
