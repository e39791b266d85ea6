// gguf_write.cpp - GGUF v3 serialisation: metadata encoding and the streaming writer.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "gguf_internal.h"

namespace gl {
namespace {

constexpr std::array<uint8_t, 4096> kZeros{};

// resize + memcpy rather than insert: GCC 12 reports false -Warray-bounds on small inserts.
void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  const size_t at = out.size();
  out.resize(at + n);
  if (n) std::memcpy(out.data() + at, p, n);
}

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  put_bytes(out, &v, sizeof(T));
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  put_bytes(out, s.data(), s.size());
}

void put_array(std::vector<uint8_t>& out, const GgufArray& a) {
  put<int32_t>(out, static_cast<int32_t>(a.type()));
  put<uint64_t>(out, a.size());
  if (a.type() == GgufType::STRING) {
    for (const std::string& s : a.strings()) put_string(out, s);
  } else {
    put_bytes(out, a.raw().data(), a.raw().size());
  }
}

void put_value(std::vector<uint8_t>& out, const GgufValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          put_string(out, x);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          put_array(out, x);
        } else if constexpr (std::is_same_v<T, bool>) {
          put<uint8_t>(out, x ? 1 : 0);
        } else {
          put<T>(out, x);
        }
      },
      v);
}

// Limits the reader enforces, so that everything written can be read back.
std::string kv_problem(const GgufKV& kv) {
  if (kv.key.empty()) return "empty key";
  if (kv.key.size() > kGgufMaxStringLength) return "key longer than 1 GiB";
  if (const auto* s = std::get_if<std::string>(&kv.value); s && s->size() > kGgufMaxStringLength)
    return fmt::format("key '{}': string longer than 1 GiB", kv.key);
  if (const auto* a = std::get_if<GgufArray>(&kv.value)) {
    if (a->size() > kGgufMaxArrayElements) return fmt::format("key '{}': more than 2^30 elements", kv.key);
    for (const std::string& s : a->strings())
      if (s.size() > kGgufMaxStringLength) return fmt::format("key '{}': string longer than 1 GiB", kv.key);
  }
  return {};
}

void put_tensor_info(std::vector<uint8_t>& out, const GgufTensorInfo& t, uint64_t offset) {
  put_string(out, t.name);
  put<uint32_t>(out, t.n_dims);
  for (uint32_t d = 0; d < t.n_dims; ++d) put<int64_t>(out, t.ne[d]);
  put<int32_t>(out, static_cast<int32_t>(t.ggml_type));
  put<uint64_t>(out, offset);
}

}  // namespace

// Unpadded: the caller pads to the alignment (which may be large) without buffering zeros.
Result<std::vector<uint8_t>> encode_gguf_meta(const GgufFile& f) {
  std::string problem = alignment_problem(f.find("general.alignment"));
  if (!problem.empty()) return Error(fmt::format("{}: {}", f.name(), problem));
  const uint64_t align = f.alignment();
  std::vector<uint8_t> out;
  put_bytes(out, kGgufMagic, sizeof(kGgufMagic));
  put<uint32_t>(out, kGgufVersion);
  put<uint64_t>(out, f.tensors().size());
  put<uint64_t>(out, f.kvs().size());
  for (const GgufKV& kv : f.kvs()) {
    problem = kv_problem(kv);
    if (!problem.empty()) return Error(fmt::format("{}: {}", f.name(), problem));
    put_string(out, kv.key);
    put<int32_t>(out, static_cast<int32_t>(gguf_type_of(kv.value)));
    put_value(out, kv.value);
  }
  uint64_t offset = 0;
  for (const GgufTensorInfo& t : f.tensors()) {
    put_tensor_info(out, t, offset);
    if (!pad_to(offset + t.nbytes, align, offset))
      return Error(fmt::format("{}: tensor '{}': offset overflows", f.name(), t.name));
  }
  return out;
}

Result<uint64_t> GgufFile::meta_size() const {
  Result<std::vector<uint8_t>> meta = encode_gguf_meta(*this);
  if (!meta) return Error(meta.error());
  uint64_t size = 0;
  if (!pad_to(meta->size(), alignment(), size)) return Error(fmt::format("{}: size overflows", name_));
  return size;
}

Result<uint64_t> GgufFile::file_size() const {
  Result<uint64_t> size = meta_size();
  if (!size) return size;
  uint64_t total = *size;
  for (const GgufTensorInfo& t : tensors_) {
    uint64_t padded = 0;
    if (!pad_to(t.nbytes, alignment(), padded) || total > UINT64_MAX - padded)
      return Error(fmt::format("{}: size overflows", name_));
    total += padded;
  }
  return total;
}

Result<std::vector<uint8_t>> GgufFile::to_bytes() const {
  for (const GgufTensorInfo& t : tensors_)
    if (!t.data && t.nbytes) return Error(fmt::format("{}: tensor '{}' has no data", name_, t.name));
  Result<uint64_t> total = file_size();
  if (!total) return Error(total.error());
  Result<std::vector<uint8_t>> meta = encode_gguf_meta(*this);
  if (!meta) return meta;
  const uint64_t align = alignment();
  std::vector<uint8_t> out = std::move(meta).value();
  out.reserve(static_cast<size_t>(*total));
  auto pad = [&] { out.resize(out.size() + static_cast<size_t>((align - out.size() % align) % align), 0); };
  pad();
  for (const GgufTensorInfo& t : tensors_) {
    put_bytes(out, t.data, static_cast<size_t>(t.nbytes));
    pad();
  }
  return out;
}

