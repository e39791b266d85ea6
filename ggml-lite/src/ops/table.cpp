// table.cpp - op metadata generated from ops.def.
#include <array>

#include "ggml-lite/ops.h"

namespace gl {
namespace {

constexpr std::string_view lower_name(std::string_view upper, char* buf) {
  for (size_t i = 0; i < upper.size(); ++i) {
    const char c = upper[i];
    buf[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return {buf, upper.size()};
}

struct Table {
  std::array<OpInfo, kOpCount> info{};
  std::array<std::array<char, 32>, kOpCount> names{};
  Table() {
    size_t i = 0;
#define X(name, min_srcs, max_srcs, params, inplace)                                 \
  info[i] = OpInfo{lower_name(#name, names[i].data()), min_srcs, max_srcs, inplace}; \
  ++i;
#include "ggml-lite/ops.def"
#undef X
  }
};

const Table& table() {
  static const Table t;  // immutable after construction
  return t;
}

}  // namespace

const OpInfo& op_info(Op op) { return table().info[static_cast<size_t>(op)]; }

bool is_view_op(Op op) { return op == Op::VIEW || op == Op::RESHAPE || op == Op::PERMUTE || op == Op::TRANSPOSE; }

}  // namespace gl
