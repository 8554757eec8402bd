// The checks a rank makes alone, before it submits a request: what fails here is this rank's
// mistake, reported to it at once, and never reaches the other ranks.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "message.h"

namespace mpirep {

// `rank` and `size`: this rank among all ranks; `process_sets`: id -> member ranks, in order,
// 0 being every rank. Errors name `rank` and the tensor.
Status ValidateRequest(const Request& request, int rank, int size,
                       const std::map<int32_t, std::vector<int>>& process_sets);

}  // namespace mpirep
