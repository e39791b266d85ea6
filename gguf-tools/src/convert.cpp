// convert.cpp - the conversion pipeline: config -> dims -> keys + tokenizer -> tensor plan -> write.
#include "gguf-tools/convert.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "convert_sources.h"
#include "gguf-tools/hf_config.h"
#include "gguf-tools/model_spec.h"
#include "gguf-tools/safetensors.h"
#include "gguf-tools/tokenizer_meta.h"
#include "util.h"

namespace gl::tools {
namespace {

// llama.cpp's "auto": the dtype of the first 2-D tensor if it is BF16 or F16, else F16.
DType auto_outtype(const SafetensorsModel& m) {
  for (const SafetensorsTensor& t : m.tensors()) {
    if (t.shape.size() < 2) continue;
    Result<DType> dt = t.dtype();
    if (dt && (*dt == DType::BF16 || *dt == DType::F16)) return *dt;
    return DType::F16;
  }
  return DType::F16;
}

Status check_outtype(DType t) {
  if (t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::Q8_0) return {};
  return Error(fmt::format("unsupported output type {} (use f32, f16, bf16 or q8_0)", dtype_name(t)));
}

Status check_model_dir(const std::string& dir) {
  if (dir.empty()) return Error("no model directory given");
  if (!is_directory(dir)) {
    if (is_file(dir)) return Error(fmt::format("{}: is a file; expected a model directory", dir));
    return Error(fmt::format("{}: no such directory", dir));
  }
  if (!is_file(dir + "/config.json")) return Error(fmt::format("{}: no config.json in the model directory", dir));
  return {};
}

// Every spec bound to its source; fails on a missing/odd tensor or a checkpoint tensor no spec uses.
Result<std::vector<OutTensor>> plan_tensors(const Hparams& d, const SafetensorsModel& model, DType outtype) {
  Result<SourceSet> src = SourceSet::open(model);
  if (!src) return Error(src.error());
  src->ignore_prefix("model.visual.");
  src->ignore_prefix("visual.");
  if (d.n_nextn == 0) {  // --no-mtp, or a config without MTP layers
    src->ignore_prefix("mtp.");
    src->ignore_prefix("model.mtp.");
  }
  if (d.tied_embeddings) src->ignore("lm_head.weight");
  std::vector<OutTensor> out;
  for (const TensorSpec& s : tensor_specs(d)) {
    Result<OutTensor> t = bind_source(s, d, output_type(s, outtype), *src);
    if (!t) return Error(t.error());
    out.push_back(std::move(t).value());
  }
  std::vector<std::string> unused = src->unused();
  if (!unused.empty()) {
    const size_t shown = std::min<size_t>(unused.size(), 5);
    return Error(fmt::format("{} checkpoint tensor(s) have no GGUF mapping, e.g. '{}'", unused.size(),
                             fmt::join(unused.begin(), unused.begin() + static_cast<std::ptrdiff_t>(shown), "', '")));
  }
  return out;
}

Result<ConvertReport> convert_impl(const ConvertOptions& opt) {
  GLT_TRY(check_model_dir(opt.model_dir));
  Result<HfConfig> cfg = load_hf_config(opt.model_dir);
  if (!cfg) return Error(cfg.error());
  Result<Hparams> dims = hparams_from_hf(*cfg);
  if (!dims) return Error(fmt::format("{}/config.json: {}", opt.model_dir, dims.error()));
  if (!opt.include_mtp) dims->n_nextn = 0;
  Result<SafetensorsModel> model = SafetensorsModel::open(opt.model_dir);
  if (!model) return Error(model.error());

  ConvertReport rep;
  rep.arch = dims->arch_name();
  rep.outtype = opt.outtype ? *opt.outtype : auto_outtype(*model);
  GLT_TRY(check_outtype(rep.outtype));
  Result<TokenizerMeta> tok = load_hf_tokenizer(opt.model_dir, *cfg, opt.tokenizer_pre, &rep.warnings);
  if (!tok) return Error(tok.error());

  GgufFile meta;
  write_model_keys(meta, *dims, opt.name.empty() ? base_name(opt.model_dir) : opt.name, rep.outtype);
  write_tokenizer_keys(meta, *tok);
  Result<std::vector<OutTensor>> ts = plan_tensors(*dims, *model, rep.outtype);
  if (!ts) return Error(fmt::format("{}: {}", opt.model_dir, ts.error()));
  Result<GgufFile> layout = streamed_layout(meta, *ts);
  if (!layout) return Error(layout.error());
  rep.layout = std::move(layout).value();
  if (opt.dry_run) return rep;
  if (opt.output.empty()) return Error("no output file given");
  Result<WriteStats> st = write_streamed(opt.output, meta, *ts, {.progress = opt.progress, .label = "convert"});
  if (!st) return Error(st.error());
  rep.stats = *st;
  return rep;
}

}  // namespace

Result<ConvertReport> convert_checkpoint(const ConvertOptions& opt) { return convert_impl(opt); }

}  // namespace gl::tools
