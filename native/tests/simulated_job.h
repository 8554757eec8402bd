// A job of Negotiators in one thread: rounds are run the way the runtime runs them over MPI
// (contributions ANDed together, request lists to rank 0, its response list to every rank),
// and what each rank would run is recorded instead of run. Every job also writes a transcript
// of its rounds (each rank's cache hits, rank 0's response lists, the reports) that must match
// the one recorded in simulated_jobs_golden.h (golden.h).
#pragma once

#include <algorithm>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/negotiator.h"
#include "core/process_sets.h"
#include "golden.h"

namespace mpirep_test {

// What one rank ran, in order.
struct Ran {
  std::vector<std::string> names;  // one collective (several names when fused)
  mpirep::Response::Kind kind;
  std::string error;
  bool cached;  // ran from the response cache
};

class SimulatedJob {
 public:
  using Clock = mpirep::Negotiator::Clock;

  SimulatedJob(int size, const mpirep::Config& config) : size_(size), ran_(size), config_(config) {
    for (int r = 0; r < size; ++r) {
      sets_.push_back(std::make_unique<mpirep::ProcessSets>(size));
      ranks_.push_back(std::make_unique<mpirep::Negotiator>(r, size, config, *sets_.back()));
    }
    static std::map<std::string, int> jobs_per_test;
    key_ = current_test + "#" + std::to_string(jobs_per_test[current_test]++);
  }
  ~SimulatedJob() { CheckGolden(key_, transcript_.str()); }
  SimulatedJob(const SimulatedJob&) = delete;
  SimulatedJob& operator=(const SimulatedJob&) = delete;

  int size() const { return size_; }
  mpirep::Negotiator& rank(int r) { return *ranks_[r]; }
  const mpirep::ProcessSets& sets(int r) const { return *sets_[r]; }
  const std::vector<Ran>& ran(int r) const { return ran_[r]; }
  const std::vector<std::string>& reports() const { return reports_; }
  // The settings every rank uses now, and the number of Retunes applied so far.
  const mpirep::Config& config() const { return config_; }
  int retunes() const { return retunes_; }
  Clock::time_point now = Clock::now();

  // A request as rank `r` makes it: allreduce of float32 of `shape` unless changed.
  static mpirep::Request Make(int r, const std::string& name, mpirep::Shape shape = {4}) {
    mpirep::Request request;
    request.rank = r;
    request.name = name;
    request.shape = std::move(shape);
    return request;
  }
  void Submit(int r, mpirep::Request request) {
    request.rank = r;
    outstanding_[r].insert(request.name);
    mpirep::Operation& op = submitted_.emplace_back();
    op.request = std::move(request);
    ranks_[r]->Submit(op);
  }
  // The state of rank `r`'s latest operation named `name`.
  mpirep::TensorState state(int r, const std::string& name) const {
    for (auto it = submitted_.rbegin(); it != submitted_.rend(); ++it) {
      if (it->request.rank == r && it->request.name == name) return it->state;
    }
    throw std::logic_error("rank " + std::to_string(r) + " never submitted '" + name + "'");
  }
  // The names rank `r` submitted that have not run or failed yet.
  const std::set<std::string>& outstanding(int r) { return outstanding_[r]; }

