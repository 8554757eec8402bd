// Control messages survive encoding, and truncated input is rejected rather than misread.
#include "check.h"
#include "core/message.h"

#include <stdexcept>

using namespace mpirep;

namespace {

RequestList SampleRequests() {
  RequestList requests;
  requests.shutdown = true;
  requests.shutdown_reason = "KeyError: 'x'";
  Request r;
  r.rank = 3;
  r.collective = Collective::ALLTOALL;
  r.name = "layer/kernel:0";
  r.dtype = DataType::BFLOAT16;
  r.shape = {4, 0, 7};
  r.op = ReduceOp::PRODUCT;
  r.root = 2;
  r.prescale = 0.25;
  r.postscale = 3.5;
  r.splits = {1, 0, 3};
  r.process_set = 4;
  r.group_size = 7;
  r.new_set_ranks = {0, 5};
  r.removed_set = 9;
  requests.requests = {r, Request{}};
  return requests;
}

}  // namespace

TEST(Message, RequestListRoundTrip) {
  const RequestList requests = SampleRequests();
  const Request& r = requests.requests[0];
  RequestList back = DecodeRequestList(Encode(requests));
  CHECK(back.shutdown && back.shutdown_reason == "KeyError: 'x'" && back.requests.size() == 2);
  const Request& b = back.requests[0];
  CHECK(b.rank == 3 && b.collective == Collective::ALLTOALL && b.name == r.name && b.dtype == r.dtype &&
        b.shape == r.shape && b.op == r.op && b.root == 2 && b.prescale == 0.25 && b.postscale == 3.5 &&
        b.splits == r.splits && b.process_set == 4 && b.group_size == 7 && b.new_set_ranks == r.new_set_ranks &&
        b.removed_set == 9);
}

TEST(Message, ResponseListRoundTripWithAndWithoutRetune) {
  ResponseList responses;
  Response e;
  e.kind = Response::Kind::ERROR;
  e.names = {"a", "b"};
  e.error_code = StatusCode::MISMATCH;
  e.error = "why";
  e.error_ranks = {0, 2};
  e.first_dims = {5, 6};
  e.split_matrix = {1, 2, 3, 4};
  e.last_joined_rank = 1;
  e.new_set_id = 3;
  e.new_set_ranks = {0, 1};
  e.removed_set = 2;
  responses.responses = {e};
  ResponseList rb = DecodeResponseList(Encode(responses));
  CHECK(rb.responses.size() == 1);
  const Response& back_e = rb.responses[0];
  CHECK(back_e.names == e.names && back_e.error == "why" && back_e.error_ranks == e.error_ranks &&
        back_e.error_code == StatusCode::MISMATCH && back_e.first_dims == e.first_dims &&
        back_e.split_matrix == e.split_matrix && back_e.last_joined_rank == 1 && back_e.new_set_id == 3 &&
        back_e.new_set_ranks == e.new_set_ranks && back_e.removed_set == 2);
  CHECK(!rb.retune);

  responses.retune = Retune{{{"fusion_threshold", "4194304"}, {"cycle_time_ms", "0.5"}}, true};
  rb = DecodeResponseList(Encode(responses));
  CHECK(rb.responses.size() == 1 && rb.retune && rb.retune->final && rb.retune->settings == responses.retune->settings);
}

TEST(Message, TruncatedInputIsRejected) {
  std::string truncated = Encode(SampleRequests());
  truncated.resize(truncated.size() - 3);
  bool threw = false;
  try {
    DecodeRequestList(truncated);
  } catch (const std::runtime_error&) {
    threw = true;
  }
  CHECK(threw);
}
