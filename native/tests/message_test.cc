// Control messages survive encoding, and truncated input is rejected rather than misread.
#include "check.h"
#include "core/message.h"

#include <stdexcept>

using namespace mpirep;

void RunMessageTests() {
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
  requests.requests = {r, Request{}};
  RequestList back = DecodeRequestList(Encode(requests));
  CHECK(back.shutdown && back.shutdown_reason == "KeyError: 'x'" && back.requests.size() == 2);
  const Request& b = back.requests[0];
  CHECK(b.rank == 3 && b.collective == Collective::ALLTOALL && b.name == r.name && b.dtype == r.dtype &&
        b.shape == r.shape && b.op == r.op && b.root == 2 && b.prescale == 0.25 && b.postscale == 3.5 &&
        b.splits == r.splits && b.process_set == 4 && b.group_size == 7);

  ResponseList responses;
  Response e;
  e.kind = Response::Kind::ERROR;
  e.names = {"a", "b"};
  e.error_code = StatusCode::MISMATCH;
  e.error = "why";
  e.error_ranks = {0, 2};
  e.rank_sizes = {5, 6};
  responses.responses = {e};
  ResponseList rb = DecodeResponseList(Encode(responses));
  CHECK(rb.responses.size() == 1 && rb.responses[0].names == e.names && rb.responses[0].error == "why" &&
        rb.responses[0].error_ranks == e.error_ranks &&
        rb.responses[0].error_code == StatusCode::MISMATCH && rb.responses[0].rank_sizes == e.rank_sizes);

  std::string truncated = Encode(requests);
  truncated.resize(truncated.size() - 3);
  bool threw = false;
  try {
    DecodeRequestList(truncated);
  } catch (const std::runtime_error&) {
    threw = true;
  }
  CHECK(threw);
}
