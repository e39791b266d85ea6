// report.cpp - the bench's output: a llama-bench-like markdown table (rows printed as they
// finish) or one JSON document, and the atomic JSON file write.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "bench.h"

namespace bench {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string count_text(uint64_t n) {
  const double x = static_cast<double>(n);
  return x >= 1e9 ? fmt::format("{:.2f} B", x / 1e9) : fmt::format("{:.2f} M", x / 1e6);
}

std::string bytes_text(uint64_t n) {
  const double x = static_cast<double>(n);
  return x >= 1e9 ? fmt::format("{:.2f} GB", x / 1e9) : fmt::format("{:.2f} MB", x / 1e6);
}

std::string spec_notes(const SpecResult& s) {
  std::string per;
  for (size_t i = 0; i < s.acceptance_at.size(); ++i)
    per += fmt::format("{}{:.0f}", i ? "/" : "", 100.0 * s.acceptance_at[i]);
  auto cost = [](const std::optional<double>& c) { return c ? fmt::format("{:.2f}x", *c) : std::string("-"); };
  const std::string parity = s.same_tokens ? fmt::format(", same tokens as tg: {}", *s.same_tokens ? "yes" : "NO") : "";
  return fmt::format("{} tg, acc {:.1f}% ({}%), len {:.2f}, draft {}, catch-up {}, verify {}{}", cost(s.speedup),
                     100.0 * s.acceptance, per, s.mean_accepted_len, cost(s.draft_cost), cost(s.catchup_cost),
                     cost(s.verify_cost), parity);
}

nlohmann::ordered_json opt_json(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json row_json(const Row& row) {
  nlohmann::ordered_json j = {{"test", row.test},
                              {"kind", row.kind},
                              {"n_prompt", row.n_prompt},
                              {"n_gen", row.n_gen},
                              {"depth", row.depth},
                              {"tok_s", row.tok_s},
                              {"stddev", row.stddev},
                              {"samples", row.samples},
                              {"floor_pct", opt_json(row.floor_pct)},
                              {"peak_memory_bytes", row.peak_memory}};
  if (row.spec) {
    const SpecResult& s = *row.spec;
    j["spec"] = {{"k", s.k},
                 {"forced", s.forced},
                 {"acceptance", s.acceptance},
                 {"acceptance_at", s.acceptance_at},
                 {"mean_accepted_len", s.mean_accepted_len},
                 {"rounds", s.rounds},
                 {"speedup", opt_json(s.speedup)},
                 {"t_draft_step_s", s.t_draft_step},
                 {"t_verify_step_s", s.t_verify_step},
                 {"t_catchup_step_s", s.t_catchup_step},
                 {"draft_cost", opt_json(s.draft_cost)},
                 {"verify_cost", opt_json(s.verify_cost)},
                 {"catchup_cost", opt_json(s.catchup_cost)},
                 {"same_tokens_as_tg", s.same_tokens ? nlohmann::ordered_json(*s.same_tokens) : nullptr}};
  }
  return j;
}

}  // namespace

void print_markdown_header(const Report& r) {
  const ModelInfo& m = r.model;
  const Params& p = r.params;
  fmt::print("model: {} ({}, {} + {} MTP layers, {} params, {})\n", m.label, m.arch, m.n_layer, m.n_nextn,
             count_text(m.n_params), bytes_text(m.model_bytes));
  fmt::print("backend: {} ({}); {} reps after {} warm-up, ctx {}, tg/spec prompt {} tokens\n", r.backend.name,
             r.backend.device, p.reps, p.warmup, p.n_ctx, p.tg_prompt);
  fmt::print("decode floor: {} of weights per token at {:.1f} GB/s ({}) = {:.1f} tok/s\n\n",
             bytes_text(m.weight_bytes_per_token), r.bandwidth_gbs,
             r.bandwidth_measured ? (r.backend.device_memory ? "measured device copy" : "measured memcpy") : "given",
             r.floor_tok_s);
  fmt::print("| model | type | backend | precision | test | t/s | ± | % floor | notes |\n");
  fmt::print("|---|---|---|---|---|---:|---:|---:|---|\n");
  std::fflush(stdout);
}

void print_markdown_row(const Report& r, const Row& row) {
  const std::string floor = row.floor_pct ? fmt::format("{:.1f}", *row.floor_pct) : "-";
  std::string notes =
      r.params.kv_type == gl::DType::F32 ? "" : fmt::format("{} KV cache", gl::dtype_name(r.params.kv_type));
  if (row.spec && r.params.mtp_p_min > 0.0f && !r.params.force_accept)
    notes += fmt::format("{}adaptive K (p >= {:g})", notes.empty() ? "" : "; ", r.params.mtp_p_min);
  if (row.spec) notes += (notes.empty() ? "" : "; ") + spec_notes(*row.spec);
  fmt::print("| {} | {} | {} | {} | {} | {:.2f} | {:.2f} | {} | {} |\n", r.model.name, r.model.type, r.backend.name,
             gl::precision_name(r.params.precision), row.test, row.tok_s, row.stddev, floor, notes);
  std::fflush(stdout);
}

void print_markdown_footer(const Report& r) {
  fmt::print("\npeak memory: {:.2f} GiB ({})\n", static_cast<double>(r.peak_memory) / kGiB,
             r.backend.device_memory ? "in use on the device, after each row" : "resident set, after each row");
  if (r.cuda_graph_captures >= 0)
    fmt::print("cuda graphs: {} captured, {} replayed\n", r.cuda_graph_captures, r.cuda_graph_replays);
  for (const Row& row : r.rows) {
    if (row.spec && row.spec->forced) {
      fmt::print(
          "(forced): every draft accepted without checking it - the ceiling of the speculative loop; the "
          "output is NOT the model's\n");
      break;
    }
  }
  std::fflush(stdout);
}

std::string to_json(const Report& r) {
  const ModelInfo& m = r.model;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Row& row : r.rows) rows.push_back(row_json(row));
  nlohmann::ordered_json j = {
      {"model",
       {{"label", m.label},
        {"name", m.name},
        {"type", m.type},
        {"arch", m.arch},
        {"n_layer", m.n_layer},
        {"n_nextn", m.n_nextn},
        {"n_params", m.n_params},
        {"model_bytes", m.model_bytes},
        {"weight_bytes_per_token", m.weight_bytes_per_token}}},
      {"backend", {{"name", r.backend.name}, {"device", r.backend.device}, {"threads", r.backend.threads}}},
      {"params",
       {{"reps", r.params.reps},
        {"warmup", r.params.warmup},
        {"n_ctx", r.params.n_ctx},
        {"tg_prompt", r.params.tg_prompt},
        {"depth", r.params.depth},
        {"force_accept", r.params.force_accept},
        {"precision", gl::precision_name(r.params.precision)},
        {"kv_type", gl::dtype_name(r.params.kv_type)},
        {"mtp_p_min", r.params.mtp_p_min}}},
      {"bandwidth_gbs", r.bandwidth_gbs},
      {"bandwidth_source", r.bandwidth_measured ? "measured" : "given"},
      {"floor_tok_s", r.floor_tok_s},
      {"peak_memory_bytes", r.peak_memory},
      {"peak_memory_kind", r.backend.device_memory ? "device" : "rss"},
      {"results", rows}};
  if (r.cuda_graph_captures >= 0)
    j["cuda_graphs"] = {{"captures", r.cuda_graph_captures}, {"replays", r.cuda_graph_replays}};
  return j.dump(2) + "\n";
}

gl::Status write_file_atomic(const std::string& path, const std::string& text) {
  const std::filesystem::path target(path);
  std::string tmp = (target.parent_path().empty() ? std::filesystem::path(".") : target.parent_path()) /
                    (target.filename().string() + ".tmp.XXXXXX");
  const int fd = mkstemp(tmp.data());
  if (fd < 0) return gl::Error(fmt::format("{}: cannot create a temp file: {}", path, std::strerror(errno)));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      std::remove(tmp.c_str());
      return gl::Error(fmt::format("{}: write failed: {}", tmp, why));
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return gl::Error(fmt::format("{}: cannot write: {}", path, why));
  }
  return {};
}

}  // namespace bench
