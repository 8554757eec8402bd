#include "autotune_log.h"

#include <stdexcept>

namespace mpirep {

AutotuneLog::AutotuneLog(const std::string& path, const std::vector<TunedParameter>& parameters)
    : out_(path, std::ios::trunc) {
  if (!out_) throw std::invalid_argument("mpirep setting autotune_log: cannot write '" + path + "'");
  out_ << "trial";
  for (const TunedParameter& parameter : parameters) out_ << ',' << parameter.name;
  out_ << ",score_bytes_per_second\n" << std::flush;
}

void AutotuneLog::Write(const Trial& trial) { Row(std::to_string(trial.index), trial); }

void AutotuneLog::WriteFinal(const Trial& best) { Row("final", best); }

void AutotuneLog::Row(const std::string& label, const Trial& trial) {
  out_ << label;
  for (const auto& [name, value] : trial.settings) out_ << ',' << value;
  out_ << ',' << static_cast<int64_t>(trial.score) << '\n' << std::flush;
}

}  // namespace mpirep
