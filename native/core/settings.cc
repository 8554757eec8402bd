#include "settings.h"

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <type_traits>

namespace mpirep {
namespace {

bool Parse(const std::string& text, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0) return false;
  *out = value;
  return true;
}

bool Parse(const std::string& text, double* out) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0) return false;
  *out = value;
  return true;
}

bool Parse(const std::string& text, bool* out) {
  if (text != "0" && text != "1") return false;
  *out = text == "1";
  return true;
}

bool Parse(const std::string& text, std::string* out) {
  *out = text;
  return true;
}

std::string Text(int64_t value) { return std::to_string(value); }

std::string Text(double value) {
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof text, value).ptr);  // shortest exact form
}

std::string Text(bool value) { return value ? "1" : "0"; }

std::string Text(const std::string& value) { return value; }

template <typename T>
bool BelowMinimum(const T& value, double minimum) {
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) return value < minimum;
  return false;
}

}  // namespace

std::string SetSetting(Config* config, const std::string& name, const std::string& text) {
#define MPIREP_SETTING(setting, type, default_value, minimum, ...)                       \
  if (name == #setting) {                                                                \
    if (!Parse(text, &config->setting)) {                                                \
      return "mpirep setting " #setting ": cannot read '" + text + "' as " #type;        \
    }                                                                                    \
    if (BelowMinimum(config->setting, minimum)) {                                        \
      return "mpirep setting " #setting " must be at least " #minimum;                   \
    }                                                                                    \
    return "";                                                                           \
  }
#include "settings.def"
#undef MPIREP_SETTING
  return "unknown mpirep setting '" + name + "'";
}

std::string GetSetting(const Config& config, const std::string& name) {
#define MPIREP_SETTING(setting, ...) \
  if (name == #setting) return Text(config.setting);
#include "settings.def"
#undef MPIREP_SETTING
  throw std::invalid_argument("unknown mpirep setting '" + name + "'");
}

}  // namespace mpirep
