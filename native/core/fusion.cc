#include "fusion.h"

#include <iterator>
#include <map>
#include <tuple>

namespace mpirep {

std::vector<Response> PlanFusion(std::vector<Response> ready, int64_t threshold, int64_t solo_bytes) {
  using Key = std::tuple<int32_t, DataType, ReduceOp, double, double>;
  std::vector<Response> batches;
  std::map<Key, size_t> open;  // the batch still taking tensors, for each key
  for (Response& r : ready) {
    if (r.kind != Response::Kind::EXECUTE || r.collective != Collective::ALLREDUCE || r.bytes >= solo_bytes) {
      batches.push_back(std::move(r));
      continue;
    }
    const Key key{r.process_set, r.dtype, r.op, r.prescale, r.postscale};
    auto it = open.find(key);
    if (it != open.end() && batches[it->second].bytes + r.bytes <= threshold) {
      Response& batch = batches[it->second];
      batch.names.insert(batch.names.end(), std::make_move_iterator(r.names.begin()),
                         std::make_move_iterator(r.names.end()));
      batch.shapes.insert(batch.shapes.end(), std::make_move_iterator(r.shapes.begin()),
                          std::make_move_iterator(r.shapes.end()));
      batch.last_arrivals.insert(batch.last_arrivals.end(), std::make_move_iterator(r.last_arrivals.begin()),
                                 std::make_move_iterator(r.last_arrivals.end()));
      batch.bytes += r.bytes;
      batch.cacheable = batch.cacheable && r.cacheable;
      continue;
    }
    batches.push_back(std::move(r));
    open[key] = batches.size() - 1;
  }
  return batches;
}

}  // namespace mpirep
