#include "agreement.h"

namespace mpirep {

RoundWords::RoundWords(int64_t positions, int ranks)
    : ready_words_((positions + 63) / 64), rank_words_((ranks + 63) / 64) {
  ready_ = 0;
  idle_ = ready_ + ready_words_;
  keep_ = idle_ + ready_words_;
  quiet_ = keep_ + ready_words_;
  flags_ = quiet_ + rank_words_;
  rank0_ = flags_ + 1;
  check_ = rank0_ + 1;
  words_.assign(check_ + 2, ~uint64_t{0});
  for (int64_t w = 0; w < ready_words_; ++w) words_[ready_ + w] = 0;
  words_[check_ + 1] = ~words_[check_];
}

bool RoundWords::AnySendsRequests() const {
  for (int64_t w = 0; w < rank_words_; ++w) {
    if (~words_[quiet_ + w] != 0) return true;
  }
  return false;
}

}  // namespace mpirep
