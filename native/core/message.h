// What ranks tell the coordinator (requests) and what it tells them back (responses), and their
// byte encoding for the control messages.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common.h"

namespace mpirep {

// One rank's description of one tensor it has submitted.
struct Request {
  int32_t rank = 0;
  Collective collective = Collective::ALLREDUCE;
  std::string name;
  DataType dtype = DataType::FLOAT32;
  Shape shape;
  ReduceOp op = ReduceOp::SUM;
  int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  std::vector<int64_t> splits;  // alltoall: rows sent to each rank of the set
  int32_t process_set = 0;      // 0: all ranks; `root` and `splits` count ranks of the set
  int32_t group_size = 0;       // tensors in its group (0: not grouped)
  std::string group;            // the group's name, the same on every rank ("": not grouped)
  std::vector<int64_t> new_set_ranks;  // add_process_set: the ranks of the set to create
  int32_t removed_set = 0;             // remove_process_set: the id of the set to remove
};

// When a tensor became ready on the coordinator, and which rank's submission completed it.
struct Arrival {
  int32_t rank = -1;
  std::chrono::steady_clock::time_point at;
};

struct RequestList {
  bool shutdown = false;  // the sender will submit nothing more
  std::string shutdown_reason;  // why, when it shut down because it failed
  std::vector<Request> requests;
};

// A decision every rank carries out in the same order.
struct Response {
  // STOP: every rank has shut down; the rounds end and the background threads exit.
  enum class Kind : uint8_t { EXECUTE, ERROR, STOP };
  Kind kind = Kind::EXECUTE;
  Collective collective = Collective::ALLREDUCE;
  int32_t process_set = 0;
  std::vector<std::string> names;  // several when fused, in buffer order
  DataType dtype = DataType::FLOAT32;
  ReduceOp op = ReduceOp::SUM;
  int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  // The shape of each named tensor, so that a rank that has joined (and never submitted it)
  // can take part with zeros.
  std::vector<Shape> shapes;
  StatusCode error_code = StatusCode::OK;
  std::string error;
  // ERROR: the ranks it concerns, or empty for every rank. A rank that had not submitted the
  // tensor when the error was decided must not take it for a later tensor of that name.
  std::vector<int64_t> error_ranks;
  std::vector<int64_t> first_dims;    // allgather: each rank's first dimension
  std::vector<int64_t> split_matrix;  // alltoall: size x size, row i being what rank i sends
  int32_t last_joined_rank = -1;      // join
  int32_t new_set_id = 0;             // add_process_set: the id given to the new set
  std::vector<int64_t> new_set_ranks; // add_process_set: its ranks
  int32_t removed_set = 0;            // remove_process_set
  // Every rank keeps the tensors in its response cache (response_cache.h) as this response
  // runs: an executed collective of tensors that every member submitted (none stood in).
  bool cacheable = false;
  // Known to the coordinator only, never encoded: the bytes of all named tensors together,
  // which the fusion planner needs, and for each named tensor the last rank to submit it
  // (for the timeline).
  int64_t bytes = 0;
  std::vector<Arrival> last_arrivals;
};

// New values of settings, chosen by rank 0's autotuner (autotuner.h), which every rank applies
// before it runs the responses of the list that carries them.
struct Retune {
  std::vector<std::pair<std::string, std::string>> settings;  // name, value as text
  bool final = false;  // tuning has ended; these settings stay
};

struct ResponseList {
  std::vector<Response> responses;
  std::optional<Retune> retune;
};

std::string Encode(const RequestList& list);
std::string Encode(const ResponseList& list);
// Throw std::runtime_error on malformed input.
RequestList DecodeRequestList(const std::string& bytes);
ResponseList DecodeResponseList(const std::string& bytes);

}  // namespace mpirep
