// Adding and removing a process set: the registry changes as every rank accepts the response
// (Negotiator::Accept) and the runtime splits its communicators (Runtime::Execute); nothing
// moves over the set's transport.
#include "collectives.h"

namespace mpirep {

std::vector<Status> RunSetChange(Executor&, const Response&, const std::vector<Operation*>& ops, OperationResult*) {
  return std::vector<Status>(ops.size());
}

}  // namespace mpirep
