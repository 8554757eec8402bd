// Peer liveness: telling a peer that does not answer at all (frozen, unreachable, or on a host
// that is gone) from one that is merely slow. Each rank exchanges heartbeats with a few
// neighbours over a transport of its own. The thread that runs the rounds sends and receives
// them from inside every wait of the core (Check), so they stop only when that thread stops:
// a rank whose program is busy for minutes, or waits in a collective for another rank's
// computation, still answers. A peer silent for the timeout is lost. Waiting alone is not
// silence: a stalled collective (a rank that does not submit) is the stall inspector's.
//
// Each rank watches its neighbours on a ring at distances 1 and 2 either way (every other rank
// in jobs of up to 5), and they watch it: a frozen rank is seen by up to four others, and a
// rank that hears from none of its neighbours concludes that it is the one cut off. A rank that
// finds a loss tells its neighbours, who pass it on, so that every rank still connected learns
// of it within moments and can say what it was doing.
//
// Leaving is a handshake too: each rank sends every neighbour a last message and reads from each
// until that neighbour's last one. Messages between two ranks keep their order, so once it has
// them all no heartbeat is still on its way; one left in flight would be handed by MPI to the
// next communicator that reuses this one's id (a later init), and could crash it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "transport.h"

namespace mpirep {

struct PeerLoss {
  using Clock = std::chrono::steady_clock;

  std::vector<int> silent;  // neighbours this rank has not heard from for the timeout
  bool cut_off = false;     // it has heard from none of its neighbours
  // When this rank learned of the loss from a neighbour rather than finding it itself: who
  // told it, and the ranks that neighbour (or whoever told it) found silent.
  int told_by = -1;
  std::vector<int> reported;
  Clock::time_point at;  // when this rank learned of it
};

class Liveness {
 public:
  using Clock = std::chrono::steady_clock;

  // Over `transport`, its own (no other messages on it). `timeout`: how long a neighbour may be
  // silent before it is lost.
  Liveness(Transport& transport, Clock::duration timeout, Clock::time_point now);
  ~Liveness();
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;

  // Sends and receives heartbeats when due (cheap when not). Returns the loss once this rank
  // knows of one, from then on.
  const std::optional<PeerLoss>& Check(Clock::time_point now);
  const std::vector<int>& neighbours() const { return neighbours_; }
  // How long since `peer`, a neighbour, was last heard from.
  Clock::duration Silence(int peer, Clock::time_point now) const;
  // One step of leaving (called instead of Check once the job stops): says goodbye to every
  // neighbour and takes what they still send. True once every neighbour has said goodbye and
  // this rank's messages have all been taken, so nothing is in flight either way.
  bool Leave();

 private:
  enum Kind : uint32_t { kBeat = 1, kLost = 2, kGoodbye = 3 };
  struct Message {
    uint32_t kind;
    int32_t rank;  // kLost: a lost rank
    uint64_t sequence;
  };
  struct Link {
    int peer;
    Clock::time_point heard;
    Message in{};
    std::optional<Transport::Handle> receive;  // none once the neighbour said goodbye
    std::optional<Transport::Handle> send;  // the one message in flight to it, at most
    Message out{};
    std::vector<int32_t> to_tell;  // lost ranks it has yet to be told of
    bool said_goodbye = false;     // this rank's goodbye to it is posted
  };

  void Receive(Link& link, Clock::time_point now, std::vector<std::pair<int, int>>* told);
  void Send(Link& link, Clock::time_point now);
  bool SendDone(Link& link);
  void Learn(int told_by, int lost, Clock::time_point now);
  void TellEveryone(int lost);

  Transport& transport_;
  const Clock::duration timeout_;
  const Clock::duration beat_interval_;
  std::vector<int> neighbours_;
  std::vector<Link> links_;
  Clock::time_point next_service_;
  Clock::time_point next_beat_;
  uint64_t sequence_ = 0;
  std::vector<bool> told_;  // by rank: a loss of that rank has been passed on
  std::optional<PeerLoss> loss_;
};

}  // namespace mpirep
