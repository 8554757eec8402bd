// The autotuning log (setting autotune_log): a CSV file with a header naming the tuned
// settings, one row per trial, written by rank 0 as each trial ends, and a last row with the
// final choice.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "autotuner.h"

namespace mpirep {

class AutotuneLog {
 public:
  // Writes the header; throws std::invalid_argument naming `path` when it cannot be written.
  AutotuneLog(const std::string& path, const std::vector<TunedParameter>& parameters);
  // One row: the trial's index, each tuned setting, its score.
  void Write(const Trial& trial);
  // The last row, when tuning has ended: "final", the chosen settings and their score.
  void WriteFinal(const Trial& best);

 private:
  void Row(const std::string& label, const Trial& trial);

  std::ofstream out_;
};

}  // namespace mpirep
