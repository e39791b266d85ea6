// quant_mix.cpp - llama-quantize's per-tensor type choice (see quant_mix.h for the rule).
#include "gguf-tools/quant_mix.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <numeric>

#include <fmt/format.h>

#include "util.h"

namespace gl::tools {
namespace {

// ggml type ids (ggml.h) the policy names.
constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ2_K = 10, kQ3_K = 11,
                   kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kIQ4_NL = 20, kIQ4_XS = 23, kBF16 = 30, kMXFP4 = 39;

// LLAMA_FTYPE_* numbers of the supported file types.
enum Ftype : uint32_t {
  ALL_F32 = 0,
  MOSTLY_F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q8_0 = 7,
  Q5_0 = 8,
  Q5_1 = 9,
  Q2_K = 10,
  Q3_K_S = 11,
  Q3_K_M = 12,
  Q3_K_L = 13,
  Q4_K_S = 14,
  Q4_K_M = 15,
  Q5_K_S = 16,
  Q5_K_M = 17,
  Q6_K = 18,
  IQ4_NL = 25,
  IQ4_XS = 30,
  MOSTLY_BF16 = 32,
  MXFP4_MOE = 38,
};

constexpr std::array<MixFileType, 20> kFileTypes{{
    {"f32", ALL_F32, kF32},       {"f16", MOSTLY_F16, kF16},
    {"q4_0", Q4_0, kQ4_0},        {"q4_1", Q4_1, kQ4_1},
    {"q8_0", Q8_0, kQ8_0},        {"q5_0", Q5_0, kQ5_0},
    {"q5_1", Q5_1, kQ5_1},        {"q2_k", Q2_K, kQ2_K},
    {"q3_k_s", Q3_K_S, kQ3_K},    {"q3_k_m", Q3_K_M, kQ3_K},
    {"q3_k_l", Q3_K_L, kQ3_K},    {"q4_k_s", Q4_K_S, kQ4_K},
    {"q4_k_m", Q4_K_M, kQ4_K},    {"q5_k_s", Q5_K_S, kQ5_K},
    {"q5_k_m", Q5_K_M, kQ5_K},    {"q6_k", Q6_K, kQ6_K},
    {"iq4_nl", IQ4_NL, kIQ4_NL},  {"iq4_xs", IQ4_XS, kIQ4_XS},
    {"bf16", MOSTLY_BF16, kBF16}, {"mxfp4_moe", MXFP4_MOE, kMXFP4},
}};

enum class Cat {
  TOKEN_EMBD,
  ATTN_Q,
  ATTN_K,
  ATTN_V,
  ATTN_QKV,
  ATTN_KV_B,
  ATTN_OUTPUT,
  FFN_UP,
  FFN_GATE,
  FFN_DOWN,
  OUTPUT,
  OTHER
};

bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// Broad roles by name substring, first match wins (so "attn_qkv" is never "attn_q").
Cat category(std::string_view name) {
  if (name == "output.weight") return Cat::OUTPUT;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Cat::TOKEN_EMBD;
  static constexpr std::pair<std::string_view, Cat> kByPart[] = {{"attn_qkv.weight", Cat::ATTN_QKV},
                                                                 {"attn_kv_b.weight", Cat::ATTN_KV_B},
                                                                 {"attn_v.weight", Cat::ATTN_V},
                                                                 {"attn_k.weight", Cat::ATTN_K},
                                                                 {"attn_q.weight", Cat::ATTN_Q},
                                                                 {"attn_output.weight", Cat::ATTN_OUTPUT},
                                                                 {"ffn_up", Cat::FFN_UP},
                                                                 {"ffn_gate", Cat::FFN_GATE},
                                                                 {"ffn_down", Cat::FFN_DOWN}};
  for (const auto& [part, cat] : kByPart)
    if (has(name, part)) return cat;
  return Cat::OTHER;
}

// attn_v-like tensors hold the values every head reads: the most quantization-sensitive.
bool is_attn_v(Cat c) { return c == Cat::ATTN_V || c == Cat::ATTN_QKV || c == Cat::ATTN_KV_B; }

// ggml_n_dims: trailing dimensions of 1 do not count.
int n_dims(const GgufTensorInfo& t) {
  int n = 1;
  for (int i = 1; i < 4; ++i)
    if (t.ne[static_cast<size_t>(i)] > 1) n = i + 1;
  return n;
}

// Small or structural tensors llama-quantize never quantizes, matched by name substring.
constexpr std::string_view kNeverQuantized[] = {"_norm.weight",
                                                "ffn_gate_inp.weight",
                                                "ffn_gate_tid2eid.weight",
                                                "altup",
                                                "laurel",
                                                "per_layer_model_proj",
                                                "ssm_conv1d",
                                                "shortconv.conv.weight",
                                                "indexer.k_proj.weight",
                                                "indexer.q_proj.weight",
                                                "time_mix_first.weight",
                                                "time_mix_w0.weight",
                                                "time_mix_w1.weight",
                                                "time_mix_w2.weight",
                                                "time_mix_v0.weight",
                                                "time_mix_v1.weight",
                                                "time_mix_v2.weight",
                                                "time_mix_a0.weight",
                                                "time_mix_a1.weight",
                                                "time_mix_a2.weight",
                                                "time_mix_g1.weight",
                                                "time_mix_g2.weight",
                                                "time_mix_decay_w1.weight",
                                                "time_mix_decay_w2.weight",
                                                "time_mix_lerp_fused.weight",
                                                "attn_rel_b.weight",
                                                ".position_embd",
                                                "sam.pos_embd",
                                                "sam.neck.",
                                                "sam.net_",
                                                ".rel_pos",
                                                ".patch_embd",
                                                ".patch_merger",
                                                "a.rvq.codebook",
                                                "mm.a.code_embd"};

bool may_quantize(const GgufTensorInfo& t) {
  if (n_dims(t) < 2 || !ends_with(t.name, "weight")) return false;
  if (t.name == "position_embd.weight" || t.name == "token_types.weight") return false;
  return std::none_of(std::begin(kNeverQuantized), std::end(kNeverQuantized),
                      [&](std::string_view part) { return has(t.name, part); });
}

int64_t block_size(uint32_t ggml_type) {
  const GgmlTypeInfo* info = ggml_type_info(ggml_type);
  return info ? info->block_size : 1;
}

bool is_float(uint32_t ggml_type) { return ggml_type == kF32 || ggml_type == kF16 || ggml_type == kBF16; }

// "blk.N." -> N, or -1 (llama.cpp's tensor order and MoE layer lookup both parse this prefix).
int layer_of(std::string_view name) {
  int il = -1;
  const std::string s(name);
  if (std::sscanf(s.c_str(), "blk.%d.", &il) != 1) return -1;
  return il;
}

// The first and last eighth of the layers, and every third layer between them.
bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// Counters llama-quantize keeps while it walks the tensors in its order.
struct MixState {
  const MixFileType& ft;
  const MixModel& m;
  bool falcon = false;
  bool tied_embeddings = true;  // no output.weight: token_embd doubles as the output matrix
  int64_t n_attn_v = 0, i_attn_v = 0, i_ffn_down = 0;
};

uint32_t output_type(const MixState& s, const GgufTensorInfo& t) {
  if (s.ft.llama_ftype == MXFP4_MOE) return kQ8_0;
  if (s.falcon || t.ne[0] % block_size(s.ft.default_type) != 0) return kQ8_0;
  return s.ft.default_type == kQ8_0 ? kQ8_0 : kQ6_K;
}

uint32_t attn_v_type(MixState& s, uint32_t type) {
  const uint32_t f = s.ft.llama_ftype;
  const int64_t gqa = s.m.n_gqa;
  if (f == Q2_K)
    type = gqa >= 4 ? kQ4_K : kQ3_K;
  else if (f == Q3_K_M)
    type = s.i_attn_v < 2 ? kQ5_K : kQ4_K;
  else if (f == Q3_K_L)
    type = kQ5_K;
  else if ((f == IQ4_NL || f == IQ4_XS) && gqa >= 4)
    type = kQ5_K;
  else if ((f == Q4_K_M || f == Q5_K_M) && use_more_bits(s.i_attn_v, s.n_attn_v))
    type = kQ6_K;
  else if (f == Q4_K_S && s.i_attn_v < 4)
    type = kQ5_K;
  // (llama.cpp also raises q3_K/q4_K to q5_K for its 70B llama-family models, never qwen35.)
  if (s.m.n_expert == 8) type = kQ8_0;
  ++s.i_attn_v;
  return type;
}

Result<uint32_t> ffn_down_type(MixState& s, const GgufTensorInfo& t, uint32_t type) {
  const uint32_t f = s.ft.llama_ftype;
  int64_t il = s.i_ffn_down, n = s.m.n_layer;
  // Expert tensors are not one per layer in every model, so MoE models go by the name.
  if (s.m.n_expert > 1) {
    il = layer_of(t.name);
    if (il < 0) return Error(fmt::format("tensor '{}': cannot find its layer (blk.N.)", t.name));
    if (il >= n) return Error(fmt::format("tensor '{}': layer {} is not in [0, {})", t.name, il, n));
  }
  ++s.i_ffn_down;
  if (f == Q2_K) return kQ3_K;
  if (f == Q3_K_M) return il < n / 16 ? kQ5_K : !s.falcon || use_more_bits(il, n) ? kQ4_K : kQ3_K;
  if (f == Q3_K_L) return s.falcon ? kQ4_K : kQ5_K;
  if (f == Q4_K_M) {
    if (s.falcon) return il < n / 16 ? kQ6_K : use_more_bits(il, n) ? kQ5_K : kQ4_K;
    return use_more_bits(il, n) ? kQ6_K : type;
  }
  if (il < n / 8 && (f == IQ4_NL || f == IQ4_XS)) return kQ5_K;  // without an imatrix
  if (f == Q5_K_M && use_more_bits(il, n)) return kQ6_K;
  if (f == Q4_K_S && !s.falcon && il < n / 8) return kQ5_K;
  return type;
}

uint32_t attn_output_type(const MixState& s, uint32_t type) {
  const uint32_t f = s.ft.llama_ftype;
  if (s.falcon) return f == Q3_K_L ? kQ4_K : type;
  if (s.m.n_expert == 8) {
    const bool bump =
        f == Q2_K || f == Q3_K_S || f == Q3_K_M || f == IQ4_NL || f == Q4_K_S || f == Q4_K_M || f == IQ4_XS;
    return bump ? kQ5_K : type;
  }
  if (f == Q2_K) return kQ3_K;
  if (f == Q3_K_M) return kQ4_K;
  if (f == Q3_K_L) return kQ5_K;
  return type;
}

// The mix's choice before the row-length fallback.
Result<uint32_t> mixed_type(MixState& s, const GgufTensorInfo& t) {
  const Cat c = category(t.name);
  const uint32_t type = s.ft.default_type;
  if (c == Cat::OUTPUT || (s.tied_embeddings && c == Cat::TOKEN_EMBD)) return output_type(s, t);
  if (s.ft.llama_ftype == MXFP4_MOE) return t.ne[2] > 1 ? kMXFP4 : kQ8_0;
  if (is_attn_v(c)) return attn_v_type(s, type);
  if (c == Cat::ATTN_K) return s.m.n_expert == 8 ? kQ8_0 : type;
  if (c == Cat::FFN_DOWN) return ffn_down_type(s, t, type);
  if (c == Cat::ATTN_OUTPUT) return attn_output_type(s, type);
  return type;
}

// A type whose block does not divide the row gets a smaller-block type of similar size.
Result<uint32_t> fallback(const GgufTensorInfo& t, uint32_t type) {
  const int64_t ncols = t.ne[0];
  if (ncols % block_size(type) == 0) return type;
  uint32_t to = 0;
  switch (type) {
    case kIQ4_XS: to = kIQ4_NL; break;
    case kQ2_K:
    case kQ3_K: to = kQ4_0; break;
    case kQ4_K: to = kQ5_0; break;
    case kQ5_K: to = kQ5_1; break;
    case kQ6_K: to = kQ8_0; break;
    default:
      return Error(
          fmt::format("tensor '{}': row length {} is not a multiple of {}'s block {}, and {} has no "
                      "fallback type",
                      t.name, ncols, ggml_type_name(type), block_size(type), ggml_type_name(type)));
  }
  return ncols % block_size(to) == 0 ? to : kF16;
}

Result<int64_t> first_int(const GgufFile& f, const std::string& key, int64_t fallback_value) {
  const GgufValue* v = f.find(key);
  if (!v) return fallback_value;
  if (const auto* a = std::get_if<GgufArray>(v)) {
    if (a->size() == 0) return fallback_value;
    if (a->type() == GgufType::UINT32) return int64_t{a->values<uint32_t>()[0]};
    if (a->type() == GgufType::INT32) return int64_t{a->values<int32_t>()[0]};
    return Error(
        fmt::format("{}: key '{}' is an array of {}, expected integers", f.name(), key, gguf_type_name(a->type())));
  }
  return f.get_int(key);
}

}  // namespace

std::span<const MixFileType> mix_file_types() { return kFileTypes; }

const MixFileType* mix_file_type_by_name(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const MixFileType& ft : kFileTypes)
    if (ft.name == lower) return &ft;
  return nullptr;
}

