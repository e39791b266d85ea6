// convert_sources.h - binds each GGUF tensor spec to the safetensors rows it is made of,
// applying llama.cpp's transforms on the fly (internal to gguf-tools).
#pragma once

#include <set>
#include <string>

#include "gguf-tools/model_spec.h"
#include "gguf-tools/safetensors.h"
#include "gguf-tools/stream_writer.h"

namespace gl::tools {

// The checkpoint plus the names already consumed.
class SourceSet {
 public:
  // Detects the text prefix: "model.language_model." (vision-language) or "model.".
  static Result<SourceSet> open(const SafetensorsModel& model);

  // A trunk (relative to the text prefix) or top-level tensor; nullptr if absent.
  const SafetensorsTensor* find(const std::string& hf, bool top_level) const;
  std::string full_name(const std::string& hf, bool top_level) const;
  void mark_used(const std::string& full) { used_.insert(full); }
  // Checkpoint tensors no spec used, skipping the vision tower and the names in ignore().
  std::vector<std::string> unused() const;
  void ignore(const std::string& full) { ignored_.insert(full); }
  void ignore_prefix(const std::string& p) { ignored_prefixes_.insert(p); }
  const std::string& text_prefix() const { return prefix_; }
  const SafetensorsModel& model() const { return *model_; }

 private:
  const SafetensorsModel* model_ = nullptr;
  std::string prefix_;
  std::set<std::string> used_, ignored_, ignored_prefixes_;
};

// The producer for one spec: validates the source shapes and dtypes and returns a filler
// that reads (and transforms) rows straight from the mapped files.
Result<OutTensor> bind_source(const TensorSpec& s, const Hparams& d, DType type, SourceSet& src);

}  // namespace gl::tools
