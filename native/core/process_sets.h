// The process sets this rank knows, the one record of them on a rank: which ranks each set has
// and, where this rank is a member, the channel its collectives run on. Framework threads
// validate requests against it; rank 0's Coordinator reads membership from it and takes a new
// set's id from it (NewId); the rounds change it as they accept a set's creation or removal
// (Negotiator::Accept), which every rank does at the same point of the same response list, and
// run each set's collectives on its channel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "message.h"

namespace mpirep {

class Executor;  // the data path (executor.h), which negotiation does not include

// What a member rank runs a set's collectives with. The runtime's owns the set's communicator and
// frees it when the set is removed (runtime/process_set_comm.h).
class SetChannel {
 public:
  virtual ~SetChannel() = default;
  virtual Executor& executor() = 0;
};

class ProcessSets {
 public:
  // `size` ranks; set 0, of every rank, exists from the start.
  explicit ProcessSets(int size);

  // Thread-safe.
  // The ranks of set `id` in order, or empty where there is no such set.
  std::vector<int> Ranks(int32_t id) const;
  // The checks this rank makes alone before it submits `request` (validation.h).
  Status Validate(const Request& request, int rank) const;

  // The rounds' thread only, in response order (so at the same point on every rank).
  // The ranks of set `id`, or null; no lock, as the rounds' thread alone changes the registry.
  const std::vector<int>* Find(int32_t id) const;
  void Add(int32_t id, std::vector<int> ranks);
  // Forgets the set and drops its channel.
  void Remove(int32_t id);
  // This rank's channel for a set it is a member of.
  void Attach(int32_t id, std::unique_ptr<SetChannel> channel);
  // Null where this rank is not a member (or the set does not exist).
  SetChannel* Channel(int32_t id) const;
  void ForEachChannel(const std::function<void(SetChannel&)>& visit) const;
  // Rank 0's Coordinator, as it decides a set's creation: the id the set gets on every rank
  // (Add, as the rounds accept the creation). An id is never given twice, even once its set
  // has been removed.
  int32_t NewId() { return next_id_++; }
  // Drops every channel (the runtime's last step before it frees its communicators).
  void DropChannels();

 private:
  const int size_;
  mutable std::mutex mutex_;  // guards ranks_ against the framework threads' reads
  std::map<int32_t, std::vector<int>> ranks_;
  std::map<int32_t, std::unique_ptr<SetChannel>> channels_;  // the rounds' own
  int32_t next_id_ = 1;                                       // the rounds' own
};

}  // namespace mpirep
