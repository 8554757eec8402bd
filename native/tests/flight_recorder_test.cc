// The flight recorder (core/flight_recorder.h): it keeps the last entries in order, cuts long
// names and says so, escapes names in its JSON, and writes a record atomically into a
// directory it creates.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "check.h"
#include "core/flight_recorder.h"

using namespace mpirep;

namespace {

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Operation Op(const std::string& name, Shape shape) {
  Operation op;
  op.request.name = name;
  op.request.shape = std::move(shape);
  op.enqueued_at = FlightRecorder::Clock::now();
  return op;
}

TEST(FlightRecorder, KeepsTheLastEntriesInOrder) {
  FlightRecorder recorder(4);
  const auto t = FlightRecorder::Clock::now();
  for (int i = 0; i < 7; ++i) recorder.Record(Op("t" + std::to_string(i), {i + 1}), t, t, StatusCode::OK, 1);
  const auto entries = recorder.Entries();
  CHECK(entries.size() == 4);
  for (size_t i = 0; i < entries.size(); ++i) {
    CHECK(entries[i]->sequence == 4 + i && std::string(entries[i]->name) == "t" + std::to_string(3 + i));
    CHECK(entries[i]->bytes == static_cast<int64_t>(4 * (4 + i)));  // float32 of shape {i + 1}
  }
  CHECK(FlightRecorder(0).Entries().empty());
}

TEST(FlightRecorder, CutsLongNamesAndEscapesThemInJson) {
  FlightRecorder recorder(2);
  const auto t = FlightRecorder::Clock::now();
  recorder.Record(Op(std::string(200, 'x'), {1}), t, t, StatusCode::OK, 1);
  recorder.Record(Op("a\"b\\c\nd", {2}), t, t, StatusCode::MISMATCH, 3);
  const auto entries = recorder.Entries();
  CHECK(entries[0]->name_cut && std::string(entries[0]->name).size() == FlightRecorder::kNameBytes - 1);
  FlightDump dump;
  dump.job = "h1-42-1000";
  dump.rank = 1;
  dump.size = 2;
  dump.hosts = {"h1", "h2"};
  dump.reason = "why \"quoted\"";
  dump.silent = {{0, 2.5}};
  dump.recent = entries;
  const std::string json = FlightDumpJson(dump, t, 1000.0);
  CHECK(Contains(json, "\"name\":\"a\\\"b\\\\c\\u000ad\""), << json);
  CHECK(Contains(json, "\"job\":\"h1-42-1000\",\"rank\":1,\"size\":2"), << json);
  CHECK(Contains(json, "\"reason\":\"why \\\"quoted\\\"\""), << json);
  CHECK(Contains(json, "\"status\":\"mismatch\"") && Contains(json, "\"fused\":3"), << json);
  CHECK(Contains(json, "\"silent\":[{\"rank\":0,\"seconds\":2.5}]") && Contains(json, "\"hosts\":[\"h1\",\"h2\"]"), << json);
}

TEST(FlightRecorder, WritesIntoADirectoryItCreates) {
  char base[] = "/tmp/mpirep-flight-test-XXXXXX";
  CHECK(mkdtemp(base) != nullptr);
  const std::string dir = std::string(base) + "/a/b";
  const std::string path = WriteFlightDump(dir, 3, "{\"rank\":3}\n");
  CHECK(path == dir + "/rank3.json", << path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "{\"rank\":3}\n");
  CHECK(WriteFlightDump("/proc/no-such-dir", 0, "{}").rfind("error: ", 0) == 0);
  std::remove(path.c_str());
  rmdir(dir.c_str());
  rmdir((std::string(base) + "/a").c_str());
  rmdir(base);
}

}  // namespace
