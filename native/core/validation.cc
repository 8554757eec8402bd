#include "validation.h"

#include <algorithm>
#include <string>

#include "reduce.h"

namespace mpirep {
namespace {

Status CheckNewSetRanks(const std::vector<int64_t>& ranks, int size) {
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size || (i > 0 && ranks[i] <= ranks[i - 1])) {
      return Status::Error(StatusCode::INVALID_ARGUMENT, "a process set needs distinct ranks in 0.." +
                                                             std::to_string(size - 1) +
                                                             ", in increasing order; got " + ShapeString(ranks));
    }
  }
  if (ranks.empty()) return Status::Error(StatusCode::INVALID_ARGUMENT, "a process set needs at least one rank");
  return Status::Ok();
}

Status CheckAlltoallSplits(const Request& r, int set_size) {
  auto invalid = [](const std::string& why) { return Status::Error(StatusCode::INVALID_ARGUMENT, why); };
  if (static_cast<int>(r.splits.size()) != set_size) {
    return invalid("alltoall needs one split per rank (" + std::to_string(set_size) + "), got " +
                   std::to_string(r.splits.size()));
  }
  int64_t total = 0;
  for (int64_t s : r.splits) {
    if (s < 0) return invalid("alltoall splits must not be negative");
    total += s;
  }
  if (total != r.shape[0]) {
    return invalid("alltoall splits sum to " + std::to_string(total) + " but the first dimension is " +
                   std::to_string(r.shape[0]));
  }
  return Status::Ok();
}

// The rules themselves; errors say what is wrong, ValidateRequest says where.
Status Check(const Request& r, int rank, int size, const std::map<int32_t, std::vector<int>>& process_sets) {
  auto invalid = [](const std::string& why) { return Status::Error(StatusCode::INVALID_ARGUMENT, why); };
  if (r.name.empty()) return invalid("an operation needs a name");
  if (!IsCollectiveCode(static_cast<int>(r.collective))) {
    return invalid("unknown collective code " + std::to_string(static_cast<int>(r.collective)));
  }
  auto set = process_sets.find(r.process_set);
  if (set == process_sets.end()) return invalid("unknown process set " + std::to_string(r.process_set));
  const std::vector<int>& members = set->second;
  const int set_size = static_cast<int>(members.size());
  if (std::find(members.begin(), members.end(), rank) == members.end()) {
    return invalid("this rank is not in process set " + std::to_string(r.process_set));
  }
  const CollectiveTraits& traits = Traits(r.collective);
  if (traits.adds_set()) {
    Status ranks = CheckNewSetRanks(r.new_set_ranks, size);
    if (!ranks.ok()) return ranks;
  }
  for (int64_t d : r.shape) {
    if (d < 0) return invalid("negative dimension in shape " + ShapeString(r.shape));
  }
  if (traits.reduces() && !ReduceOpSupported(r.dtype, r.op)) {
    return Status::Error(StatusCode::UNSUPPORTED,
                         std::string(ReduceOpName(r.op)) + " is not defined for " + DataTypeName(r.dtype));
  }
  if (traits.rows() && r.shape.empty()) {
    return invalid(std::string(CollectiveName(r.collective)) + " needs a tensor of at least one dimension");
  }
  if (traits.rooted() && (r.root < 0 || r.root >= set_size)) {
    return invalid("root rank " + std::to_string(r.root) + " is outside 0.." + std::to_string(set_size - 1));
  }
  if (traits.splits()) return CheckAlltoallSplits(r, set_size);
  return Status::Ok();
}

}  // namespace

Status ValidateRequest(const Request& request, int rank, int size,
                       const std::map<int32_t, std::vector<int>>& process_sets) {
  Status status = Check(request, rank, size, process_sets);
  if (!status.ok()) {
    status.message = "rank " + std::to_string(rank) + ": " + status.message + " (tensor '" + request.name + "')";
  }
  return status;
}

}  // namespace mpirep
