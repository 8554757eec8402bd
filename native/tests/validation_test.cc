// Every rule a rank checks alone before it submits: the status code, and a message that names
// the rank, the tensor and what is wrong.
#include <map>
#include <string>
#include <vector>

#include "check.h"
#include "core/validation.h"

using namespace mpirep;

namespace {

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// 4 ranks; process set 1 is ranks 1 and 3.
const std::map<int32_t, std::vector<int>> kSets = {{0, {0, 1, 2, 3}}, {1, {1, 3}}};

Request Make(Collective collective, Shape shape, int32_t process_set = 0) {
  Request r;
  r.collective = collective;
  r.name = "t";
  r.dtype = DataType::FLOAT32;
  r.shape = std::move(shape);
  r.process_set = process_set;
  return r;
}

// Checks that `request`, submitted on `rank`, fails with `code` and a message containing `why`.
void CheckRejected(const Request& request, int rank, StatusCode code, const std::string& why) {
  const Status status = ValidateRequest(request, rank, 4, kSets);
  CHECK(status.code == code, << "expected a failure containing '" << why << "', got '" << status.message << "'");
  CHECK(Contains(status.message, why), << status.message);
  CHECK(Contains(status.message, "rank " + std::to_string(rank) + ": "), << status.message);
}

void CheckAccepted(const Request& request, int rank) {
  const Status status = ValidateRequest(request, rank, 4, kSets);
  CHECK(status.ok(), << status.message);
}

const StatusCode kInvalid = StatusCode::INVALID_ARGUMENT;

}  // namespace

TEST(Validation, NameAndProcessSet) {
  CheckAccepted(Make(Collective::ALLREDUCE, {2, 3}), 0);
  Request unnamed = Make(Collective::ALLREDUCE, {2});
  unnamed.name = "";
  CheckRejected(unnamed, 0, kInvalid, "an operation needs a name");
  CheckRejected(Make(Collective::ALLREDUCE, {2}, 7), 1, kInvalid, "unknown process set 7");
  CheckRejected(Make(Collective::ALLREDUCE, {2}, 1), 2, kInvalid, "this rank is not in process set 1");
  CheckAccepted(Make(Collective::ALLREDUCE, {2}, 1), 3);
}

TEST(Validation, NewProcessSetRanks) {
  Request add = Make(Collective::ADD_PROCESS_SET, {0});
  add.new_set_ranks = {0, 2};
  CheckAccepted(add, 0);
  for (const std::vector<int64_t>& bad : {std::vector<int64_t>{0, 4}, {-1, 2}, {2, 1}, {1, 1}}) {
    add.new_set_ranks = bad;
    CheckRejected(add, 0, kInvalid, "a process set needs distinct ranks in 0..3, in increasing order; got " + ShapeString(bad));
  }
  add.new_set_ranks = {};
  CheckRejected(add, 0, kInvalid, "a process set needs at least one rank");
}

TEST(Validation, Shapes) {
  CheckRejected(Make(Collective::ALLREDUCE, {2, -1}), 0, kInvalid, "negative dimension in shape [2, -1]");
  for (Collective c : {Collective::ALLGATHER, Collective::REDUCESCATTER, Collective::ALLTOALL}) {
    CheckRejected(Make(c, {}), 0, kInvalid, std::string(CollectiveName(c)) + " needs a tensor of at least one dimension");
  }
}

TEST(Validation, ReductionsOfBools) {
  Request sum_of_bools = Make(Collective::ALLREDUCE, {3});
  sum_of_bools.dtype = DataType::BOOL;
  CheckRejected(sum_of_bools, 0, StatusCode::UNSUPPORTED, "Sum is not defined for bool");
  sum_of_bools.collective = Collective::REDUCESCATTER;
  sum_of_bools.op = ReduceOp::AVERAGE;
  CheckRejected(sum_of_bools, 0, StatusCode::UNSUPPORTED, "Average is not defined for bool");
  sum_of_bools.op = ReduceOp::MAX;
  CheckAccepted(sum_of_bools, 0);
}

TEST(Validation, BroadcastRoot) {
  Request broadcast = Make(Collective::BROADCAST, {5});
  broadcast.root = 3;
  CheckAccepted(broadcast, 0);
  broadcast.root = 4;
  CheckRejected(broadcast, 2, kInvalid, "root rank 4 is outside 0..3");
  broadcast.root = -1;
  CheckRejected(broadcast, 2, kInvalid, "root rank -1 is outside 0..3");
  broadcast.process_set = 1;  // the root counts the set's ranks
  broadcast.root = 2;
  CheckRejected(broadcast, 1, kInvalid, "root rank 2 is outside 0..1");
  broadcast.root = 1;
  CheckAccepted(broadcast, 1);
}

TEST(Validation, AlltoallSplits) {
  Request alltoall = Make(Collective::ALLTOALL, {6, 2});
  alltoall.splits = {1, 2, 0, 3};
  CheckAccepted(alltoall, 0);
  alltoall.splits = {3, 3};
  CheckRejected(alltoall, 0, kInvalid, "alltoall needs one split per rank (4), got 2");
  alltoall.process_set = 1;  // splits count the set's ranks
  CheckAccepted(alltoall, 3);
  alltoall.splits = {7, -1};
  CheckRejected(alltoall, 3, kInvalid, "alltoall splits must not be negative");
  alltoall.splits = {2, 3};
  CheckRejected(alltoall, 3, kInvalid, "alltoall splits sum to 5 but the first dimension is 6");
}

TEST(Validation, TheMessageNamesRankAndTensor) {
  Request broadcast = Make(Collective::BROADCAST, {5});
  broadcast.name = "weights";
  broadcast.root = 9;
  CHECK(ValidateRequest(broadcast, 2, 4, kSets).message == "rank 2: root rank 9 is outside 0..3 (tensor 'weights')",
        << ValidateRequest(broadcast, 2, 4, kSets).message);
}
