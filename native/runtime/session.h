// The process's one Runtime, between init and shutdown. Adapters reach it through c_api.h.
#pragma once

#include <memory>

#include "runtime.h"

namespace mpirep {

// Collective over `comm`. Fails if already initialised.
void StartSession(MPI_Comm comm, const Config& config);
// Collective. Does nothing when not initialised. See Runtime::Shutdown for `reason`.
void EndSession(const std::string& reason = "");
// The running runtime, or null. Holding the pointer keeps it alive through a concurrent end.
std::shared_ptr<Runtime> CurrentRuntime();

}  // namespace mpirep
