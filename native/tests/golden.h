// Golden transcripts: a test writes down what it observed as text, and the text must stay
// identical to the one recorded in simulated_jobs_golden.h, so that a refactor that changes a
// response list or an error message, however slightly, fails.
//
// A transcript longer than kLongTranscript bytes (the randomized jobs') is kept as a digest
// and its length in lines; those of Negotiator.Randomized depend on std::shuffle, so they hold
// for libstdc++ (the compiler the build uses, g++).
//
// To record anew (after a change meant to alter them), run the tests with
// MPIREP_RECORD_GOLDEN=FILE: every transcript is appended to FILE, in the layout of
// simulated_jobs_golden.h, which FILE then replaces, and nothing is compared.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

#include "check.h"
#include "simulated_jobs_golden.h"

namespace mpirep_test {

// The recorded transcripts by key: sections "=== KEY" each followed by its lines.
inline const std::map<std::string, std::string>& GoldenTranscripts() {
  static const std::map<std::string, std::string> parsed = [] {
    std::map<std::string, std::string> out;
    std::istringstream in(kSimulatedJobsGolden);
    std::string line, key;
    while (std::getline(in, line)) {
      if (line.rfind("=== ", 0) == 0) {
        key = line.substr(4);
        out[key];
      } else if (!key.empty()) {
        out[key] += line + "\n";
      }
    }
    return out;
  }();
  return parsed;
}

// The first line where two transcripts differ, for the failure message.
inline std::string FirstDifference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int n = 1;; ++n) {
    const bool more_a = static_cast<bool>(std::getline(a, la)), more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "none";
    if (!more_a || !more_b || la != lb) {
      return "line " + std::to_string(n) + ": recorded '" + (more_a ? la : "<end>") + "', now '" +
             (more_b ? lb : "<end>") + "'";
    }
  }
}

constexpr size_t kLongTranscript = 4096;

// What is recorded of a transcript: itself, or for a long one its FNV-1a digest and lines.
inline std::string Recorded(const std::string& transcript) {
  if (transcript.size() <= kLongTranscript) return transcript;
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : transcript) hash = (hash ^ c) * 1099511628211ull;
  char line[80];
  std::snprintf(line, sizeof line, "digest %016llx, %zu lines\n", static_cast<unsigned long long>(hash),
                static_cast<size_t>(std::count(transcript.begin(), transcript.end(), '\n')));
  return line;
}

// Checks `transcript` against the one recorded under `key`, or records it.
inline void CheckGolden(const std::string& key, const std::string& full_transcript) {
  const std::string transcript = Recorded(full_transcript);
  if (const char* record = std::getenv("MPIREP_RECORD_GOLDEN")) {
    if (FILE* f = std::fopen(record, "a")) {
      std::fprintf(f, "=== %s\n%s", key.c_str(), transcript.c_str());
      std::fclose(f);
    }
    return;
  }
  auto it = GoldenTranscripts().find(key);
  CHECK(it != GoldenTranscripts().end(), << "no transcript recorded for " << key << " (golden.h says how)");
  if (it != GoldenTranscripts().end()) {
    CHECK(it->second == transcript, << "the transcript of " << key << " changed, first at "
                                    << FirstDifference(it->second, transcript));
  }
}

}  // namespace mpirep_test
