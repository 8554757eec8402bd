#include "liveness.h"

#include <algorithm>

namespace mpirep {
namespace {

// Check does nothing more often than this: the waits call it on every poll.
constexpr auto kServiceInterval = std::chrono::milliseconds(10);

// Beats often enough that a neighbour hears several within a timeout, and not more than a few
// times a second.
Liveness::Clock::duration BeatInterval(Liveness::Clock::duration timeout) {
  return std::clamp<Liveness::Clock::duration>(timeout / 8, std::chrono::milliseconds(100), std::chrono::seconds(5));
}

// The ranks at ring distance 1 and 2 either way, without repeats or this rank.
std::vector<int> Neighbours(int rank, int size) {
  std::vector<int> out;
  for (int d : {1, -1, 2, -2}) {
    const int peer = ((rank + d) % size + size) % size;
    if (peer != rank && std::find(out.begin(), out.end(), peer) == out.end()) out.push_back(peer);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Liveness::Liveness(Transport& transport, Clock::duration timeout, Clock::time_point now)
    : transport_(transport),
      timeout_(timeout),
      beat_interval_(BeatInterval(timeout)),
      neighbours_(Neighbours(transport.rank(), transport.size())),
      next_service_(now),
      next_beat_(now),
      told_(transport.size(), false) {
  links_.reserve(neighbours_.size());
  for (int peer : neighbours_) {
    Link& link = links_.emplace_back();
    link.peer = peer;
    link.heard = now;
    link.receive = transport_.Irecv(peer, &link.in, sizeof link.in);
  }
}

Liveness::~Liveness() {
  for (Link& link : links_) {
    if (link.receive) transport_.Abandon(*link.receive);
    if (link.send) transport_.Abandon(*link.send);
  }
}

bool Liveness::Leave() {
  bool left = true;
  for (Link& link : links_) {
    if (!link.said_goodbye && SendDone(link)) {
      link.out = Message{kGoodbye, -1, sequence_};
      link.send = transport_.Isend(link.peer, &link.out, sizeof link.out);
      link.said_goodbye = true;
    }
    while (link.receive && transport_.Test(*link.receive)) {
      link.receive.reset();
      if (link.in.kind != kGoodbye) link.receive = transport_.Irecv(link.peer, &link.in, sizeof link.in);
    }
    left = left && link.said_goodbye && !link.receive && SendDone(link);
  }
  return left;
}

Liveness::Clock::duration Liveness::Silence(int peer, Clock::time_point now) const {
  for (const Link& link : links_) {
    if (link.peer == peer) return now - link.heard;
  }
  return Clock::duration::zero();
}

const std::optional<PeerLoss>& Liveness::Check(Clock::time_point now) {
  if (now < next_service_) return loss_;
  next_service_ = now + kServiceInterval;
  std::vector<std::pair<int, int>> told;  // (neighbour, lost rank): after this rank's own look
  for (Link& link : links_) Receive(link, now, &told);
  if (!loss_) {
    std::vector<int> silent;
    for (const Link& link : links_) {
      if (link.receive && now - link.heard >= timeout_) silent.push_back(link.peer);
    }
    if (!silent.empty()) {
      loss_ = PeerLoss{silent, silent.size() == links_.size(), -1, {}, now};
      for (int lost : silent) TellEveryone(lost);
    }
  }
  for (const auto& [neighbour, lost] : told) Learn(neighbour, lost, now);
  const bool beat = now >= next_beat_;
  if (beat) {
    next_beat_ = now + beat_interval_;
    ++sequence_;
  }
  for (Link& link : links_) {
    if (beat || !link.to_tell.empty()) Send(link, now);
  }
  return loss_;
}

void Liveness::Receive(Link& link, Clock::time_point now, std::vector<std::pair<int, int>>* told) {
  while (link.receive && transport_.Test(*link.receive)) {
    link.heard = now;
    link.receive.reset();
    if (link.in.kind == kGoodbye) return;  // it left with the job; Leave finishes with it
    if (link.in.kind == kLost) told->emplace_back(link.peer, link.in.rank);
    link.receive = transport_.Irecv(link.peer, &link.in, sizeof link.in);
  }
}

bool Liveness::SendDone(Link& link) {
  if (link.send && transport_.Test(*link.send)) link.send.reset();
  return !link.send;
}

// One message at a time to each neighbour: a neighbour that does not take them (frozen, cut off)
// gets no pile of them, only a beat missed now and then.
void Liveness::Send(Link& link, Clock::time_point) {
  if (link.said_goodbye || !SendDone(link)) return;
  if (!link.to_tell.empty()) {
    link.out = Message{kLost, link.to_tell.back(), sequence_};
    link.to_tell.pop_back();
  } else {
    link.out = Message{kBeat, -1, sequence_};
  }
  link.send = transport_.Isend(link.peer, &link.out, sizeof link.out);
}

void Liveness::Learn(int told_by, int lost, Clock::time_point now) {
  if (lost == transport_.rank()) return;  // its neighbours lost it; its own silence tells it
  if (!loss_) loss_ = PeerLoss{{}, false, told_by, {}, now};
  if (loss_->told_by >= 0 && std::find(loss_->reported.begin(), loss_->reported.end(), lost) == loss_->reported.end()) {
    loss_->reported.push_back(lost);
  }
  TellEveryone(lost);
}

void Liveness::TellEveryone(int lost) {
  if (told_[lost]) return;
  told_[lost] = true;
  for (Link& link : links_) {
    if (link.peer != lost) link.to_tell.push_back(lost);
  }
}

}  // namespace mpirep
