#include "session.h"

#include <mutex>
#include <stdexcept>

namespace mpirep {
namespace {

std::mutex session_mutex;
std::shared_ptr<Runtime> session_runtime;

}  // namespace

void StartSession(MPI_Comm comm, const Config& config) {
  std::lock_guard<std::mutex> lock(session_mutex);
  if (session_runtime) throw std::logic_error("mpirep is already initialised");
  session_runtime = std::make_shared<Runtime>(comm, config);
}

void EndSession(const std::string& reason) {
  std::shared_ptr<Runtime> runtime;
  {
    std::lock_guard<std::mutex> lock(session_mutex);
    runtime.swap(session_runtime);
  }
  if (runtime) runtime->Shutdown(reason);
}

std::shared_ptr<Runtime> CurrentRuntime() {
  std::lock_guard<std::mutex> lock(session_mutex);
  return session_runtime;
}

}  // namespace mpirep
