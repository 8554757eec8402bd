#include "timeline.h"

#include <stdexcept>

namespace mpirep {
namespace {

// Tensor names come from users; keep the JSON valid whatever they contain.
std::string Escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

Timeline::Timeline(const std::string& path) : origin_(Clock::now()) {
  if (path.empty()) return;
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw std::runtime_error("cannot open the timeline file '" + path + "'");
  // The trace format tolerates a missing closing bracket, so a job that dies still leaves a
  // readable file.
  std::fputs("[\n", file_);
}

Timeline::~Timeline() {
  if (!file_) return;
  std::fputs("{}]\n", file_);
  std::fclose(file_);
}

double Timeline::Micros(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

int Timeline::RowOf(const std::string& tensor) {
  auto [it, inserted] = rows_.try_emplace(tensor, static_cast<int>(rows_.size()) + 1);
  if (inserted) {
    std::fprintf(file_, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":%d,\"args\":{\"name\":\"%s\"}},\n",
                 it->second, Escaped(tensor).c_str());
  }
  return it->second;
}

void Timeline::Phase(const std::string& tensor, const char* phase, Clock::time_point begin,
                     Clock::time_point end, const std::string& detail) {
  if (!file_) return;
  const int row = RowOf(tensor);
  std::fprintf(file_, "{\"ph\":\"X\",\"name\":\"%s\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"detail\":\"%s\"}},\n",
               phase, row, Micros(begin), Micros(end) - Micros(begin), Escaped(detail).c_str());
}

}  // namespace mpirep
