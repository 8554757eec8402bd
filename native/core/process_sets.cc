#include "process_sets.h"

#include "validation.h"

namespace mpirep {

ProcessSets::ProcessSets(int size) : size_(size) {
  std::vector<int>& everyone = ranks_[0];
  for (int r = 0; r < size; ++r) everyone.push_back(r);
}

std::vector<int> ProcessSets::Ranks(int32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ranks_.find(id);
  return it == ranks_.end() ? std::vector<int>{} : it->second;
}

const std::vector<int>* ProcessSets::Find(int32_t id) const {
  auto it = ranks_.find(id);
  return it == ranks_.end() ? nullptr : &it->second;
}

Status ProcessSets::Validate(const Request& request, int rank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ValidateRequest(request, rank, size_, ranks_);
}

void ProcessSets::Add(int32_t id, std::vector<int> ranks) {
  std::lock_guard<std::mutex> lock(mutex_);
  ranks_[id] = std::move(ranks);
}

void ProcessSets::Remove(int32_t id) {
  channels_.erase(id);
  std::lock_guard<std::mutex> lock(mutex_);
  ranks_.erase(id);
}

void ProcessSets::Attach(int32_t id, std::unique_ptr<SetChannel> channel) { channels_[id] = std::move(channel); }

SetChannel* ProcessSets::Channel(int32_t id) const {
  auto it = channels_.find(id);
  return it == channels_.end() ? nullptr : it->second.get();
}

void ProcessSets::ForEachChannel(const std::function<void(SetChannel&)>& visit) const {
  for (const auto& [id, channel] : channels_) visit(*channel);
}

void ProcessSets::DropChannels() { channels_.clear(); }

}  // namespace mpirep
