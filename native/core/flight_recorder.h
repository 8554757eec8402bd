// The flight recorder: each rank keeps its last collectives in memory, at the cost of a few
// stores per tensor, and writes them out as JSON, with what it still has in flight and what it
// knows of its peers, when something goes wrong (a lost peer, a stall shutdown, a mismatch, a
// failure) or when asked (mpirep.dump_flight_record()). `python -m mpirep.diagnose DIR` reads
// every rank's record and says which ranks never reached the collective the others waited in.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "operation.h"

namespace mpirep {

class FlightRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kNameBytes = 96;  // longer names are cut, which the record marks

  struct Entry {
    uint64_t sequence = 0;  // this rank's count of ended collectives, from 1
    char name[kNameBytes] = {};
    bool name_cut = false;
    Collective collective = Collective::ALLREDUCE;
    ReduceOp op = ReduceOp::SUM;
    DataType dtype = DataType::FLOAT32;
    StatusCode status = StatusCode::OK;
    int32_t process_set = 0;
    int32_t fused = 1;  // tensors in the batch it ran in
    int64_t bytes = 0;
    Clock::time_point submitted, started, ended;  // started == ended: it failed without running
  };

  // Keeps the last `capacity` collectives; 0 keeps none.
  explicit FlightRecorder(size_t capacity) : entries_(capacity) {}

  void Record(const Operation& op, Clock::time_point started, Clock::time_point ended, StatusCode status,
              int32_t fused);
  // The entries kept, oldest first.
  std::vector<const Entry*> Entries() const;

 private:
  std::vector<Entry> entries_;
  uint64_t recorded_ = 0;
};

// What a rank writes out: its flight record and the moment's context.
struct FlightDump {
  using Clock = std::chrono::steady_clock;

  struct InFlight {
    std::string name;
    Collective collective;
    DataType dtype;
    int64_t bytes;
    int32_t process_set;
    TensorState state;
    Clock::time_point submitted;
  };
  // Rank 0: a tensor of the full negotiation that some members have not submitted.
  struct Waiting {
    std::string name;
    Collective collective;
    std::vector<int> submitted_by, missing;
    Clock::time_point since;
  };
  struct Silent {
    int rank;
    double seconds;
  };

  std::string job;  // the same on every rank of a job, and differs between jobs
  int rank = 0, size = 1;
  std::vector<std::string> hosts;  // by rank
  int64_t pid = 0;
  std::string reason;
  double peer_timeout_seconds = 0;
  std::vector<Silent> silent;  // neighbours not heard from for the timeout
  bool cut_off = false;
  int told_by = -1;            // the neighbour that reported a loss to this rank
  std::vector<int> reported;   // the ranks it reported lost
  std::vector<InFlight> in_flight;
  std::vector<Waiting> waiting;
  std::vector<const FlightRecorder::Entry*> recent;
};

// The dump as JSON, times in seconds since the Unix epoch: `now` on the steady clock is
// `wall_now` on the system clock.
std::string FlightDumpJson(const FlightDump& dump, FlightDump::Clock::time_point now, double wall_now);
// Writes `json` to DIR/rank<rank>.json through a new file renamed into place (creating DIR);
// returns the file's path, or an error that starts with "error: ".
std::string WriteFlightDump(const std::string& dir, int rank, const std::string& json);

}  // namespace mpirep
