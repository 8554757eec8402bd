// The timeline's file: a complete JSON array after every write, one track per tensor with its
// phases in order, the last rank named, phases from before the start cut at it, cycle marks only
// when asked for, and user text escaped. (tests/multiproc/test_timeline.py parses real ones.)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "check.h"
#include "core/timeline.h"

using namespace mpirep;

namespace {

using Clock = Timeline::Clock;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

bool Contains(const std::string& text, const std::string& part) { return Count(text, part) > 0; }

bool Complete(const std::string& text) {
  return text.rfind("[\n", 0) == 0 && text.size() >= 3 && text.compare(text.size() - 3, 3, "\n]\n") == 0;
}

Operation Op(const std::string& name, int64_t elements, Clock::time_point enqueued_at) {
  Operation op;
  op.request.name = name;
  op.request.dtype = DataType::FLOAT32;
  op.request.shape = {elements};
  op.enqueued_at = enqueued_at;
  return op;
}

}  // namespace

TEST(Timeline, RecordsPhasesOfFusedTensorsAndCyclesBetweenStartAndStop) {
  char folder[] = "/tmp/mpirep-timeline-test-XXXXXX";
  CHECK(mkdtemp(folder) != nullptr);
  const std::string path = std::string(folder) + "/trace.json";

  Timeline timeline;
  CHECK(!timeline.active());
  const std::string refused = timeline.Start(std::string(folder) + "/missing/trace.json", false);
  CHECK(refused == "cannot open the timeline file '" + std::string(folder) + "/missing/trace.json': No such file or directory",
        << refused);
  CHECK(!timeline.active());

  const Clock::time_point before_start = Clock::now();
  CHECK(timeline.Start(path, false).empty());
  CHECK(timeline.active());
  CHECK(Complete(Read(path)), << Read(path));

  // Two tensors fused into one ring pass, rank 2 completing the first, and a stand-in (a
  // joined rank 0 never submitted it: no NEGOTIATE).
  const Clock::time_point t0 = Clock::now();
  Operation a = Op("grad \"a\"\n", 4, before_start), b = Op("b", 2, t0), stand_in = Op("c", 1, {});
  Response fused;
  fused.names = {a.request.name, b.request.name, stand_in.request.name};
  fused.last_arrivals = {{2, t0 + std::chrono::microseconds(5)}, {1, t0 + std::chrono::microseconds(6)},
                         {0, t0 + std::chrono::microseconds(7)}};
  PhaseLog log;
  log.Begin("PACK");
  log.Begin("RING_ALLREDUCE");
  log.Begin("UNPACK");
  log.End();
  timeline.BeginRound();
  timeline.Executed(fused, {&a, &b, &stand_in}, log);
  timeline.EndRound(false);  // about to wait: written
  std::string text = Read(path);
  CHECK(Complete(text), << text);
  CHECK(Count(text, "\"name\":\"thread_name\"") == 3);
  CHECK(Contains(text, "\"args\":{\"name\":\"grad \\\"a\\\"\\u000a\"}"), << "the name escaped: " << text);
  CHECK(Count(text, "\"name\":\"NEGOTIATE\"") == 2 && Count(text, "\"name\":\"QUEUE\"") == 3);
  CHECK(Contains(text, "\"name\":\"NEGOTIATE\",\"ph\":\"X\",\"pid\":0,\"tid\":1,\"ts\":0.000,"),
        << "a phase that began before the start is cut at it: " << text);
  CHECK(Contains(text, "\"args\":{\"last_rank\":2}") && Contains(text, "\"args\":{\"last_rank\":1}"));
  for (const char* phase : {"PACK", "RING_ALLREDUCE", "UNPACK"}) {
    CHECK(Count(text, "\"name\":\"" + std::string(phase) + "\"") == 3, << phase);
  }
  CHECK(Count(text, "\"tensor_bytes\":16,\"fused_tensors\":3,\"fused_bytes\":28") == 3);
  CHECK(!Contains(text, "CYCLE"), << "cycles are marked only when asked for");

  // Stopping closes the array; a new start replaces the file, and marks rounds that did work.
  timeline.Stop();
  CHECK(!timeline.active() && Complete(Read(path)));
  CHECK(timeline.Start(path, true).empty());
  timeline.BeginRound();
  timeline.EndRound(true);
  timeline.BeginRound();
  timeline.EndRound(false);
  timeline.Stop();
  text = Read(path);
  CHECK(Complete(text) && !Contains(text, "NEGOTIATE"), << text);
  CHECK(Count(text, "\"name\":\"CYCLE\",\"ph\":\"i\",\"s\":\"g\"") == 1 && Contains(text, "\"args\":{\"cycle\":1}"), << text);

  // Nothing is recorded while stopped.
  timeline.Executed(fused, {&a, &b, &stand_in}, log);
  CHECK(Read(path) == text);
  std::remove(path.c_str());
  rmdir(folder);
}
