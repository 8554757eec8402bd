// The bitwise AND of every rank's words (a round's agreement, agreement.h), by recursive
// doubling over a Transport, advanced by polling so that the waiting thread can back off and
// sleep. A non-blocking MPI_Iallreduce does the same job, but Open MPI's costs several times a
// point-to-point exchange, and at two ranks a round is exactly one exchange here.
//
// With p the largest power of two not above the rank count, rank p + i (if any) first hands its
// words to rank i; ranks 0..p-1 then exchange and AND with partner rank ^ 1, rank ^ 2, ...; and
// rank i hands the result back to rank p + i. AND is commutative and associative, so every rank
// ends with the same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "transport.h"

namespace mpirep {

class AndAllreduce {
 public:
  explicit AndAllreduce(Transport& transport);

  // Starts ANDing `count` words (the same count on every rank) in place. `words` must stay
  // valid, and untouched, until Test returns true.
  void Start(uint64_t* words, size_t count);
  // Advances as far as messages have arrived; true once `words` hold every rank's AND.
  bool Test();

 private:
  struct Step {
    int peer;
    bool send, receive;  // a receive is ANDed into the words
  };
  void Post();

  Transport& transport_;
  std::vector<Step> steps_;
  size_t next_ = 0;  // the step in progress
  std::vector<Transport::Handle> pending_;
  uint64_t* words_ = nullptr;
  size_t count_ = 0;
  std::vector<uint64_t> received_;
};

}  // namespace mpirep
