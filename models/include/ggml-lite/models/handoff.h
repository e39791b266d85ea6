// handoff.h - the device state the trunk and the MTP head share: the executor that runs both
// step graphs and the hidden-row buffer the trunk writes and the MTP head reads.
//
//   gl::qwen35::Handoff io(*model, *cpu, /*max_rows=*/256);     // owns executor + hidden rows
//   gl::qwen35::Runner trunk(*model, io, /*n_ctx=*/1024);        // hidden_all steps write io.hidden()
//   gl::qwen35::MtpCache mc(*model, 1024, *cpu);
//   auto g = gl::qwen35::build_mtp_step(*model, mc, io, {.n_rows = 3, .n_kv = 256});  // reads io.hidden()
//   GL_TRY(io.executor().allocate(g.graph));
//
// Data flows one way: trunk step -> hidden rows -> MTP step, on the device, both run by the one
// executor (so they share its arena and plan cache). Neither graph owns what the other reads.
#pragma once

#include <memory>

#include "ggml-lite/executor.h"
#include "ggml-lite/models/qwen35.h"

namespace gl::qwen35 {

class Handoff {
 public:
  // max_rows > 0: a persistent F32 [n_embd, max_rows] hidden-row buffer on backend; 0: none
  // (a trunk without an MTP head).
  Handoff(const Model& m, Backend& backend, int max_rows = 0);
  Handoff(const Handoff&) = delete;
  Handoff& operator=(const Handoff&) = delete;

  Backend& backend() { return backend_; }
  Executor& executor() { return ex_; }
  // Pre-norm trunk rows of the last trunk step run with hidden_all (row i = token i of the
  // step); null when max_rows is 0.
  Tensor* hidden() const { return hidden_; }
  int max_rows() const { return max_rows_; }
  const Status& status() const { return status_; }  // out of memory when allocating

 private:
  Backend& backend_;
  Executor ex_;
  Context ctx_;
  std::unique_ptr<Buffer> buf_;
  Tensor* hidden_ = nullptr;
  int max_rows_ = 0;
  Status status_;
};

}  // namespace gl::qwen35
