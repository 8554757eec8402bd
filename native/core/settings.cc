#include "settings.h"

#include <cerrno>
#include <cstdlib>
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

}  // namespace mpirep
