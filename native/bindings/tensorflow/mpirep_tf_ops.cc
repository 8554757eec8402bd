// TensorFlow op library for mpirep: one asynchronous kernel, MpirepCollective, that hands its
// input to the core through the C API (bindings/c_api.h) and completes from the core's callbacks,
// so a graph keeps computing while its collectives negotiate and run.
//
// The library never links against the core: Python passes the address of the core's function
// table to mpirep_tf_set_api() after loading both. Codes for collectives, dtypes and statuses,
// the dtypes the op accepts and the TensorFlow error each status becomes all come from
// core/common.h, the same vocabulary the core and its Python module use. Large outputs come
// from the core's one output pool, through the C API.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bindings/c_api.h"
#include "core/common.h"
#include "tf_compat.h"
#include "tf_core_link.h"
#include "tensorflow/core/framework/cancellation.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace mpirep_tf {
namespace {

using tensorflow::AsyncOpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;
using tensorflow::shape_inference::InferenceContext;

// "T: {uint8, int8, ...}": every dtype of common.h.
std::string DtypeAttr() {
  std::string names;
#define MPIREP_TF_DTYPE_NAME(name, py, size) names += (names.empty() ? "" : ", ") + std::string(#py);
  MPIREP_DTYPES(MPIREP_TF_DTYPE_NAME)
#undef MPIREP_TF_DTYPE_NAME
  return "T: {" + names + "}";
}

// The TensorFlow error of each core status is the canonical code of the status table.
Status TfStatus(int code, const char* message) {
  if (code == static_cast<int>(mpirep::StatusCode::OK)) return OkStatus();
  switch (static_cast<mpirep::StatusCode>(code)) {
#define MPIREP_TF_STATUS_CASE(name, py, canonical) \
  case mpirep::StatusCode::name:                   \
    return ErrorStatus(static_cast<absl::StatusCode>(tensorflow::error::canonical), message);
    MPIREP_STATUS_CODES(MPIREP_TF_STATUS_CASE)
#undef MPIREP_TF_STATUS_CASE
  }
  return ErrorStatus(absl::StatusCode::kInternal, message);
}

void* DataOf(const Tensor& tensor) {
  if (tensor.TotalBytes() == 0) return g_empty_buffer;
  return const_cast<char*>(tensor.tensor_data().data());
}

// Outputs of at least kPoolMinBytes live in the core's output pool (64-byte aligned, as
// TensorFlow's CPU allocator is), which recycles buffers by size instead of returning them to
// the system: a fresh multi-megabyte allocation is a fresh mmap whose pages fault in one by one
// while the ring writes them, which cost more than the transfer at 64 MiB. A training step
// reduces the same sizes every step, so their buffers come back warm.
constexpr size_t kPoolMinBytes = 1 << 20;

class PooledBuffer : public tensorflow::TensorBuffer {
 public:
  PooledBuffer(void* data, size_t bytes, size_t capacity)
      : TensorBuffer(data), bytes_(bytes), capacity_(capacity) {}
  size_t size() const override { return bytes_; }
  TensorBuffer* root_buffer() override { return this; }
  void FillAllocationDescription(tensorflow::AllocationDescription* proto) const override {
    proto->set_requested_bytes(static_cast<int64_t>(bytes_));
    proto->set_allocator_name("mpirep_output_pool");
  }

