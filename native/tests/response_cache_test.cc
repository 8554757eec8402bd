// The response cache (positions, hits, least-recently-used eviction, fingerprint) and the
// layout of a round's words (what the AND of several ranks' contributions says).
#include <cmath>
#include <limits>
#include <vector>

#include "check.h"
#include "core/agreement.h"
#include "core/response_cache.h"

using namespace mpirep;

namespace {

Response Executed(std::vector<std::string> names, int32_t process_set = 0) {
  Response response;
  response.names = std::move(names);
  response.dtype = DataType::FLOAT64;
  response.process_set = process_set;
  for (size_t i = 0; i < response.names.size(); ++i) response.shapes.push_back({static_cast<int64_t>(i) + 2, 3});
  response.cacheable = true;
  return response;
}

Request Own(const std::string& name, Shape shape) {
  Request request;
  request.name = name;
  request.dtype = DataType::FLOAT64;
  request.shape = std::move(shape);
  return request;
}

TEST(ResponseCache, EntriesByNameAndPosition) {
  ResponseCache cache(4);
  const Response fused = Executed({"a", "b"});
  const Request a = Own("a", {2, 3});
  const int64_t pa = cache.Insert(fused, 0, &a);
  const int64_t pb = cache.Insert(fused, 1, nullptr);  // a tensor of a set this rank is not in
  CHECK(cache.Find("a") == pa && cache.Find("b") == pb && cache.Find("c") < 0 && pa != pb);
  CHECK(cache.response(pa).names == std::vector<std::string>{"a"} && cache.response(pa).bytes == 2 * 3 * 8);
  CHECK(cache.response(pb).shapes[0] == Shape({3, 3}) && cache.response(pb).bytes == 72);
  CHECK(cache.Member(pa) && !cache.Member(pb));
  CHECK(cache.Repeats(pa, a));
  CHECK(!cache.Repeats(pa, Own("a", {3, 2})));
  CHECK(!cache.Repeats(pb, Own("b", {3, 3})), << "a non-member has no request to repeat");
  Request scaled = a;
  scaled.postscale = 0.5;
  CHECK(!cache.Repeats(pa, scaled));
}

TEST(ResponseCache, LeastRecentlyUsed) {
  ResponseCache cache(2);
  const Response r = Executed({"a", "b", "c"});
  const int64_t pa = cache.Insert(r, 0, nullptr);
  const int64_t pb = cache.Insert(r, 1, nullptr);
  CHECK(cache.Full() && cache.LeastRecentlyUsed() == pa);
  cache.Touch(pa);
  CHECK(cache.LeastRecentlyUsed() == pb);
  cache.Evict(cache.LeastRecentlyUsed());
  CHECK(!cache.Full() && cache.Find("b") < 0 && !cache.Occupied(pb));
  const int64_t pc = cache.Insert(r, 2, nullptr);
  CHECK(pc == pb, << "a freed position is reused");
  CHECK(cache.LeastRecentlyUsed() == pa);
  bool threw = false;
  try {
    cache.Insert(r, 0, nullptr);
  } catch (const std::logic_error&) {
    threw = true;
  }
  CHECK(threw, << "inserting a cached name, or into a full cache, is a bug");
}

TEST(ResponseCache, ProcessSetPositions) {
  ResponseCache cache(8);
  cache.Insert(Executed({"x"}, 1), 0, nullptr);
  cache.Insert(Executed({"y"}, 2), 0, nullptr);
  cache.Insert(Executed({"z"}, 1), 0, nullptr);
  CHECK(cache.PositionsOf(1) == std::vector<int64_t>({cache.Find("x"), cache.Find("z")}));
  CHECK(cache.PositionsOf(3).empty());
}

TEST(ResponseCache, FingerprintOfARequest) {
  ResponseCache one(4), two(4);
  const Response r = Executed({"a", "b"});
  for (ResponseCache* c : {&one, &two}) {
    c->Insert(r, 0, nullptr);
    c->Insert(r, 1, nullptr);
    c->Touch(c->Find("a"));
  }
  CHECK(one.fingerprint() == two.fingerprint());
  one.Touch(one.Find("b"));
  CHECK(one.fingerprint() != two.fingerprint());
}

TEST(ResponseCache, ScaleFactorsCompareBitForBit) {
  Request a = Own("a", {1}), b = a;
  a.prescale = 0.0;
  b.prescale = -0.0;
  CHECK(!SameRequest(a, b));
  a.prescale = b.prescale = std::numeric_limits<double>::quiet_NaN();
  CHECK(SameRequest(a, b), << "the same NaN repeats");
}

// The AND of three ranks' words.
RoundWords And(const std::vector<RoundWords>& contributions) {
  RoundWords out = contributions[0];
  for (const RoundWords& c : contributions) {
    for (int64_t i = 0; i < out.size(); ++i) out.data()[i] &= c.data()[i];
  }
  return out;
}

TEST(ResponseCache, RoundWordsAnd) {
  const int64_t positions = 130;  // three words per section
  std::vector<RoundWords> c(3, RoundWords(positions, 3));
  for (RoundWords& w : c) {
    w.SetReady(129);
    w.SetSubmitted(129);
    w.SetFingerprint(42);
  }
  c[0].SetReady(5);  // submitted on rank 0 only
  c[0].SetSubmitted(5);
  c[1].SetReady(64);  // not rank 1's to wait for, and rank 0's and 2's submission
  c[0].SetReady(64);
  c[0].SetSubmitted(64);
  c[2].SetReady(64);
  c[2].SetSubmitted(64);
  c[2].SetEvict(7);
  c[1].SetSendsRequests(1);
  c[2].SetFlag(kJoinPending);
  c[0].SetRank0Word(1);
  RoundWords agreed = And(c);
  CHECK(agreed.position_words() == 3);
  CHECK(agreed.ReadyEverywhere(0) == 0, << "position 5 is not ready on ranks 1 and 2");
  CHECK(agreed.SubmittedSomewhere(0) == (uint64_t{1} << 5));
  CHECK(agreed.ReadyEverywhere(1) == 1 && agreed.SubmittedSomewhere(1) == 1);
  CHECK(agreed.ReadyEverywhere(2) == 2 && agreed.SubmittedSomewhere(2) == 2);
  CHECK(agreed.Evicted(0) == (uint64_t{1} << 7) && agreed.Evicted(1) == 0);
  CHECK(agreed.AnySendsRequests() && agreed.SendsRequests(1) && !agreed.SendsRequests(0));
  CHECK(agreed.Flag(kJoinPending) && !agreed.Flag(kShutDown));
  CHECK(agreed.Rank0Word() == 1);
  CHECK(agreed.FingerprintsAgree());
  c[1].SetFingerprint(43);
  CHECK(!And(c).FingerprintsAgree());
  RoundWords quiet = And({RoundWords(0, 70), RoundWords(0, 70)});
  CHECK(quiet.position_words() == 0 && !quiet.AnySendsRequests() && !quiet.Flag(kShutDown));
}

}  // namespace
