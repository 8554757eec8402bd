// Join: a rank has run out of work and stands in for the others' collectives (stand_in.h) until
// every rank has joined. Negotiation did the work; running it reports the rank that joined last.
#include "collectives.h"

namespace mpirep {

std::vector<Status> RunJoin(Executor&, const Response& response, const std::vector<Operation*>& ops,
                            OperationResult* result) {
  result->last_joined_rank = response.last_joined_rank;
  return std::vector<Status>(ops.size());
}

}  // namespace mpirep
