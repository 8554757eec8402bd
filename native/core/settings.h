// The core's settings as C++ sees them, derived from the table in settings.def: the Config
// struct (one member per setting, with its default), and setting one by name from text.
#pragma once

#include <cstdint>
#include <string>

namespace mpirep {

#define MPIREP_SETTING_TYPE_int int64_t
#define MPIREP_SETTING_TYPE_float double
#define MPIREP_SETTING_TYPE_str std::string
#define MPIREP_SETTING_TYPE_bool bool

struct Config {
#define MPIREP_SETTING(name, type, default_value, ...) MPIREP_SETTING_TYPE_##type name = default_value;
#include "settings.def"
#undef MPIREP_SETTING
};

// Sets the setting `name` from `text` (a number for int and float settings, 0 or 1 for bool). Returns "" or
// why it cannot: an unknown name, text that is not a number, a value below the minimum.
std::string SetSetting(Config* config, const std::string& name, const std::string& text);

// The value of the setting `name` as text that SetSetting reads back to the same value. Throws
// std::invalid_argument for an unknown name.
std::string GetSetting(const Config& config, const std::string& name);

}  // namespace mpirep
