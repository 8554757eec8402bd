// One round of agreement: what each rank contributes, and what every rank learns from the
// bitwise AND of all contributions (and_allreduce.h, run by the runtime). A field
// that asks whether ANY rank has something is contributed inverted, since the AND of the
// inverses is the inverse of the OR. Positions are those of the response cache
// (response_cache.h), the same on every rank.
//
// Layout, in 64-bit words, P = ceil(positions / 64), R = ceil(ranks / 64):
//   ready[P]    bit set: this rank submitted the cached tensor, or is not in its process set.
//               AND: the tensor can run now.
//   idle[P]     bit clear: this rank submitted it. AND inverted: submitted on some rank.
//   keep[P]     bit clear: this rank asks every rank to evict the entry. AND inverted: evict.
//   quiet[R]    bit r clear: rank r sends rank 0 a request list in this round's slow phase.
//   flags       inverted: some rank has a join pending; some rank has shut down.
//   rank0       rank 0's word (the others contribute all ones): rank 0 holds the round's ready
//               tensors back, for fusion (cycle_time_ms).
//   check[2]    a fingerprint of the contributor's cache and its inverse: if any two ranks'
//               caches differ, the AND of the one is not the inverse of the AND of the other.
#pragma once

#include <cstdint>
#include <vector>

namespace mpirep {

enum RoundFlag : uint64_t {
  kJoinPending = 1,  // some rank called join and not every rank has yet
  kShutDown = 2,     // some rank has shut down
};

class RoundWords {
 public:
  // A contribution that says nothing: not ready, not submitted, no evictions, no requests.
  RoundWords(int64_t positions, int ranks);

  // Contributing.
  void SetReady(int64_t position) { Set(ready_ + position / 64, position); }
  void ClearReady(int64_t position) { Clear(ready_ + position / 64, position); }
  void SetSubmitted(int64_t position) { Clear(idle_ + position / 64, position); }
  void ClearSubmitted(int64_t position) { Set(idle_ + position / 64, position); }
  void SetEvict(int64_t position) { Clear(keep_ + position / 64, position); }
  void SetSendsRequests(int rank) { Clear(quiet_ + rank / 64, rank); }
  void SetFlag(RoundFlag flag) { words_[flags_] &= ~static_cast<uint64_t>(flag); }
  void SetRank0Word(uint64_t value) { words_[rank0_] = value; }
  void SetFingerprint(uint64_t value) {
    words_[check_] = value;
    words_[check_ + 1] = ~value;
  }

  // Reading the AND of every rank's contribution, 64 positions at a time.
  int64_t position_words() const { return ready_words_; }
  uint64_t ReadyEverywhere(int64_t word) const { return words_[ready_ + word]; }
  uint64_t SubmittedSomewhere(int64_t word) const { return ~words_[idle_ + word]; }
  uint64_t Evicted(int64_t word) const { return ~words_[keep_ + word]; }
  bool SendsRequests(int rank) const { return !Test(quiet_ + rank / 64, rank); }
  bool AnySendsRequests() const;
  bool Flag(RoundFlag flag) const { return (words_[flags_] & flag) == 0; }
  uint64_t Rank0Word() const { return words_[rank0_]; }
  // False when the contributors' caches differ.
  bool FingerprintsAgree() const { return words_[check_] == ~words_[check_ + 1]; }

  uint64_t* data() { return words_.data(); }
  const uint64_t* data() const { return words_.data(); }
  int64_t size() const { return static_cast<int64_t>(words_.size()); }

 private:
  void Set(int64_t word, int64_t bit) { words_[word] |= uint64_t{1} << (bit % 64); }
  void Clear(int64_t word, int64_t bit) { words_[word] &= ~(uint64_t{1} << (bit % 64)); }
  bool Test(int64_t word, int64_t bit) const { return (words_[word] >> (bit % 64)) & 1; }

  int64_t ready_words_;
  int64_t rank_words_;
  int64_t ready_, idle_, keep_, quiet_, flags_, rank0_, check_;
  std::vector<uint64_t> words_;
};

// Calls `f(position)` for every set bit of `bits`, the `word`-th word of a position section.
template <typename F>
void ForEachBit(uint64_t bits, int64_t word, F&& f) {
  while (bits) {
    f(word * 64 + __builtin_ctzll(bits));
    bits &= bits - 1;
  }
}

}  // namespace mpirep