 private:
  // The table outlives every tensor: the core's library stays loaded.
  ~PooledBuffer() override { g_core_api.load()->put_output_buffer(data(), capacity_); }
  size_t bytes_;
  size_t capacity_;
};

// Everything one enqueued operation needs until the core calls done, shared with the step's
// cancellation callback. The input tensor itself stays alive in the kernel's context until
// done() is called, so it is not copied here: an extra reference would stop TensorFlow from
// forwarding its buffer to the output.
//
// Inside a graph the collectives of a step run concurrently, so when one fails (a mismatch,
// a rank that failed) TensorFlow cancels the step while others still wait in the core, maybe
// for tensors no other rank will ever submit. TensorFlow ends the step only when every kernel
// has called done(), so a waiting kernel gives up then: it calls done() at once and leaves its
// request to the core, which fails it at shutdown, cancels it as stalled, or runs it when the
// other ranks submit it. Until then the request keeps its input alive, and its output goes to
// memory of its own. A kernel whose output the core already writes finishes normally.
struct InFlight {
  std::mutex mu;
  OpKernelContext* context;  // null once done() has been called
  AsyncOpKernel::DoneCallback done;
  tensorflow::CancellationManager* cancellation = nullptr;
  tensorflow::CancellationToken token = tensorflow::CancellationManager::kInvalidToken;
  bool running = false;  // the core has its output: the operation finishes soon
  Tensor abandoned_input;
  std::unique_ptr<char[]> abandoned_output;
  std::string name;
  std::string group;
  std::vector<int64_t> shape;
  std::vector<int64_t> splits;
  bool returns_splits;
  bool may_forward;  // allreduce: the output may be the input's own buffer
  tensorflow::DataType dtype;
};

// What the core holds as its `user` pointer: one reference, released by Done.
using InFlightRef = std::shared_ptr<InFlight>;

InFlight& Of(void* user) { return **static_cast<InFlightRef*>(user); }

// Calls done() with `status` unless it has been called; the lock is held on entry.
void Finish(InFlight& op, std::unique_lock<std::mutex>& lock, const Status& status) {
  if (op.context == nullptr) return;
  op.context->SetStatus(status);
  op.context = nullptr;
  AsyncOpKernel::DoneCallback done = std::move(op.done);
  tensorflow::CancellationManager* cancellation = op.cancellation;
  lock.unlock();
  // Before done(): the manager belongs to the step, which may end with it. Never blocks, so
  // the core's thread cannot wait here on TensorFlow's.
  if (cancellation != nullptr) cancellation->TryDeregisterCallback(op.token);
  done();
}

// The step was cancelled: give up waiting unless the core is already writing the output.
void Abandon(InFlight& op) {
  std::unique_lock<std::mutex> lock(op.mu);
  if (op.context == nullptr || op.running) return;
  op.abandoned_input = op.context->input(0);
  op.cancellation = nullptr;  // deregistering from inside the manager's own callback would block
  Finish(op, lock, ErrorStatus(absl::StatusCode::kCancelled,
                               ("collective '" + op.name + "' abandoned: its step was cancelled")
                                   .c_str()));
}

void* AllocateOutput(void* user, int ndim, const int64_t* dims) {
  InFlight& op = Of(user);
  TensorShape shape;
  for (int i = 0; i < ndim; ++i) {
    if (!shape.AddDimWithStatus(dims[i]).ok()) return nullptr;
  }
  const size_t bytes =
      static_cast<size_t>(shape.num_elements()) * tensorflow::DataTypeSize(op.dtype);
  std::lock_guard<std::mutex> lock(op.mu);
  if (op.context == nullptr) {  // abandoned: the result goes nowhere
    op.abandoned_output.reset(new char[bytes > 0 ? bytes : 1]);
    return op.abandoned_output.get();
  }
  op.running = true;
  Tensor* output = nullptr;
  // An allreduce may reduce in place (the ring reads each input element before it writes
  // that element), so when no one else holds the input, its buffer, already in cache and
  // with its pages mapped, becomes the output instead of a new allocation.
  if (op.may_forward && op.context->forward_input_to_output_with_shape(0, 0, shape, &output)) {
    return DataOf(*output);
  }
  if (bytes >= kPoolMinBytes) {
    size_t capacity = 0;
    void* data = g_core_api.load()->get_output_buffer(bytes, &capacity);
    if (data == nullptr) return nullptr;
    auto* buffer = new PooledBuffer(data, bytes, capacity);
    Tensor pooled(op.dtype, shape, buffer);
    buffer->Unref();  // the tensor holds its own reference
    op.context->set_output(0, std::move(pooled));
    return data;
  }
  if (!op.context->allocate_output(0, shape, &output).ok()) return nullptr;
  return DataOf(*output);
}

void Done(void* user, const mpirep_result* result) {
  std::unique_ptr<InFlightRef> ref(static_cast<InFlightRef*>(user));
  InFlight& op = **ref;
  std::unique_lock<std::mutex> lock(op.mu);
  if (op.context == nullptr) return;  // abandoned
  Status status = TfStatus(result->status, result->message);
  if (status.ok()) {
    Tensor* splits = nullptr;
    const int64_t count = op.returns_splits ? result->nsplits : 0;
    status = op.context->allocate_output(1, TensorShape({count}), &splits);
    if (status.ok()) {
      auto flat = splits->flat<int64_t>();
      for (int64_t i = 0; i < count; ++i) flat(i) = result->received_splits[i];
    }
  }
  Finish(op, lock, status);
}

class CollectiveOp : public AsyncOpKernel {
 public:
  explicit CollectiveOp(OpKernelConstruction* context) : AsyncOpKernel(context) {
    OP_REQUIRES_OK(context, context->GetAttr("collective", &collective_));
    OP_REQUIRES(context, mpirep::IsCollectiveCode(collective_),
                ErrorStatus(absl::StatusCode::kInvalidArgument, "unknown collective code"));
    OP_REQUIRES_OK(context, context->GetAttr("reduce_op", &reduce_op_));
    OP_REQUIRES_OK(context, context->GetAttr("root_rank", &root_rank_));
    OP_REQUIRES_OK(context, context->GetAttr("prescale", &prescale_));
    OP_REQUIRES_OK(context, context->GetAttr("postscale", &postscale_));
    OP_REQUIRES_OK(context, context->GetAttr("process_set", &process_set_));
    OP_REQUIRES_OK(context, context->GetAttr("group_size", &group_size_));
    OP_REQUIRES(context, CoreDataType(context->input_type(0), &dtype_),
                ErrorStatus(absl::StatusCode::kInvalidArgument,
                            "mpirep does not support this dtype"));
  }