Status GgufFile::write(const std::string& path) const {
  for (const GgufTensorInfo& t : tensors_)
    if (!t.data && t.nbytes) return Error(fmt::format("{}: tensor '{}' has no data", path, t.name));
  GgufWriter w(path);
  GL_TRY(w.begin(*this));
  for (size_t i = 0; i < tensors_.size(); ++i) GL_TRY(w.write_tensor_data(i, tensors_[i].bytes()));
  return w.finish();
}

// ---------------------------------------------------------------- GgufWriter

GgufWriter::GgufWriter(std::string path) : path_(std::move(path)) {}

GgufWriter::~GgufWriter() {
  if (!done_) discard();
}

void GgufWriter::discard() {
  if (fd_ >= 0) ::close(fd_);
  if (fd_ >= 0 || begun_) ::unlink(tmp_path_.c_str());
  fd_ = -1;
  begun_ = false;
}

Status GgufWriter::fail(std::string message) {
  discard();
  return Error(fmt::format("{}: {}", path_, message));
}

Status GgufWriter::write_all(const void* p, size_t n) {
  const auto* bytes = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd_, bytes, std::min<size_t>(n, size_t{1} << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return fail(fmt::format("write to {} failed: {}", tmp_path_, std::strerror(errno)));
    bytes += w;
    n -= static_cast<size_t>(w);
  }
  return {};
}

Status GgufWriter::begin(const GgufFile& meta) {
  if (begun_ || done_) return Error(fmt::format("{}: begin() called twice", path_));
  Result<std::vector<uint8_t>> header = encode_gguf_meta(meta);
  if (!header) return Error(fmt::format("{}: {}", path_, header.error()));
  alignment_ = meta.alignment();
  for (const GgufTensorInfo& t : meta.tensors()) {
    names_.push_back(t.name);
    sizes_.push_back(t.nbytes);
  }
  std::string tmpl = path_ + ".tmp.XXXXXX";
  fd_ = ::mkstemp(tmpl.data());
  if (fd_ < 0) return Error(fmt::format("{}: cannot create {}: {}", path_, tmpl, std::strerror(errno)));
  tmp_path_ = tmpl;
  begun_ = true;
  if (::fchmod(fd_, 0644) != 0) return fail(fmt::format("fchmod failed: {}", std::strerror(errno)));
  GL_TRY(write_all(header->data(), header->size()));
  GL_TRY(write_padding(header->size()));
  return advance_complete();
}

// Writes the zeros that take a section of n bytes to the next multiple of the alignment.
Status GgufWriter::write_padding(uint64_t n) {
  uint64_t pad = (alignment_ - n % alignment_) % alignment_;
  while (pad > 0) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(pad, kZeros.size()));
    GL_TRY(write_all(kZeros.data(), chunk));
    pad -= chunk;
  }
  return {};
}

// Skips past every finished tensor (including empty ones), writing its padding.
Status GgufWriter::advance_complete() {
  while (cur_ < sizes_.size() && cur_written_ == sizes_[cur_]) {
    GL_TRY(write_padding(sizes_[cur_]));
    ++cur_;
    cur_written_ = 0;
  }
  return {};
}

Status GgufWriter::write_tensor_data(size_t index, std::span<const uint8_t> bytes) {
  if (done_ || !begun_)
    return Error(fmt::format("{}: writer not open (no begin(), already finished, or an earlier error)", path_));
  if (index >= sizes_.size())
    return fail(fmt::format("tensor index {} out of range ({} tensors)", index, sizes_.size()));
  if (index < cur_) {
    if (bytes.empty()) return {};
    return fail(fmt::format("tensor '{}' is already complete", names_[index]));
  }
  if (index > cur_)
    return fail(fmt::format("tensor '{}' written before tensor '{}' is complete ({} of {} bytes)", names_[index],
                            names_[cur_], cur_written_, sizes_[cur_]));
  if (bytes.size() > sizes_[cur_] - cur_written_)
    return fail(fmt::format("tensor '{}': {} more bytes exceed its size {} ({} written)", names_[cur_], bytes.size(),
                            sizes_[cur_], cur_written_));
  GL_TRY(write_all(bytes.data(), bytes.size()));
  cur_written_ += bytes.size();
  return advance_complete();
}

Status GgufWriter::finish() {
  if (done_ || !begun_)
    return Error(fmt::format("{}: writer not open (no begin(), already finished, or an earlier error)", path_));
  if (cur_ != sizes_.size())
    return fail(
        fmt::format("tensor '{}' is incomplete ({} of {} bytes written)", names_[cur_], cur_written_, sizes_[cur_]));
  if (::fsync(fd_) != 0) return fail(fmt::format("fsync failed: {}", std::strerror(errno)));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return fail(fmt::format("close failed: {}", std::strerror(errno)));
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0)
    return fail(fmt::format("rename from {} failed: {}", tmp_path_, std::strerror(errno)));
  done_ = true;
  // Make the rename durable too; a failure here leaves a complete file, so it is not reported.
  const size_t slash = path_.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path_.substr(0, slash + 1);
  if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

}  // namespace gl
