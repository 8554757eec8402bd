// The mismatch rule: the requests that the ranks made for one tensor must agree on everything
// that decides how the collective runs. Rank 0 compares them once every member has submitted.
#pragma once

#include <string>
#include <vector>

#include "message.h"

namespace mpirep {

// Compares `requests` (those of the ranks that submitted tensor `name`, at least one, in rank
// order) and returns the decision: a response of kind EXECUTE carrying the request's fields, or
// an ERROR with code MISMATCH whose text lists every distinct value with the ranks that gave it,
// e.g. "mismatched shapes for tensor 'w': [2, 3] on ranks 0, 2; [3] on rank 1". Fields that are
// not the comparison's (first_dims, cacheable, ...) are left for the caller.
// `group_sizes_differ`: set when the requests are members of one group whose ranks disagree
// about its size (every member of the group then fails).
Response CompareRequests(const std::string& name, const std::vector<const Request*>& requests,
                         bool* group_sizes_differ);

// "0, 2, 5"
std::string RankList(const std::vector<int>& ranks);

}  // namespace mpirep
