#include "owed_requests.h"

#include <algorithm>

namespace mpirep {

void OwedRequests::OweTensor(const std::string& name, Debt debt) { tensors_[name] = std::move(debt); }

void OwedRequests::OweGroupMembers(const std::string& group, Debt debt) { groups_[group] = std::move(debt); }

std::optional<Status> OwedRequests::CollectTensor(const Request& request) {
  return Collect(tensors_, request.name, request.rank);
}

std::optional<Status> OwedRequests::CollectGroupMember(const Request& request) {
  if (request.group.empty()) return std::nullopt;
  return Collect(groups_, request.group, request.rank);
}

std::optional<Status> OwedRequests::Collect(std::unordered_map<std::string, Debt>& debts, const std::string& key,
                                            int rank) {
  auto it = debts.find(key);
  if (it == debts.end() || it->second.owed[rank] == 0) return std::nullopt;
  Status status = Status::Error(it->second.code, it->second.error);
  --it->second.owed[rank];
  if (std::all_of(it->second.owed.begin(), it->second.owed.end(), [](int32_t n) { return n == 0; })) debts.erase(it);
  return status;
}

}  // namespace mpirep
