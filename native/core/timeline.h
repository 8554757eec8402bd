// A record of each tensor's way through the core, as rank 0 sees it, in the Chrome trace-event
// format (chrome://tracing, https://ui.perfetto.dev). One track per tensor name, on which its
// phases follow one another without gaps:
//   NEGOTIATE  from its submission on rank 0 until every rank had submitted it; args: the rank
//              that came last
//   QUEUE      decided, waiting for its turn: held for the cycle time, collectives ahead of it
//   PACK, the transfer (RING_ALLREDUCE, CHAIN_BROADCAST, ...), UNPACK: as the executor ran them
//              (PhaseLog); args: how many tensors were fused with it, and their bytes
// With mark_cycles, an instant event marks each pass of the rounds loop that did work.
//
// Started and stopped from any thread while collectives run; recorded by the thread running the
// rounds.
// The file is a JSON array that is complete after every write: each write puts new events over
// the closing bracket and closes the array again. A job that dies leaves a file that parses,
// short of the events of its last moments (at most kFlushInterval).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "operation.h"
#include "phase_log.h"

namespace mpirep {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kFlushInterval = std::chrono::milliseconds(100);

  Timeline() = default;
  ~Timeline() { Stop(); }
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Starts a new file at `path`, after closing the one being written, if any. Returns "" or
  // why the file cannot be written.
  std::string Start(const std::string& path, bool mark_cycles);
  // Writes what is pending and closes the file, if one is open.
  void Stop();
  bool active() const { return active_.load(std::memory_order_acquire); }

  // The rounds' own; each does nothing unless a timeline is being written.
  void BeginRound();
  // Marks the round if it did work (with mark_cycles); writes what is pending when the thread
  // is about to wait, or kFlushInterval after the last write.
  void EndRound(bool progressed);
  // `ops` ran `response` (ops[i] is the tensor response.names[i]) through `phases`.
  void Executed(const Response& response, const std::vector<Operation*>& ops, const PhaseLog& phases);

 private:
  // Under mutex_:
  int TrackOf(const std::string& tensor);
  void Append(const std::string& event);
  void Complete(int track, const char* phase, Clock::time_point begin, Clock::time_point end,
                const std::string& args);
  static std::string Micros(Clock::duration d);
  void Flush();
  void Close();

  std::atomic<bool> active_{false};
  std::mutex mutex_;
  int fd_ = -1;
  std::string path_;
  bool mark_cycles_ = false;
  Clock::time_point origin_;      // ts 0
  int64_t written_ = 0;           // bytes of events in the file, before its closing bracket
  std::string pending_;           // events not written yet
  bool first_event_ = true;
  Clock::time_point last_flush_;
  int64_t cycles_ = 0;
  std::unordered_map<std::string, int> tracks_;  // tensor name -> tid
  Clock::time_point round_began_;                // the rounds' own
};

}  // namespace mpirep
