// Settings are set by name from text, as the C API's start receives them, and bad names and
// values are refused with a reason.
#include <stdexcept>
#include <string>

#include "check.h"
#include "core/settings.h"

using namespace mpirep;

TEST(Settings, SetByNameFromText) {
  Config config;
  const Config defaults;
  CHECK(SetSetting(&config, "fusion_threshold", "4096").empty() && config.fusion_threshold == 4096);
  CHECK(SetSetting(&config, "cycle_time_ms", "0.25").empty() && config.cycle_time_ms == 0.25);
  CHECK(SetSetting(&config, "stall_check_time_seconds", "1e3").empty() && config.stall_check_time_seconds == 1000);
  CHECK(SetSetting(&config, "timeline", "/tmp/trace 1.json").empty() && config.timeline == "/tmp/trace 1.json");
  CHECK(!defaults.timeline_mark_cycles);
  CHECK(SetSetting(&config, "timeline_mark_cycles", "1").empty() && config.timeline_mark_cycles);
  CHECK(SetSetting(&config, "timeline_mark_cycles", "0").empty() && !config.timeline_mark_cycles);
  CHECK(SetSetting(&config, "timeline_mark_cycles", "true") ==
        "mpirep setting timeline_mark_cycles: cannot read 'true' as bool");
  CHECK(config.chunk_bytes == defaults.chunk_bytes && config.stall_shutdown_time_seconds == defaults.stall_shutdown_time_seconds,
        << "settings not named keep their defaults");
}

TEST(Settings, BadNamesAndValuesAreRefusedWithAReason) {
  Config config;
  CHECK(SetSetting(&config, "chunk_bytes", "64").empty() && config.chunk_bytes == 64);
  CHECK(SetSetting(&config, "chunk_bytes", "63") == "mpirep setting chunk_bytes must be at least 64",
        << SetSetting(&config, "chunk_bytes", "63"));
  CHECK(SetSetting(&config, "cycle_time_ms", "-0.5") == "mpirep setting cycle_time_ms must be at least 0");
  CHECK(SetSetting(&config, "fusion_threshold", "12abc") == "mpirep setting fusion_threshold: cannot read '12abc' as int");
  CHECK(SetSetting(&config, "fusion_threshold", "1.5") == "mpirep setting fusion_threshold: cannot read '1.5' as int");
  CHECK(SetSetting(&config, "stall_shutdown_time_seconds", "") ==
        "mpirep setting stall_shutdown_time_seconds: cannot read '' as float");
  CHECK(SetSetting(&config, "fusion_thresold", "1") == "unknown mpirep setting 'fusion_thresold'");
}

TEST(Settings, GetSettingReadsBackWhatWasSet) {
  // GetSetting's text reads back to the same value.
  for (const char* text : {"0.1", "2.5", "1e-07", "0"}) {
    Config c;
    CHECK(SetSetting(&c, "cycle_time_ms", text).empty() && GetSetting(c, "cycle_time_ms") == text, << GetSetting(c, "cycle_time_ms"));
  }
  const Config defaults;
  Config config;
  CHECK(SetSetting(&config, "timeline", "/tmp/trace 1.json").empty());
  CHECK(GetSetting(defaults, "chunk_bytes") == "1048576" && GetSetting(config, "timeline") == "/tmp/trace 1.json");
  bool refused = false;
  try {
    GetSetting(config, "chunk");
  } catch (const std::invalid_argument& e) {
    refused = std::string(e.what()) == "unknown mpirep setting 'chunk'";
  }
  CHECK(refused);
}
