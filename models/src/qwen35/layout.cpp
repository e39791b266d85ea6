// layout.cpp - the GGUF tensor names and shapes of a Qwen3.5 model (llama.cpp's LLM_TENSOR names),
// shared by the loader and gguf-convert / gguf-synth.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ggml-lite/models/qwen35_hparams.h"

namespace gl::qwen35 {
namespace {

// The name after "blk.{i}." (or the whole name for the three global tensors).
std::string_view leaf(WeightId id) {
  switch (id) {
    case WeightId::TOKEN_EMBD: return "token_embd.weight";
    case WeightId::OUTPUT_NORM: return "output_norm.weight";
    case WeightId::OUTPUT: return "output.weight";
    case WeightId::ATTN_NORM: return "attn_norm.weight";
    case WeightId::POST_ATTN_NORM: return "post_attention_norm.weight";
    case WeightId::ATTN_Q: return "attn_q.weight";
    case WeightId::ATTN_K: return "attn_k.weight";
    case WeightId::ATTN_V: return "attn_v.weight";
    case WeightId::ATTN_OUTPUT: return "attn_output.weight";
    case WeightId::ATTN_Q_NORM: return "attn_q_norm.weight";
    case WeightId::ATTN_K_NORM: return "attn_k_norm.weight";
    case WeightId::SSM_QKV: return "attn_qkv.weight";
    case WeightId::SSM_GATE: return "attn_gate.weight";
    case WeightId::SSM_CONV1D: return "ssm_conv1d.weight";
    case WeightId::SSM_DT: return "ssm_dt.bias";
    case WeightId::SSM_A: return "ssm_a";
    case WeightId::SSM_BETA: return "ssm_beta.weight";
    case WeightId::SSM_ALPHA: return "ssm_alpha.weight";
    case WeightId::SSM_NORM: return "ssm_norm.weight";
    case WeightId::SSM_OUT: return "ssm_out.weight";
    case WeightId::FFN_GATE: return "ffn_gate.weight";
    case WeightId::FFN_UP: return "ffn_up.weight";
    case WeightId::FFN_DOWN: return "ffn_down.weight";
    case WeightId::FFN_GATE_INP: return "ffn_gate_inp.weight";
    case WeightId::FFN_GATE_EXPS: return "ffn_gate_exps.weight";
    case WeightId::FFN_UP_EXPS: return "ffn_up_exps.weight";
    case WeightId::FFN_DOWN_EXPS: return "ffn_down_exps.weight";
    case WeightId::FFN_GATE_INP_SHEXP: return "ffn_gate_inp_shexp.weight";
    case WeightId::FFN_GATE_SHEXP: return "ffn_gate_shexp.weight";
    case WeightId::FFN_UP_SHEXP: return "ffn_up_shexp.weight";
    case WeightId::FFN_DOWN_SHEXP: return "ffn_down_shexp.weight";
    case WeightId::NEXTN_EH_PROJ: return "nextn.eh_proj.weight";
    case WeightId::NEXTN_ENORM: return "nextn.enorm.weight";
    case WeightId::NEXTN_HNORM: return "nextn.hnorm.weight";
    case WeightId::NEXTN_SHARED_HEAD_NORM: return "nextn.shared_head_norm.weight";
  }
  return "";
}

class LayoutBuilder {
 public:
  LayoutBuilder(const Hparams& hp, std::vector<WeightSpec>& out) : hp_(hp), out_(out) {}

  void add(WeightId id, int b, std::vector<int64_t> ne, bool required = true) {
    out_.push_back({id, b, weight_name(id, b), std::move(ne), required});
  }

  void block(int b) {
    add(WeightId::ATTN_NORM, b, {hp_.n_embd});
    if (hp_.is_recurrent(b))
      gdn(b);
    else
      attention(b);
    add(WeightId::POST_ATTN_NORM, b, {hp_.n_embd});
    if (hp_.is_moe())
      moe(b);
    else
      dense_ffn(b);
  }

  void nextn(int b) {
    const int64_t e = hp_.n_embd;
    add(WeightId::NEXTN_EH_PROJ, b, {2 * e, e});
    add(WeightId::NEXTN_ENORM, b, {e});
    add(WeightId::NEXTN_HNORM, b, {e});
    add(WeightId::NEXTN_SHARED_HEAD_NORM, b, {e}, /*required=*/false);
  }

