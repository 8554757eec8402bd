#include "timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mpirep {
namespace {

constexpr char kClosing[] = "\n]\n";
constexpr int kCyclesTrack = 0;  // tensors' tracks are 1, 2, ...

// Tensor names come from users; keep the JSON valid whatever they contain.
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string Metadata(const char* what, int track, const std::string& args) {
  return "{\"name\":\"" + std::string(what) + "\",\"ph\":\"M\",\"pid\":0,\"tid\":" + std::to_string(track) +
         ",\"args\":" + args + "}";
}

// Writes all of `text` at `offset`; false on an error (errno says which).
bool WriteAt(int fd, const std::string& text, int64_t offset) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int64_t Bytes(const Operation& op) { return TensorBytes(op.request.dtype, op.request.shape); }

}  // namespace

std::string Timeline::Start(const std::string& path, bool mark_cycles) {
  std::lock_guard<std::mutex> lock(mutex_);
  Close();
  fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return "cannot open the timeline file '" + path + "': " + std::strerror(errno);
  path_ = path;
  mark_cycles_ = mark_cycles;
  origin_ = last_flush_ = Clock::now();
  written_ = 0;
  pending_ = "[";
  first_event_ = true;
  cycles_ = 0;
  tracks_.clear();
  Append(Metadata("process_name", kCyclesTrack, "{\"name\":\"mpirep (as rank 0 saw it)\"}"));
  if (mark_cycles_) {
    Append(Metadata("thread_name", kCyclesTrack, "{\"name\":\"background thread rounds\"}"));
  }
  Flush();
  if (fd_ < 0) return "cannot write the timeline file '" + path + "'";
  active_.store(true, std::memory_order_release);
  return "";
}

void Timeline::Stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  Close();
}

void Timeline::Close() {
  if (fd_ < 0) return;
  active_.store(false, std::memory_order_release);
  Flush();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  tracks_.clear();
}

void Timeline::Flush() {
  if (pending_.empty() || fd_ < 0) return;
  if (!WriteAt(fd_, pending_ + kClosing, written_)) {
    std::fprintf(stderr, "[mpirep] cannot write the timeline file '%s' (%s); the timeline stops\n",
                 path_.c_str(), std::strerror(errno));
    active_.store(false, std::memory_order_release);
    close(fd_);
    fd_ = -1;
  }
  written_ += static_cast<int64_t>(pending_.size());
  pending_.clear();
  last_flush_ = Clock::now();
}

void Timeline::BeginRound() {
  if (active()) round_began_ = Clock::now();
}

void Timeline::EndRound(bool progressed) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) return;
  if (progressed && mark_cycles_) {
    ++cycles_;
    Append("{\"name\":\"CYCLE\",\"ph\":\"i\",\"s\":\"g\",\"pid\":0,\"tid\":" + std::to_string(kCyclesTrack) +
           ",\"ts\":" + Micros(std::max(round_began_, origin_) - origin_) + ",\"args\":{\"cycle\":" + std::to_string(cycles_) + "}}");
  }
  if (!progressed || Clock::now() - last_flush_ >= kFlushInterval) Flush();
}

void Timeline::Executed(const Response& response, const std::vector<Operation*>& ops, const PhaseLog& phases) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) return;
  int64_t fused_bytes = 0;
  for (const Operation* op : ops) fused_bytes += Bytes(*op);
  const Clock::time_point queue_end = phases.phases().empty() ? Clock::now() : phases.phases().front().begin;
  // The fast path of negotiation (if any) decides without the coordinator, so without arrivals.
  const bool arrived = response.last_arrivals.size() == ops.size();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = *ops[i];
    const int track = TrackOf(op.request.name);
    if (arrived) {
      const Arrival& last = response.last_arrivals[i];
      if (op.enqueued_at != Clock::time_point{}) {  // rank 0 submitted it (rather than a stand-in)
        Complete(track, "NEGOTIATE", op.enqueued_at, last.at, "{\"last_rank\":" + std::to_string(last.rank) + "}");
      }
      Complete(track, "QUEUE", last.at, queue_end, "{}");
    }
    const std::string args = "{\"tensor_bytes\":" + std::to_string(Bytes(op)) +
                             ",\"fused_tensors\":" + std::to_string(ops.size()) +
                             ",\"fused_bytes\":" + std::to_string(fused_bytes) + "}";
    for (const PhaseLog::Phase& phase : phases.phases()) Complete(track, phase.name, phase.begin, phase.end, args);
  }
}

int Timeline::TrackOf(const std::string& tensor) {
  auto [it, inserted] = tracks_.try_emplace(tensor, static_cast<int>(tracks_.size()) + 1);
  if (inserted) {
    Append(Metadata("thread_name", it->second, "{\"name\":" + Quoted(tensor) + "}"));
    // rows in the order tensors first ran, not by hash or name
    Append(Metadata("thread_sort_index", it->second, "{\"sort_index\":" + std::to_string(it->second) + "}"));
  }
  return it->second;
}

void Timeline::Append(const std::string& event) {
  pending_ += first_event_ ? "\n" : ",\n";
  pending_ += event;
  first_event_ = false;
}

// A phase that began before the timeline started is cut at its start; one that ended before
// it is left out.
void Timeline::Complete(int track, const char* phase, Clock::time_point begin, Clock::time_point end,
                        const std::string& args) {
  if (end < origin_) return;
  if (begin < origin_) begin = origin_;
  Append("{\"name\":\"" + std::string(phase) + "\",\"ph\":\"X\",\"pid\":0,\"tid\":" + std::to_string(track) +
         ",\"ts\":" + Micros(begin - origin_) + ",\"dur\":" + Micros(end - begin) + ",\"args\":" + args + "}");
}

// Exact to the nanosecond, so that a phase's ts + dur is the next one's ts to the digit.
std::string Timeline::Micros(Clock::duration d) {
  const long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  char text[32];
  std::snprintf(text, sizeof text, "%lld.%03lld", ns / 1000, ns % 1000);
  return text;
}

}  // namespace mpirep
