// A copy whose stores bypass the cache (non-temporal stores), for destinations larger than the
// cache: a plain copy first reads every destination line from memory (to own it) and then
// writes it back, so streaming spares a third of a large copy's memory traffic. The stores are
// fenced before it returns, so that whatever the caller then publishes sees them.
#pragma once

#include <cstddef>

namespace mpirep {

void StreamCopy(void* dst, const void* src, size_t bytes);

}  // namespace mpirep