  // Submitting only checks and enqueues, and never blocks. Marked cheap, the kernel runs in the
  // thread that produced its input, the moment it exists; TensorFlow would otherwise queue it
  // for a pool thread, where it can wait behind the rest of backprop.
  bool IsExpensive() override { return false; }

  void ComputeAsync(OpKernelContext* context, DoneCallback done) override {
    const mpirep_api* api = g_core_api.load();
    OP_REQUIRES_ASYNC(context, api != nullptr && api->is_initialized(),
                      TfStatus(static_cast<int>(mpirep::StatusCode::NOT_INITIALIZED),
                               "mpirep is not initialised: call mpirep.tensorflow.init() first"),
                      done);
    auto op = std::make_shared<InFlight>();
    op->context = context;
    op->done = std::move(done);
    const Tensor& input = context->input(0);
    op->name = context->input(1).scalar<tensorflow::tstring>()();
    for (int i = 0; i < input.dims(); ++i) op->shape.push_back(input.dim_size(i));
    auto splits = context->input(2).flat<int64_t>();
    op->splits.assign(splits.data(), splits.data() + splits.size());
    op->group = context->input(3).scalar<tensorflow::tstring>()();
    const mpirep::CollectiveTraits& traits = mpirep::Traits(static_cast<mpirep::Collective>(collective_));
    op->returns_splits = traits.splits();
    op->may_forward = traits.forwards();
    op->dtype = context->input_dtype(0);

    mpirep_op_desc desc{};
    desc.collective = collective_;
    desc.name = op->name.c_str();
    desc.dtype = static_cast<int>(dtype_);
    desc.ndim = static_cast<int>(op->shape.size());
    desc.shape = op->shape.data();
    desc.reduce_op = reduce_op_;
    desc.root_rank = root_rank_;
    desc.prescale = prescale_;
    desc.postscale = postscale_;
    desc.nsplits = static_cast<int>(op->splits.size());
    desc.splits = op->splits.empty() ? nullptr : op->splits.data();
    desc.input = DataOf(input);
    desc.process_set = process_set_;
    desc.group_size = group_size_;
    desc.group = op->group.c_str();

    tensorflow::CancellationManager* cancellation = context->cancellation_manager();
    if (cancellation != nullptr) {
      const tensorflow::CancellationToken token = cancellation->get_cancellation_token();
      if (!cancellation->RegisterCallback(token, [op] { Abandon(*op); })) {
        context->SetStatus(ErrorStatus(absl::StatusCode::kCancelled,
                                       "the step was cancelled before its collective started"));
        op->done();
        return;
      }
      std::lock_guard<std::mutex> lock(op->mu);
      op->cancellation = cancellation;
      op->token = token;
    }
    char error[1024] = "";
    auto* user = new InFlightRef(op);  // released by Done, if the enqueue succeeds
    const int code = api->enqueue(&desc, AllocateOutput, Done, user, error, sizeof(error));
    if (code != static_cast<int>(mpirep::StatusCode::OK)) {
      delete user;
      std::unique_lock<std::mutex> lock(op->mu);
      Finish(*op, lock, TfStatus(code, error));
    }
  }

