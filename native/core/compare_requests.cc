#include "compare_requests.h"

#include <algorithm>
#include <sstream>
#include <utility>

namespace mpirep {
namespace {

std::string FormatDouble(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

// "[2, 3] on ranks 0, 2; [3] on rank 1": every distinct value with the ranks that gave it.
std::string ByRank(const std::vector<std::pair<int, std::string>>& values) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (const auto& [rank, value] : values) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == value; });
    if (it == groups.end()) {
      groups.push_back({value, {rank}});
    } else {
      it->second.push_back(rank);
    }
  }
  std::ostringstream out;
  for (size_t g = 0; g < groups.size(); ++g) {
    out << (g ? "; " : "") << groups[g].first << " on rank" << (groups[g].second.size() > 1 ? "s " : " ")
        << RankList(groups[g].second);
  }
  return out.str();
}

// The dimensions ranks must agree on: all of them, except the first for collectives whose
// first dimension may differ per rank.
std::string ComparableShape(const Request& r) {
  if (Traits(r.collective).ragged()) {
    Shape rest(r.shape.begin() + std::min<size_t>(1, r.shape.size()), r.shape.end());
    return "[*" + ShapeString(rest).substr(1) + " (rank " + std::to_string(r.shape.size()) + ")";
  }
  return ShapeString(r.shape);
}

}  // namespace

std::string RankList(const std::vector<int>& ranks) {
  std::ostringstream out;
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

Response CompareRequests(const std::string& name, const std::vector<const Request*>& requests,
                         bool* group_sizes_differ) {
  const Request& first = *requests[0];
  Response response;
  response.collective = first.collective;
  response.process_set = first.process_set;
  response.names = {name};
  response.dtype = first.dtype;
  response.op = first.op;
  response.root = first.root;
  response.prescale = first.prescale;
  response.postscale = first.postscale;
  response.shapes = {first.shape};

  auto agree = [&](const char* what, auto describe) -> bool {
    std::vector<std::pair<int, std::string>> values;
    for (const Request* r : requests) values.emplace_back(r->rank, describe(*r));
    if (std::all_of(values.begin(), values.end(), [&](const auto& v) { return v.second == values[0].second; })) {
      return true;
    }
    response.kind = Response::Kind::ERROR;
    response.error_code = StatusCode::MISMATCH;
    response.error = std::string("mismatched ") + what + " for tensor '" + name + "': " + ByRank(values);
    return false;
  };
  const CollectiveTraits& traits = Traits(first.collective);
  bool ok = agree("collective operations", [](const Request& r) { return std::string(CollectiveName(r.collective)); }) &&
            agree("data types", [](const Request& r) { return std::string(DataTypeName(r.dtype)); }) &&
            agree("shapes", ComparableShape);
  if (ok && !agree("group sizes", [](const Request& r) { return std::to_string(r.group_size); })) {
    ok = false;
    *group_sizes_differ = !first.group.empty();
  }
  if (ok && traits.reduces()) {
    ok = agree("reduction ops", [](const Request& r) { return std::string(ReduceOpName(r.op)); }) &&
         agree("prescale factors", [](const Request& r) { return FormatDouble(r.prescale); }) &&
         agree("postscale factors", [](const Request& r) { return FormatDouble(r.postscale); });
  }
  if (ok && traits.rooted()) {
    agree("root ranks", [](const Request& r) { return std::to_string(r.root); });
  }
  if (ok && traits.changes_sets()) {
    agree("process sets", [](const Request& r) {
      return Traits(r.collective).adds_set() ? ShapeString(r.new_set_ranks) : std::to_string(r.removed_set);
    });
  }
  return response;
}

}  // namespace mpirep
