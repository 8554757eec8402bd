// How a rank that has joined takes part in a collective it never submitted: zeros in (no rows
// for allgather), its output discarded. The response carries the shape it needs.
#pragma once

#include <vector>

#include "operation.h"

namespace mpirep {

struct StandIn {
  // For the `index`-th tensor that `response` names.
  StandIn(const Response& response, size_t index);
  StandIn(const StandIn&) = delete;
  StandIn& operator=(const StandIn&) = delete;

  Operation op;  // its allocate writes into `discarded`, so a StandIn never moves

 private:
  std::vector<char> zeros_;
  std::vector<char> discarded_;
};

}  // namespace mpirep