  // One round on every rank. Returns whether it had a slow phase.
  bool Round() {
    std::vector<mpirep::RoundWords*> words;
    for (auto& n : ranks_) words.push_back(&n->Contribute(now));
    std::vector<uint64_t> agreed(words[0]->data(), words[0]->data() + words[0]->size());
    for (auto* w : words) {
      for (int64_t i = 0; i < w->size(); ++i) agreed[i] &= w->data()[i];
    }
    std::vector<std::vector<mpirep::Response>> fast(size_);
    for (int r = 0; r < size_; ++r) {
      std::copy(agreed.begin(), agreed.end(), words[r]->data());
      fast[r] = ranks_[r]->Agree(*words[r], now);
    }
    ++rounds_;
    for (const std::string& line : ranks_[0]->TakeReports()) {
      transcript_ << "round " << rounds_ << " report: " << line << "\n";
      reports_.push_back(line);
    }
    for (int r = 0; r < size_; ++r) {
      for (const mpirep::Response& response : fast[r]) {
        transcript_ << "round " << rounds_ << " rank " << r << " cached: " << Describe(response) << "\n";
        Record(r, response, true);
      }
    }
    if (!ranks_[0]->SlowPhase()) return false;
    std::map<int, mpirep::RequestList> lists;
    for (int r = 0; r < size_; ++r) {
      if (ranks_[r]->SendsRequests()) lists[r] = ranks_[r]->TakeRequests();
    }
    for (int sender : ranks_[0]->Senders()) ranks_[0]->Receive(sender, lists.at(sender), now);
    const mpirep::ResponseList list = ranks_[0]->Decide();
    for (const mpirep::Response& response : list.responses) {
      transcript_ << "round " << rounds_ << " decided: " << Describe(response) << "\n";
    }
    if (list.retune) {
      transcript_ << "round " << rounds_ << " retune" << (list.retune->final ? " (final):" : ":");
      for (const auto& [name, value] : list.retune->settings) transcript_ << " " << name << "=" << value;
      transcript_ << "\n";
    }
    if (list.retune) {  // as the runtime does: every rank switches before running the list
      for (const auto& [name, value] : list.retune->settings) mpirep::SetSetting(&config_, name, value);
      for (auto& n : ranks_) n->Reconfigure(config_);
      ++retunes_;
    }
    for (const mpirep::Response& response : list.responses) {
      for (int r = 0; r < size_; ++r) {
        const mpirep::LocalPart part = ranks_[r]->Accept(response);
        transcript_ << "round " << rounds_ << " rank " << r << " part " << static_cast<int>(part) << "\n";
        if (part != mpirep::LocalPart::kNone) Record(r, response, false);
      }
    }
    return true;
  }

  // Rounds until no rank is busy, at most `limit`.
  int Settle(int limit = 20) {
    int rounds = 0;
    while (rounds < limit && std::any_of(ranks_.begin(), ranks_.end(), [](auto& n) { return n->Busy(); })) {
      Round();
      ++rounds;
    }
    return rounds;
  }

 private:
  // A response as the transcript shows it: every field a rank acts on.
  static std::string Describe(const mpirep::Response& r) {
    auto ints = [](const std::vector<int64_t>& v) {
      std::string out;
      for (int64_t x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
      return "[" + out + "]";
    };
    std::ostringstream out;
    out << "kind " << static_cast<int>(r.kind) << " " << mpirep::CollectiveName(r.collective) << " set "
        << r.process_set << " names";
    for (const std::string& name : r.names) out << " " << name;
    out << " dtype " << mpirep::DataTypeName(r.dtype) << " op " << mpirep::ReduceOpName(r.op) << " root " << r.root
        << " scale " << r.prescale << "/" << r.postscale << " shapes";
    for (const mpirep::Shape& shape : r.shapes) out << " " << mpirep::ShapeString(shape);
    out << " first_dims " << ints(r.first_dims) << " splits " << ints(r.split_matrix) << " joined "
        << r.last_joined_rank << " new_set " << r.new_set_id << ints(r.new_set_ranks) << " removed "
        << r.removed_set << " cacheable " << r.cacheable << " bytes " << r.bytes;
    if (r.kind == mpirep::Response::Kind::ERROR) {
      out << " error " << mpirep::StatusName(r.error_code) << " ranks " << ints(r.error_ranks) << ": " << r.error;
    }
    return out.str();
  }

  // What the runtime would do on rank `r` with a response that concerns it: run it, or fail
  // what it submitted.
  void Record(int r, const mpirep::Response& response, bool cached) {
    for (const std::string& name : response.names) outstanding_[r].erase(name);
    ran_[r].push_back({response.names, response.kind, response.error, cached});
  }

  int size_;
  std::vector<std::unique_ptr<mpirep::Negotiator>> ranks_;
  std::vector<std::vector<Ran>> ran_;
  std::vector<std::string> reports_;
  std::vector<std::unique_ptr<mpirep::ProcessSets>> sets_;  // each rank's registry
  std::map<int, std::set<std::string>> outstanding_;
  std::list<mpirep::Operation> submitted_;  // where the negotiators' operations stay, as the runtime's do
  mpirep::Config config_;
  int retunes_ = 0;
  int rounds_ = 0;
  std::string key_;  // the transcript's name: the test's, and the job's number in it
  std::ostringstream transcript_;
};

}  // namespace mpirep_test