 private:
  void attention(int b) {
    const int64_t e = hp_.n_embd, hd = hp_.head_dim, q = hp_.n_head * hd, kv = hp_.n_head_kv * hd;
    add(WeightId::ATTN_Q, b, {e, 2 * q});  // per head [query | gate], split by the graph
    add(WeightId::ATTN_K, b, {e, kv});
    add(WeightId::ATTN_V, b, {e, kv});
    add(WeightId::ATTN_OUTPUT, b, {q, e});
    add(WeightId::ATTN_Q_NORM, b, {hd});
    add(WeightId::ATTN_K_NORM, b, {hd});
  }

  void gdn(int b) {
    const int64_t e = hp_.n_embd, hv = hp_.n_v_heads, inner = hp_.ssm_inner();
    add(WeightId::SSM_QKV, b, {e, hp_.conv_dim()});
    add(WeightId::SSM_GATE, b, {e, inner});
    add(WeightId::SSM_CONV1D, b, {hp_.conv_kernel, hp_.conv_dim()});
    add(WeightId::SSM_DT, b, {hv});
    add(WeightId::SSM_A, b, {hv});
    add(WeightId::SSM_BETA, b, {e, hv});
    add(WeightId::SSM_ALPHA, b, {e, hv});
    add(WeightId::SSM_NORM, b, {hp_.d_v});
    add(WeightId::SSM_OUT, b, {inner, e});
  }

  void dense_ffn(int b) {
    const int64_t e = hp_.n_embd, f = hp_.n_ff;
    add(WeightId::FFN_GATE, b, {e, f});
    add(WeightId::FFN_UP, b, {e, f});
    add(WeightId::FFN_DOWN, b, {f, e});
  }

  void moe(int b) {
    const int64_t e = hp_.n_embd, n = hp_.n_expert, fe = hp_.n_ff_exp, fs = hp_.n_ff_shexp;
    add(WeightId::FFN_GATE_INP, b, {e, n});
    add(WeightId::FFN_GATE_EXPS, b, {e, fe, n});
    add(WeightId::FFN_UP_EXPS, b, {e, fe, n});
    add(WeightId::FFN_DOWN_EXPS, b, {fe, e, n});
    if (fs <= 0) return;                           // expert_shared_feed_forward_length absent: no shared expert
    add(WeightId::FFN_GATE_INP_SHEXP, b, {e, 1});  // 2-D as llama.cpp's converter writes it; [e] reads the same
    add(WeightId::FFN_GATE_SHEXP, b, {e, fs});
    add(WeightId::FFN_UP_SHEXP, b, {e, fs});
    add(WeightId::FFN_DOWN_SHEXP, b, {fs, e});
  }

