// hash.h - FNV-1a hashing of values and op parameters, for plan and launch caches.
//
//   gl::Hasher h;
//   h.value(t.op);
//   gl::hash_params(h, t.params);   // field by field: padding never reaches the hash
//   uint64_t key = h.get();
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ggml-lite/ops.h"

namespace gl {

// FNV-1a, 64 bit: small, deterministic and good enough to key caches.
class Hasher {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= b[i];
      h_ *= 0x100000001b3ull;
    }
  }
  template <class T>
  void value(const T& v) {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>, "hash fields one by one (padding)");
    bytes(&v, sizeof v);
  }
  uint64_t get() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

// The variant's index and every field of the active params struct.
void hash_params(Hasher& h, const OpParams& p);

}  // namespace gl
