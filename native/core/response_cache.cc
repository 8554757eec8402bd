#include "response_cache.h"

#include <cstring>
#include <stdexcept>

namespace mpirep {
namespace {

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

enum Change : uint64_t { kInsert = 1, kEvict = 2, kTouch = 3 };

// FNV-1a: the same on every rank, whatever the standard library's std::hash does
uint64_t NameHash(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace

bool SameRequest(const Request& a, const Request& b) {
  return a.collective == b.collective && a.name == b.name && a.dtype == b.dtype && a.shape == b.shape &&
         a.op == b.op && a.root == b.root && SameBits(a.prescale, b.prescale) &&
         SameBits(a.postscale, b.postscale) && a.splits == b.splits && a.process_set == b.process_set &&
         a.group_size == b.group_size && a.group == b.group && a.new_set_ranks == b.new_set_ranks &&
         a.removed_set == b.removed_set;
}

ResponseCache::ResponseCache(int64_t capacity) : capacity_(capacity), entries_(capacity) {
  for (int64_t p = capacity - 1; p >= 0; --p) free_.push_back(p);
}

int64_t ResponseCache::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

bool ResponseCache::Repeats(int64_t position, const Request& request) const {
  const Entry& entry = *entries_[position];
  return entry.own && SameRequest(*entry.own, request);
}

int64_t ResponseCache::Insert(const Response& response, size_t index, const Request* own) {
  const std::string& name = response.names[index];
  if (free_.empty() || Find(name) >= 0) {
    throw std::logic_error("mpirep: no room in the response cache for '" + name + "'");
  }
  const int64_t position = free_.back();
  free_.pop_back();
  Entry entry;
  entry.response = response;
  entry.response.names = {name};
  entry.response.shapes = {response.shapes[index]};
  entry.response.last_arrivals.clear();  // rank 0's, of the negotiation that inserted it: stale when it runs again
  entry.response.bytes = TensorBytes(response.dtype, response.shapes[index]);
  if (own) entry.own = *own;
  entry.recency = recency_.insert(recency_.end(), position);
  entries_[position] = std::move(entry);
  by_name_[name] = position;
  Record(kInsert ^ NameHash(name) ^ (static_cast<uint64_t>(position) << 2));
  return position;
}

void ResponseCache::Evict(int64_t position) {
  if (!entries_[position]) throw std::logic_error("mpirep: evicting an empty cache position");
  Entry& entry = *entries_[position];
  by_name_.erase(entry.response.names[0]);
  recency_.erase(entry.recency);
  entries_[position].reset();
  free_.push_back(position);
  Record(kEvict ^ (static_cast<uint64_t>(position) << 2));
}

void ResponseCache::Touch(int64_t position) {
  Entry& entry = *entries_[position];
  recency_.splice(recency_.end(), recency_, entry.recency);
  Record(kTouch ^ (static_cast<uint64_t>(position) << 2));
}

std::vector<int64_t> ResponseCache::PositionsOf(int32_t id) const {
  std::vector<int64_t> positions;
  for (int64_t p = 0; p < capacity_; ++p) {
    if (entries_[p] && entries_[p]->response.process_set == id) positions.push_back(p);
  }
  return positions;
}

std::vector<int64_t> ResponseCache::PositionsOfGroup(const std::string& group) const {
  std::vector<int64_t> positions;
  for (int64_t p = 0; p < capacity_; ++p) {
    if (entries_[p] && entries_[p]->own && entries_[p]->own->group == group) positions.push_back(p);
  }
  return positions;
}

// splitmix64's finaliser over the running value and the change
void ResponseCache::Record(uint64_t change) {
  uint64_t z = fingerprint_ + 0x9e3779b97f4a7c15ULL + change;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  fingerprint_ = z ^ (z >> 31);
}

}  // namespace mpirep