  const Hparams& hp_;
  std::vector<WeightSpec>& out_;
};

}  // namespace

std::string weight_name(WeightId id, int block) {
  if (block < 0) return std::string(leaf(id));
  return fmt::format("blk.{}.{}", block, leaf(id));
}

std::vector<WeightSpec> weight_layout(const Hparams& hp) {
  std::vector<WeightSpec> out;
  LayoutBuilder b(hp, out);
  b.add(WeightId::TOKEN_EMBD, -1, {hp.n_embd, hp.n_vocab});
  for (int il = 0; il < hp.n_block(); ++il) {
    b.block(il);
    if (il == hp.n_layer) b.nextn(il);  // one set of nextn tensors, on the first MTP block
  }
  b.add(WeightId::OUTPUT_NORM, -1, {hp.n_embd});
  if (!hp.tied_embeddings) b.add(WeightId::OUTPUT, -1, {hp.n_embd, hp.n_vocab});
  return out;
}

namespace {

// Two significant digits at least: 9.2B, 35B, 0.8B -> "800M".
std::string rounded_count(double n) {
  const auto [scale, suffix] = n > 1e12  ? std::pair{1e-12, 'T'}
                               : n > 1e9 ? std::pair{1e-9, 'B'}
                               : n > 1e6 ? std::pair{1e-6, 'M'}
                                         : std::pair{1e-3, 'K'};
  const double v = n * scale;
  std::string whole = fmt::format("{}", static_cast<int64_t>(std::nearbyint(v)));
  whole.erase(0, whole.find_first_not_of('0'));
  const int decimals = std::max(2 - static_cast<int>(whole.size()), 0);
  return fmt::format("{:.{}f}{}", v, decimals, suffix);
}

struct ParamCounts {
  int64_t total = 0, shared = 0, expert = 0, expert_count = 0;
};

// An expert tensor [.., .., E] counts once per expert toward what one token reaches.
ParamCounts count_params(const Hparams& hp) {
  ParamCounts c;
  int64_t expert_sum = 0, n_expert_tensors = 0;
  for (const WeightSpec& w : weight_layout(hp)) {
    int64_t size = 1;
    for (int64_t n : w.ne) size *= n;
    c.total += size;
    if (w.name.find("_exps.") != std::string::npos && w.ne.size() >= 3) {
      c.expert += size / w.ne[2];
      expert_sum += w.ne[2];
      ++n_expert_tensors;
    } else {
      c.shared += size;
    }
  }
  if (n_expert_tensors > 0) c.expert_count = expert_sum / n_expert_tensors;
  return c;
}

// "9B", "0.8B", "A3B", "8x7B" (suffix K/M/B/T, either case) and its value in parameters (0 for
// an "A" part, whose size is not the model's).
std::optional<std::pair<std::string, double>> size_part(std::string_view p) {
  if (p.size() < 2) return std::nullopt;
  const char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(p.back())));
  const size_t scale = std::string_view(" KMBT").find(suffix);
  if (scale == std::string_view::npos || scale == 0) return std::nullopt;
  std::string_view num = p.substr(0, p.size() - 1);
  const bool active = num.front() == 'A' || num.front() == 'a';
  if (active) num.remove_prefix(1);
  if (const size_t x = num.find('x'); !active && x != std::string_view::npos) {
    if (x == 0 || num.substr(0, x).find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
    num.remove_prefix(x + 1);
  }
  const size_t dot = num.find_first_of("._");
  const std::string_view whole = num.substr(0, dot), frac = dot == std::string_view::npos ? "" : num.substr(dot + 1);
  const auto digits = [](std::string_view d) { return !d.empty() && d.find_first_not_of("0123456789") == d.npos; };
  if (!digits(whole) || (dot != std::string_view::npos && !digits(frac))) return std::nullopt;
  std::string label(p.substr(0, p.size() - 1));
  std::replace(label.begin(), label.end(), '_', '.');
  label += suffix;
  const bool plain = !active && p.find('x') == std::string_view::npos;
  const double value =
      plain ? std::stod(std::string(whole) + "." + std::string(frac) + "0") * std::pow(1000.0, scale) : 0;
  return std::pair{label, value};
}

// The size parts of the name after its first, deduplicated; a part far from the model's size
// (a context length such as "128K") is not one.
std::string label_from_name(std::string_view name, double total) {
  std::vector<std::string> parts;
  for (size_t i = 0, n = 0; i <= name.size(); ++n) {
    const size_t j = std::min(name.find('-', i), name.size());
    const std::string_view p = name.substr(i, j - i);
    i = j + 1;
    if (n == 0 || p.empty()) continue;
    auto sp = size_part(p);
    if (!sp || (sp->second > 0 && std::abs(sp->second - total) > 7.0 * total / 8.0)) continue;
    if (std::find(parts.begin(), parts.end(), sp->first) == parts.end()) parts.push_back(sp->first);
  }
  return fmt::format("{}", fmt::join(parts, "-"));
}

}  // namespace

std::string size_label(const Hparams& hp, std::string_view model_name) {
  const ParamCounts c = count_params(hp);
  if (std::string named = label_from_name(model_name, static_cast<double>(c.total)); !named.empty()) return named;
  if (c.expert_count == 0) return rounded_count(static_cast<double>(c.total));
  return fmt::format("{}x{}", c.expert_count, rounded_count(static_cast<double>(c.shared + c.expert)));
}

}  // namespace gl::qwen35