std::string mix_file_type_names() {
  std::string out;
  for (const MixFileType& ft : kFileTypes) out += (out.empty() ? "" : ", ") + std::string(ft.name);
  return out;
}

Result<MixModel> mix_model_from_gguf(const GgufFile& f) {
  MixModel m;
  Result<std::string> arch = f.get<std::string>("general.architecture");
  if (!arch) return Error(arch.error());
  m.arch = *arch;
  Result<int64_t> n_layer = f.get_int(m.arch + ".block_count");
  if (!n_layer) return Error(n_layer.error());
  m.n_layer = *n_layer;
  Result<int64_t> n_expert = first_int(f, m.arch + ".expert_count", 0);
  Result<int64_t> n_head = first_int(f, m.arch + ".attention.head_count", 0);
  if (!n_expert) return Error(n_expert.error());
  if (!n_head) return Error(n_head.error());
  Result<int64_t> n_head_kv = first_int(f, m.arch + ".attention.head_count_kv", *n_head);
  if (!n_head_kv) return Error(n_head_kv.error());
  m.n_expert = *n_expert;
  m.n_gqa = *n_head_kv == 0 ? 0 : *n_head / *n_head_kv;
  return m;
}

Result<std::vector<uint32_t>> mix_tensor_types(const MixFileType& ft, const MixModel& m,
                                               std::span<const GgufTensorInfo> tensors) {
  MixState s{.ft = ft, .m = m, .falcon = m.arch == "falcon"};
  for (const GgufTensorInfo& t : tensors) {
    const Cat c = category(t.name);
    if (is_attn_v(c)) ++s.n_attn_v;
    if (c == Cat::OUTPUT) s.tied_embeddings = false;
  }
  // The layer counters advance in llama.cpp's tensor order: by layer (non-layer tensors first), then name.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
    return la != lb ? la < lb : tensors[a].name < tensors[b].name;
  });
  std::vector<uint32_t> types(tensors.size());
  for (size_t i : order) {
    const GgufTensorInfo& t = tensors[i];
    types[i] = t.ggml_type;
    if (!may_quantize(t)) continue;
    if (is_float(ft.default_type)) {
      types[i] = ft.default_type;
      continue;
    }
    Result<uint32_t> mixed = mixed_type(s, t);
    if (!mixed) return Error(mixed.error());
    Result<uint32_t> fitted = fallback(t, *mixed);
    if (!fitted) return Error(fitted.error());
    types[i] = *fitted;
  }
  return types;
}

}  // namespace gl::tools
