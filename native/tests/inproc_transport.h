// A Transport between threads of one process, for testing the ring without MPI. Sends are
// eager (copied at once); a receive is matched to the peer's sends by order, like MPI's
// non-overtaking rule, and its size must equal the matched send's.
#pragma once

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/transport.h"

namespace mpirep {

class InProcessWorld {
 public:
  explicit InProcessWorld(int size) : size_(size), channels_(size * size) {}
  int size() const { return size_; }

  void Deliver(int from, int to, const void* data, size_t bytes) {
    Channel& c = channels_[from * size_ + to];
    {
      std::lock_guard<std::mutex> lock(mutex_);
      c.messages[c.sent++] = std::string(static_cast<const char*>(data), bytes);
    }
    arrived_.notify_all();
  }

  // Whether message `index` from `from` to `to` has arrived.
  bool Arrived(int from, int to, uint64_t index) {
    std::lock_guard<std::mutex> lock(mutex_);
    return channels_[from * size_ + to].messages.count(index) > 0;
  }

  // Messages sent and not yet taken, over every pair of ranks.
  size_t InFlight() {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t n = 0;
    for (const Channel& c : channels_) n += c.messages.size();
    return n;
  }

  void Take(int from, int to, uint64_t index, void* data, size_t bytes) {
    Channel& c = channels_[from * size_ + to];
    std::unique_lock<std::mutex> lock(mutex_);
    arrived_.wait(lock, [&] { return c.messages.count(index) > 0; });
    std::string message = std::move(c.messages[index]);
    c.messages.erase(index);
    if (message.size() != bytes) {
      throw std::runtime_error("message " + std::to_string(index) + " from " + std::to_string(from) +
                               " to " + std::to_string(to) + " has " + std::to_string(message.size()) +
                               " bytes, receive expects " + std::to_string(bytes));
    }
    std::memcpy(data, message.data(), bytes);
  }

 private:
  struct Channel {
    uint64_t sent = 0;
    std::map<uint64_t, std::string> messages;
  };
  int size_;
  std::vector<Channel> channels_;
  std::mutex mutex_;
  std::condition_variable arrived_;
};

class InProcessTransport : public Transport {
 public:
  InProcessTransport(InProcessWorld& world, int rank)
      : world_(world), rank_(rank), received_from_(world.size(), 0) {}

  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }

  Handle Isend(int peer, const void* data, size_t bytes) override {
    CheckSize(bytes);
    world_.Deliver(rank_, peer, data, bytes);
    receives_.push_back({-1, nullptr, 0, 0});
    return receives_.size() - 1;
  }

  Handle Irecv(int peer, void* data, size_t bytes) override {
    CheckSize(bytes);
    receives_.push_back({peer, data, bytes, received_from_[peer]++});
    return receives_.size() - 1;
  }

  void Wait(Handle handle) override {
    const Pending& p = receives_[handle];
    if (p.peer >= 0) world_.Take(p.peer, rank_, p.index, p.data, p.bytes);
  }

  // A message that arrives later for an abandoned receive is never taken.
  void Abandon(Handle) override {}

  bool Test(Handle handle) override {
    const Pending& p = receives_[handle];
    if (p.peer >= 0 && !world_.Arrived(p.peer, rank_, p.index)) return false;
    Wait(handle);
    return true;
  }

 private:
  static void CheckSize(size_t bytes) {
    if (bytes == 0 || bytes > kMaxMessageBytes) {
      throw std::logic_error("a message of " + std::to_string(bytes) + " bytes breaks the Transport contract");
    }
  }
  struct Pending {
    int peer;  // -1 for a send, complete at once
    void* data;
    size_t bytes;
    uint64_t index;
  };
  InProcessWorld& world_;
  int rank_;
  std::vector<uint64_t> received_from_;
  std::vector<Pending> receives_;
};

}  // namespace mpirep
