#include "stand_in.h"

#include <algorithm>

namespace mpirep {

StandIn::StandIn(const Response& response, size_t index) {
  Request& r = op.request;
  r.collective = response.collective;
  r.name = response.names[index];
  r.dtype = response.dtype;
  r.shape = response.shapes.at(index);  // batches run from the cache carry none (fusion.h)
  if (Traits(r.collective).joined == collective_traits::kNoRows) r.shape[0] = 0;
  r.op = response.op;
  r.root = response.root;
  r.prescale = response.prescale;
  r.postscale = response.postscale;
  zeros_.assign(std::max<int64_t>(1, TensorBytes(r.dtype, r.shape)), 0);
  op.input = zeros_.data();
  op.allocate = [this](const Shape& shape) {
    discarded_.resize(std::max<int64_t>(1, TensorBytes(op.request.dtype, shape)));
    return static_cast<void*>(discarded_.data());
  };
  op.done = [](const Status&, const OperationResult&) {};
}

}  // namespace mpirep
