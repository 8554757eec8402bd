// The fusion planner: what joins a batch, what stays alone, and that the order is kept.
#include <string>
#include <vector>

#include "check.h"
#include "core/fusion.h"

using namespace mpirep;

namespace {

Response Allreduce(const std::string& name, int64_t bytes, DataType dtype = DataType::FLOAT32,
                   ReduceOp op = ReduceOp::SUM, double prescale = 1.0) {
  Response r;
  r.collective = Collective::ALLREDUCE;
  r.names = {name};
  r.bytes = bytes;
  r.dtype = dtype;
  r.op = op;
  r.prescale = prescale;
  return r;
}

std::vector<std::vector<std::string>> Names(const std::vector<Response>& batches) {
  std::vector<std::vector<std::string>> out;
  for (const Response& b : batches) out.push_back(b.names);
  return out;
}

using Batches = std::vector<std::vector<std::string>>;

}  // namespace

TEST(Fusion, OneKeyUnderTheThresholdIsOneBatch) {
  CHECK(Names(PlanFusion({Allreduce("a", 40), Allreduce("b", 40), Allreduce("c", 20)}, 100, 1000)) ==
        (Batches{{"a", "b", "c"}}));
}

TEST(Fusion, TheThresholdClosesABatch) {
  // The threshold closes a batch; a later tensor joins the newest open batch of its key.
  CHECK(Names(PlanFusion({Allreduce("a", 60), Allreduce("b", 60), Allreduce("c", 40)}, 100, 1000)) ==
        (Batches{{"a"}, {"b", "c"}}));
}

TEST(Fusion, LargerThanTheThresholdRunsAlone) {
  CHECK(Names(PlanFusion({Allreduce("big", 500), Allreduce("x", 10)}, 100, 1000)) == (Batches{{"big"}, {"x"}}));
}

TEST(Fusion, DifferentDtypeOpOrScaleNeverFuse) {
  // Different dtype, op or scale factor: never fused together; batches keep first-member order.
  CHECK(Names(PlanFusion({Allreduce("f", 8), Allreduce("d", 8, DataType::FLOAT64), Allreduce("g", 8),
                          Allreduce("m", 8, DataType::FLOAT32, ReduceOp::MAX), Allreduce("p", 8, DataType::FLOAT32, ReduceOp::SUM, 2.0)},
                         100, 1000)) == (Batches{{"f", "g"}, {"d"}, {"m"}, {"p"}}));
}

TEST(Fusion, OtherCollectivesAndErrorsPassThrough) {
  // Other collectives and errors pass through in place.
  Response bcast;
  bcast.collective = Collective::BROADCAST;
  bcast.names = {"b"};
  Response error = Allreduce("e", 8);
  error.kind = Response::Kind::ERROR;
  CHECK(Names(PlanFusion({Allreduce("a", 8), bcast, error, Allreduce("c", 8)}, 100, 1000)) ==
        (Batches{{"a", "c"}, {"b"}, {"e"}}));
}

TEST(Fusion, ABatchSumsBytesAndKeepsLastArrivals) {
  // A batch's byte count is the sum of its members'; it keeps each member's last arrival, in order.
  Response a = Allreduce("a", 8), b = Allreduce("b", 16);
  a.last_arrivals = {{2, {}}};
  b.last_arrivals = {{1, {}}};
  const std::vector<Response> fused = PlanFusion({a, b}, 100, 1000);
  CHECK(fused.size() == 1 && fused[0].bytes == 24);
  CHECK(fused.size() == 1 && fused[0].last_arrivals.size() == 2 && fused[0].last_arrivals[0].rank == 2 &&
        fused[0].last_arrivals[1].rank == 1);
}

TEST(Fusion, ASoloSizedTensorRunsAlone) {
  // A tensor of at least the solo size runs alone even under the threshold.
  CHECK(Names(PlanFusion({Allreduce("a", 8), Allreduce("big", 50), Allreduce("c", 8)}, 100, 50)) ==
        (Batches{{"a", "c"}, {"big"}}));
}

TEST(Fusion, ShapesOnlyWhenAskedFor) {
  // Shapes are carried only when asked for: a cached tensor's batch needs none (no stand-ins).
  Response shaped_a = Allreduce("a", 8), shaped_b = Allreduce("b", 8);
  shaped_a.shapes = {{2}};
  shaped_b.shapes = {{1, 2}};
  const std::vector<Response> with = PlanFusion({shaped_a, shaped_b}, 100, 1000);
  CHECK(with.size() == 1 && with[0].shapes == (std::vector<Shape>{{2}, {1, 2}}));
  const std::vector<Response> without = PlanFusion({&shaped_a, &shaped_b}, 100, 1000, /*with_shapes=*/false);
  CHECK(without.size() == 1 && without[0].names == (std::vector<std::string>{"a", "b"}) && without[0].shapes.empty());
}

TEST(Fusion, ThresholdZeroDisablesFusion) {
  CHECK(Names(PlanFusion({Allreduce("a", 8), Allreduce("b", 8)}, 0, 1000)) == (Batches{{"a"}, {"b"}}));
}
