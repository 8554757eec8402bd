#include "and_allreduce.h"

#include <algorithm>

namespace mpirep {

AndAllreduce::AndAllreduce(Transport& transport) : transport_(transport) {
  const int rank = transport.rank(), size = transport.size();
  int p = 1;
  while (p * 2 <= size) p *= 2;
  if (rank >= p) {  // hands its words to rank - p, and gets the result back (ANDing it in changes nothing)
    steps_.push_back({rank - p, true, false});
    steps_.push_back({rank - p, false, true});
    return;
  }
  if (rank + p < size) steps_.push_back({rank + p, false, true});
  for (int mask = 1; mask < p; mask *= 2) steps_.push_back({rank ^ mask, true, true});
  if (rank + p < size) steps_.push_back({rank + p, true, false});
}

void AndAllreduce::Start(uint64_t* words, size_t count) {
  words_ = words;
  count_ = count;
  received_.resize(count);
  next_ = 0;
  Post();
}

void AndAllreduce::Post() {
  pending_.clear();
  if (next_ == steps_.size()) return;
  const Step& step = steps_[next_];
  const size_t bytes = count_ * sizeof(uint64_t);
  if (step.receive) pending_.push_back(transport_.Irecv(step.peer, received_.data(), bytes));
  if (step.send) pending_.push_back(transport_.Isend(step.peer, words_, bytes));
}

bool AndAllreduce::Test() {
  while (next_ < steps_.size()) {
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                  [this](Transport::Handle handle) { return transport_.Test(handle); }),
                   pending_.end());
    if (!pending_.empty()) return false;
    if (steps_[next_].receive) {
      for (size_t i = 0; i < count_; ++i) words_[i] &= received_[i];
    }
    ++next_;
    Post();
  }
  return true;
}

}  // namespace mpirep
