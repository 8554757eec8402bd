// The AND of every rank's words by recursive doubling, at 1 to 8 ranks (powers of two and
// the ranks folded in around them), over several rounds in a row.
#include <thread>
#include <vector>

#include "check.h"
#include "core/and_allreduce.h"
#include "on_ranks.h"

using namespace mpirep;

namespace {

// Rank r's word i: every bit set but bit (r + i) % 64, and bit 63 - r in round-dependent words.
uint64_t Word(int rank, int round, size_t i) {
  uint64_t w = ~(uint64_t{1} << ((rank + i) % 64));
  if ((i + round) % 3 == 0) w &= ~(uint64_t{1} << (63 - rank));
  return w;
}

}  // namespace

TEST(AndAllreduce, EveryRankGetsTheAndOfAllWordsRoundAfterRound) {
  for (int n = 1; n <= 8; ++n) {
    mpirep_test::OnRanks(n, [n](Transport& transport) {
      AndAllreduce agreement(transport);
      for (int round = 0; round < 3; ++round) {
        const size_t count = 5 + round;
        std::vector<uint64_t> words(count);
        for (size_t i = 0; i < count; ++i) words[i] = Word(transport.rank(), round, i);
        agreement.Start(words.data(), count);
        while (!agreement.Test()) std::this_thread::yield();
        for (size_t i = 0; i < count; ++i) {
          uint64_t expected = ~uint64_t{0};
          for (int r = 0; r < n; ++r) expected &= Word(r, round, i);
          CHECK(words[i] == expected, << "n=" << n << " rank " << transport.rank() << " round " << round << " word " << i);
        }
      }
    });
  }
}
