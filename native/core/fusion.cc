#include "fusion.h"

#include <iterator>
#include <map>
#include <tuple>

namespace mpirep {

std::vector<Response> PlanFusion(const std::vector<const Response*>& ready, int64_t threshold,
                                 int64_t solo_bytes, bool with_shapes) {
  using Key = std::tuple<int32_t, DataType, ReduceOp, double, double>;
  std::vector<Response> batches;
  std::map<Key, size_t> open;  // the batch still taking tensors, for each key
  auto start_batch = [&](const Response& r) {
    batches.push_back(r);
    if (!with_shapes) batches.back().shapes.clear();
  };
  for (const Response* r : ready) {
    if (r->kind != Response::Kind::EXECUTE || !Traits(r->collective).fuses() || r->bytes >= solo_bytes) {
      start_batch(*r);
      continue;
    }
    const Key key{r->process_set, r->dtype, r->op, r->prescale, r->postscale};
    auto it = open.find(key);
    if (it != open.end() && batches[it->second].bytes + r->bytes <= threshold) {
      Response& batch = batches[it->second];
      batch.names.insert(batch.names.end(), r->names.begin(), r->names.end());
      if (with_shapes) batch.shapes.insert(batch.shapes.end(), r->shapes.begin(), r->shapes.end());
      batch.last_arrivals.insert(batch.last_arrivals.end(), r->last_arrivals.begin(), r->last_arrivals.end());
      batch.bytes += r->bytes;
      batch.cacheable = batch.cacheable && r->cacheable;
      continue;
    }
    start_batch(*r);
    open[key] = batches.size() - 1;
  }
  return batches;
}

std::vector<Response> PlanFusion(const std::vector<Response>& ready, int64_t threshold, int64_t solo_bytes) {
  std::vector<const Response*> pointers;
  pointers.reserve(ready.size());
  for (const Response& r : ready) pointers.push_back(&r);
  return PlanFusion(pointers, threshold, solo_bytes, /*with_shapes=*/true);
}

}  // namespace mpirep
