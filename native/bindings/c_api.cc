#include "c_api.h"

#include <cstring>
#include <string>

#include "runtime/session.h"

namespace mpirep {
namespace {

void CopyMessage(const std::string& message, char* out, size_t size) {
  if (!out || size == 0) return;
  const size_t n = std::min(message.size(), size - 1);
  std::memcpy(out, message.data(), n);
  out[n] = '\0';
}

int Enqueue(const mpirep_op_desc* desc, mpirep_allocate_fn allocate, mpirep_done_fn done,
            void* user, char* error, size_t error_size) {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  if (!runtime) {
    CopyMessage("mpirep is not initialised: call mpirep.init() first", error, error_size);
    return static_cast<int>(StatusCode::SHUT_DOWN);
  }
  Operation op;
  Request& r = op.request;
  r.collective = static_cast<Collective>(desc->collective);
  r.name = desc->name ? desc->name : "";
  r.dtype = static_cast<DataType>(desc->dtype);
  r.shape.assign(desc->shape, desc->shape + desc->ndim);
  r.op = static_cast<ReduceOp>(desc->reduce_op);
  r.root = desc->root_rank;
  r.prescale = desc->prescale;
  r.postscale = desc->postscale;
  if (desc->splits) r.splits.assign(desc->splits, desc->splits + desc->nsplits);
  r.process_set = desc->process_set;
  r.group_size = desc->group_size;
  if (desc->new_set_ranks) r.new_set_ranks.assign(desc->new_set_ranks, desc->new_set_ranks + desc->n_new_set_ranks);
  r.removed_set = desc->removed_set;
  op.input = desc->input;
  op.allocate = [allocate, user](const Shape& shape) {
    return allocate(user, static_cast<int>(shape.size()), shape.data());
  };
  op.done = [done, user](const Status& status, const OperationResult& result) {
    const mpirep_result out{static_cast<int>(status.code), status.message.c_str(),
                            static_cast<int>(result.received_splits.size()), result.received_splits.data(),
                            result.last_joined_rank, result.new_process_set};
    done(user, &out);
  };
  Status status = runtime->Enqueue(std::move(op));
  if (!status.ok()) CopyMessage(status.message, error, error_size);
  return static_cast<int>(status.code);
}

int IsInitialized() { return CurrentRuntime() != nullptr; }

int Rank() {
  auto runtime = CurrentRuntime();
  return runtime ? runtime->topology().rank : -1;
}

int Size() {
  auto runtime = CurrentRuntime();
  return runtime ? runtime->topology().size : -1;
}

const mpirep_api kApi = {MPIREP_API_VERSION, Enqueue, IsInitialized, Rank, Size};

}  // namespace
}  // namespace mpirep

extern "C" const mpirep_api* mpirep_get_api(void) { return &mpirep::kApi; }
