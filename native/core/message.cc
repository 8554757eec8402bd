#include "message.h"

#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace mpirep {
namespace {

class Writer {
 public:
  template <typename T>
  void Put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void Put(const std::string& s) {
    Put<uint64_t>(s.size());
    out_.append(s);
  }
  void Put(const std::vector<int64_t>& v) {
    Put<uint64_t>(v.size());
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  T Get() {
    T value;
    std::memcpy(&value, Take(sizeof value), sizeof value);
    return value;
  }
  std::string GetString() {
    uint64_t n = Get<uint64_t>();
    return std::string(Take(n), n);
  }
  std::vector<int64_t> GetInts() {
    uint64_t n = Get<uint64_t>();
    std::vector<int64_t> v(n);
    if (n) std::memcpy(v.data(), Take(n * sizeof(int64_t)), n * sizeof(int64_t));
    return v;
  }

 private:
  const char* Take(uint64_t n) {
    if (n > in_.size() - pos_) throw std::runtime_error("mpirep: truncated control message");
    const char* p = in_.data() + pos_;
    pos_ += n;
    return p;
  }
  const std::string& in_;
  size_t pos_ = 0;
};

}  // namespace

std::string Encode(const RequestList& list) {
  Writer w;
  w.Put<uint8_t>(list.shutdown);
  w.Put(list.shutdown_reason);
  w.Put<uint64_t>(list.requests.size());
  for (const Request& r : list.requests) {
    w.Put(r.rank);
    w.Put(r.collective);
    w.Put(r.name);
    w.Put(r.dtype);
    w.Put(r.shape);
    w.Put(r.op);
    w.Put(r.root);
    w.Put(r.prescale);
    w.Put(r.postscale);
    w.Put(r.splits);
    w.Put(r.process_set);
    w.Put(r.group_size);
    w.Put(r.group);
    w.Put(r.new_set_ranks);
    w.Put(r.removed_set);
  }
  return w.Take();
}

RequestList DecodeRequestList(const std::string& bytes) {
  Reader rd(bytes);
  RequestList list;
  list.shutdown = rd.Get<uint8_t>() != 0;
  list.shutdown_reason = rd.GetString();
  list.requests.resize(rd.Get<uint64_t>());
  for (Request& r : list.requests) {
    r.rank = rd.Get<int32_t>();
    r.collective = rd.Get<Collective>();
    r.name = rd.GetString();
    r.dtype = rd.Get<DataType>();
    r.shape = rd.GetInts();
    r.op = rd.Get<ReduceOp>();
    r.root = rd.Get<int32_t>();
    r.prescale = rd.Get<double>();
    r.postscale = rd.Get<double>();
    r.splits = rd.GetInts();
    r.process_set = rd.Get<int32_t>();
    r.group_size = rd.Get<int32_t>();
    r.group = rd.GetString();
    r.new_set_ranks = rd.GetInts();
    r.removed_set = rd.Get<int32_t>();
  }
  return list;
}

std::string Encode(const ResponseList& list) {
  Writer w;
  w.Put<uint64_t>(list.responses.size());
  for (const Response& r : list.responses) {
    w.Put(r.kind);
    w.Put(r.collective);
    w.Put(r.process_set);
    w.Put<uint64_t>(r.names.size());
    for (const std::string& name : r.names) w.Put(name);
    w.Put(r.dtype);
    w.Put(r.op);
    w.Put(r.root);
    w.Put(r.prescale);
    w.Put(r.postscale);
    w.Put<uint64_t>(r.shapes.size());
    for (const Shape& shape : r.shapes) w.Put(shape);
    w.Put(r.error_code);
    w.Put(r.error);
    w.Put(r.error_ranks);
    w.Put(r.first_dims);
    w.Put(r.split_matrix);
    w.Put(r.last_joined_rank);
    w.Put(r.new_set_id);
    w.Put(r.new_set_ranks);
    w.Put(r.removed_set);
    w.Put<uint8_t>(r.cacheable);
  }
  w.Put<uint8_t>(list.retune.has_value());
  if (list.retune) {
    w.Put<uint8_t>(list.retune->final);
    w.Put<uint64_t>(list.retune->settings.size());
    for (const auto& [name, value] : list.retune->settings) {
      w.Put(name);
      w.Put(value);
    }
  }
  return w.Take();
}

ResponseList DecodeResponseList(const std::string& bytes) {
  Reader rd(bytes);
  ResponseList list;
  list.responses.resize(rd.Get<uint64_t>());
  for (Response& r : list.responses) {
    r.kind = rd.Get<Response::Kind>();
    r.collective = rd.Get<Collective>();
    r.process_set = rd.Get<int32_t>();
    r.names.resize(rd.Get<uint64_t>());
    for (std::string& name : r.names) name = rd.GetString();
    r.dtype = rd.Get<DataType>();
    r.op = rd.Get<ReduceOp>();
    r.root = rd.Get<int32_t>();
    r.prescale = rd.Get<double>();
    r.postscale = rd.Get<double>();
    r.shapes.resize(rd.Get<uint64_t>());
    for (Shape& shape : r.shapes) shape = rd.GetInts();
    r.error_code = rd.Get<StatusCode>();
    r.error = rd.GetString();
    r.error_ranks = rd.GetInts();
    r.first_dims = rd.GetInts();
    r.split_matrix = rd.GetInts();
    r.last_joined_rank = rd.Get<int32_t>();
    r.new_set_id = rd.Get<int32_t>();
    r.new_set_ranks = rd.GetInts();
    r.removed_set = rd.Get<int32_t>();
    r.cacheable = rd.Get<uint8_t>() != 0;
  }
  if (rd.Get<uint8_t>() != 0) {
    Retune& retune = list.retune.emplace();
    retune.final = rd.Get<uint8_t>() != 0;
    retune.settings.resize(rd.Get<uint64_t>());
    for (auto& [name, value] : retune.settings) {
      name = rd.GetString();
      value = rd.GetString();
    }
  }
  return list;
}

}  // namespace mpirep
