// The responses of tensors negotiated before, kept so that a repeat of one (same name, and on
// this rank the same request) can skip rank 0. Every rank holds the same entries at the same
// positions: entries are inserted, touched and evicted only in steps that every rank takes in
// the same order (the responses of a round, the round's agreed evictions), so a position
// names the same tensor everywhere and fits in a bit vector (core/agreement.h).
//
// An entry keeps the agreed response for one tensor and, on ranks that took part in it, this
// rank's own request, which a later submission must repeat exactly to be a hit. Least recently
// used entries make room for new ones; "recently" counts in rounds and response order, which are
// the same everywhere, so eviction is deterministic too.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "message.h"

namespace mpirep {

// Whether two requests are the same in every field ranks agree on (scale factors bit for bit).
bool SameRequest(const Request& a, const Request& b);

class ResponseCache {
 public:
  explicit ResponseCache(int64_t capacity);

  int64_t capacity() const { return capacity_; }
  int64_t size() const { return static_cast<int64_t>(by_name_.size()); }

  // The position of the entry for `name`, or -1.
  int64_t Find(const std::string& name) const;
  bool Occupied(int64_t position) const { return entries_[position].has_value(); }
  // Whether `request` repeats this rank's request of the entry at `position`. A rank that did
  // not take part in the tensor (not in its process set) has no request there, so never.
  bool Repeats(int64_t position, const Request& request) const;
  // The entry's response: one tensor, kind EXECUTE, with its byte size filled in.
  const Response& response(int64_t position) const { return entries_[position]->response; }
  // Whether this rank took part in the tensor (is in its process set).
  bool Member(int64_t position) const { return entries_[position]->own.has_value(); }
  // This rank's request for the entry's tensor, or null when it did not take part.
  const Request* own(int64_t position) const {
    return entries_[position]->own ? &*entries_[position]->own : nullptr;
  }

  bool Full() const { return size() == capacity_; }
  // The entry to evict to make room, when Full().
  int64_t LeastRecentlyUsed() const { return recency_.front(); }
  // Inserts the `index`-th tensor of `response` as the most recently used entry, at a free
  // position, which it returns; the name must not be cached, and the cache not be Full().
  // `own`: this rank's request for it, or null if it did not take part.
  int64_t Insert(const Response& response, size_t index, const Request* own);
  void Evict(int64_t position);
  // Marks the entry as the most recently used.
  void Touch(int64_t position);
  // The positions of the entries of process set `id`.
  std::vector<int64_t> PositionsOf(int32_t id) const;
  // The positions of the entries of the group named `group` in which this rank took part.
  std::vector<int64_t> PositionsOfGroup(const std::string& group) const;
  // A hash of every change made so far: equal on two ranks whose caches went the same way.
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  void Record(uint64_t change);  // into the fingerprint

  struct Entry {
    Response response;
    std::optional<Request> own;
    std::list<int64_t>::iterator recency;
  };

  int64_t capacity_;
  std::vector<std::optional<Entry>> entries_;  // by position
  std::unordered_map<std::string, int64_t> by_name_;
  std::list<int64_t> recency_;       // positions, least recently used first
  std::vector<int64_t> free_;        // free positions, the next one last
  uint64_t fingerprint_ = 0;
};

}  // namespace mpirep
