// Runs a test body on `n` ranks as threads of this process, connected by InProcessTransport.
#pragma once

#include <functional>
#include <thread>
#include <vector>

#include "inproc_transport.h"

namespace mpirep_test {

inline void OnRanks(int n, const std::function<void(mpirep::Transport&)>& body) {
  mpirep::InProcessWorld world(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      mpirep::InProcessTransport transport(world, r);
      body(transport);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace mpirep_test