 private:
  int collective_;
  int reduce_op_;
  int root_rank_;
  float prescale_;
  float postscale_;
  int process_set_;
  int group_size_;
  mpirep::DataType dtype_;
};

Status CollectiveShape(InferenceContext* c) {
  int collective;
  TF_RETURN_IF_ERROR(c->GetAttr("collective", &collective));
  if (!mpirep::IsCollectiveCode(collective)) {
    return ErrorStatus(absl::StatusCode::kInvalidArgument, "unknown collective code");
  }
  if (mpirep::Traits(static_cast<mpirep::Collective>(collective)).same_shape()) {
    c->set_output(0, c->input(0));
  } else {  // the first dimension depends on the other ranks
    tensorflow::shape_inference::ShapeHandle output = c->input(0);
    if (c->RankKnown(output) && c->Rank(output) > 0) {
      TF_RETURN_IF_ERROR(c->ReplaceDim(output, 0, c->UnknownDim(), &output));
    }
    c->set_output(0, output);
  }
  c->set_output(1, c->Vector(c->UnknownDim()));
  return OkStatus();
}

}  // namespace
}  // namespace mpirep_tf

REGISTER_OP("MpirepCollective")
    .Input("tensor: T")
    .Input("tensor_name: string")
    .Input("splits: int64")
    .Input("group: string")  // the name of its group ("": not grouped)
    .Output("output: T")
    .Output("received_splits: int64")
    .Attr(mpirep_tf::DtypeAttr())
    .Attr("collective: int")
    .Attr("reduce_op: int = 0")
    .Attr("root_rank: int = 0")
    .Attr("prescale: float = 1.0")
    .Attr("postscale: float = 1.0")
    .Attr("process_set: int = 0")
    .Attr("group_size: int = 0")  // tensors in its grouped allreduce, so that ranks can check they agree
    .SetIsStateful()  // never constant-folded or deduplicated: every rank must take part
    .SetShapeFn(mpirep_tf::CollectiveShape);

REGISTER_KERNEL_BUILDER(Name("MpirepCollective").Device(tensorflow::DEVICE_CPU),
                        mpirep_tf::CollectiveOp);

// The C API version this library was compiled against: mpirep_op_desc's layout depends on it.
extern "C" __attribute__((visibility("default"))) int mpirep_tf_api_version() {
  return MPIREP_API_VERSION;
}

// Takes the core's function table; returns 0, or the core's API version when it is not ours.
extern "C" __attribute__((visibility("default"))) int mpirep_tf_set_api(const void* table) {
  return mpirep_tf::AdoptCoreApi(table);
}
