// Requests that ranks still owe rank 0 for collectives it has already failed. Each such request
// fails alone, at once, with the collective's error, so that it never pairs with the other ranks'
// next tensor of the same name:
//   - a tensor that the stall shutdown cancelled, which a rank that was late for it brings after
//     all (Coordinator::CancelStalled decides who was late);
//   - the members of a group whose ranks disagreed about its size, which a rank with the longer
//     list still submits after the group failed (Coordinator::FailGroup).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "message.h"

namespace mpirep {

class OwedRequests {
 public:
  struct Debt {
    std::vector<int32_t> owed;  // per rank, the requests it still owes
    StatusCode code;
    std::string error;
  };

  // `debt.owed` per rank: 1 for each rank that owes the tensor `name`.
  void OweTensor(const std::string& name, Debt debt);
  // `debt.owed` per rank: how many more members of `group` the rank owes.
  void OweGroupMembers(const std::string& group, Debt debt);
  // When `request` pays off a debt (of its tensor's name, or of its group, each asked separately
  // since rank 0 counts a group's members in between): the error it fails with.
  std::optional<Status> CollectTensor(const Request& request);
  std::optional<Status> CollectGroupMember(const Request& request);

 private:
  static std::optional<Status> Collect(std::unordered_map<std::string, Debt>& debts, const std::string& key,
                                       int rank);

  std::unordered_map<std::string, Debt> tensors_;
  std::unordered_map<std::string, Debt> groups_;
};

}  // namespace mpirep
