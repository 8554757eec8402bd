#include "flight_recorder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace mpirep {
namespace {

void Quote(std::ostringstream& out, const char* text, size_t length) {
  out << '"';
  for (size_t i = 0; i < length; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out << escaped;
    } else {
      out << c;
    }
  }
  out << '"';
}

void Quote(std::ostringstream& out, const std::string& text) { Quote(out, text.data(), text.size()); }

void Ranks(std::ostringstream& out, const std::vector<int>& ranks) {
  out << '[';
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? "," : "") << ranks[i];
  out << ']';
}

// Creates `dir` and its parents; "" or an error.
std::string MakeDirectories(const std::string& dir) {
  for (size_t slash = dir.find('/', 1); ; slash = dir.find('/', slash + 1)) {
    const std::string part = dir.substr(0, slash);
    if (!part.empty() && mkdir(part.c_str(), 0777) != 0 && errno != EEXIST) {
      return "cannot create " + part + ": " + std::strerror(errno);
    }
    if (slash == std::string::npos) return "";
  }
}

}  // namespace

void FlightRecorder::Record(const Operation& op, Clock::time_point started, Clock::time_point ended,
                            StatusCode status, int32_t fused) {
  if (entries_.empty()) return;
  Entry& e = entries_[recorded_++ % entries_.size()];
  e.sequence = recorded_;
  const std::string& name = op.request.name;
  const size_t length = std::min(name.size(), kNameBytes - 1);
  std::memcpy(e.name, name.data(), length);
  e.name[length] = '\0';
  e.name_cut = length < name.size();
  e.collective = op.request.collective;
  e.op = op.request.op;
  e.dtype = op.request.dtype;
  e.status = status;
  e.process_set = op.request.process_set;
  e.fused = fused;
  e.bytes = TensorBytes(op.request.dtype, op.request.shape);
  e.submitted = op.enqueued_at;
  e.started = started;
  e.ended = ended;
}

std::vector<const FlightRecorder::Entry*> FlightRecorder::Entries() const {
  std::vector<const Entry*> out;
  const uint64_t kept = std::min<uint64_t>(recorded_, entries_.size());
  for (uint64_t i = recorded_ - kept; i < recorded_; ++i) out.push_back(&entries_[i % entries_.size()]);
  return out;
}

std::string FlightDumpJson(const FlightDump& dump, FlightDump::Clock::time_point now, double wall_now) {
  auto wall = [&](FlightDump::Clock::time_point t) {
    return wall_now - std::chrono::duration<double>(now - t).count();
  };
  std::ostringstream out;
  out.precision(17);
  out << "{\"format\":\"mpirep flight record 2\",\"job\":";
  Quote(out, dump.job);
  out << ",\"rank\":" << dump.rank << ",\"size\":" << dump.size
      << ",\"pid\":" << dump.pid << ",\"time\":" << wall_now << ",\"reason\":";
  Quote(out, dump.reason);
  out << ",\"hosts\":[";
  for (size_t r = 0; r < dump.hosts.size(); ++r) {
    out << (r ? "," : "");
    Quote(out, dump.hosts[r]);
  }
  out << "],\"peer_timeout_seconds\":" << dump.peer_timeout_seconds << ",\"silent\":[";
  for (size_t i = 0; i < dump.silent.size(); ++i) {
    out << (i ? "," : "") << "{\"rank\":" << dump.silent[i].rank << ",\"seconds\":" << dump.silent[i].seconds << "}";
  }
  out << "],\"cut_off\":" << (dump.cut_off ? "true" : "false") << ",\"told_by\":" << dump.told_by << ",\"reported\":";
  Ranks(out, dump.reported);
  out << ",\"in_flight\":[";
  for (size_t i = 0; i < dump.in_flight.size(); ++i) {
    const FlightDump::InFlight& f = dump.in_flight[i];
    out << (i ? "," : "") << "{\"name\":";
    Quote(out, f.name);
    out << ",\"collective\":\"" << CollectiveName(f.collective) << "\",\"dtype\":\"" << DataTypeName(f.dtype)
        << "\",\"bytes\":" << f.bytes << ",\"process_set\":" << f.process_set << ",\"state\":\""
        << StateName(f.state) << "\",\"submitted\":" << wall(f.submitted) << "}";
  }
  out << "],\"waiting\":[";
  for (size_t i = 0; i < dump.waiting.size(); ++i) {
    const FlightDump::Waiting& w = dump.waiting[i];
    out << (i ? "," : "") << "{\"name\":";
    Quote(out, w.name);
    out << ",\"collective\":\"" << CollectiveName(w.collective) << "\",\"submitted_by\":";
    Ranks(out, w.submitted_by);
    out << ",\"missing\":";
    Ranks(out, w.missing);
    out << ",\"since\":" << wall(w.since) << "}";
  }
  out << "],\"recent\":[";
  for (size_t i = 0; i < dump.recent.size(); ++i) {
    const FlightRecorder::Entry& e = *dump.recent[i];
    out << (i ? "," : "") << "{\"sequence\":" << e.sequence << ",\"name\":";
    Quote(out, e.name, std::strlen(e.name));
    out << ",\"name_cut\":" << (e.name_cut ? "true" : "false") << ",\"collective\":\"" << CollectiveName(e.collective)
        << "\",\"op\":\"" << ReduceOpName(e.op) << "\",\"dtype\":\"" << DataTypeName(e.dtype)
        << "\",\"bytes\":" << e.bytes << ",\"process_set\":" << e.process_set << ",\"fused\":" << e.fused
        << ",\"status\":\"" << StatusName(e.status) << "\",\"submitted\":" << wall(e.submitted)
        << ",\"started\":" << wall(e.started) << ",\"ended\":" << wall(e.ended) << "}";
  }
  out << "]}\n";
  return out.str();
}

std::string WriteFlightDump(const std::string& dir, int rank, const std::string& json) {
  const std::string made = MakeDirectories(dir);
  if (!made.empty()) return "error: " + made;
  const std::string path = dir + "/rank" + std::to_string(rank) + ".json";
  const std::string temporary = path + ".tmp" + std::to_string(getpid());
  FILE* f = std::fopen(temporary.c_str(), "w");
  if (!f) return "error: cannot write " + temporary + ": " + std::strerror(errno);
  const bool written = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  if (std::fclose(f) != 0 || !written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return "error: cannot write " + path + ": " + std::strerror(errno);
  }
  return path;
}

}  // namespace mpirep
