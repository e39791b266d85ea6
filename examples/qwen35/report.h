// report.h - the generation loop of the qwen35 example: streaming output and the final report.
#pragma once

#include <string>

#include "ggml-lite/models/session.h"
#include "ggml-lite/models/tokenizer.h"

// Prefills the prompt, streams n tokens (stopping at end-of-text unless ignore_eos), then prints
// speed and MTP telemetry to stderr. Returns the process exit code.
// Runs the prompt with MTP K = 0..max_k (greedy, `reps` runs each, median speed) and prints a
// markdown table of decode tok/s, speedup, acceptance per draft position and mean accepted length.
// Checks that every K emits the same tokens as K = 0. Returns the process exit code.
int bench_mtp(const gl::qwen35::Model& m, gl::Backend& be, const gl::qwen35::RunConfig& base,
              const std::vector<int32_t>& prompt, int n, int max_k, int reps);

int generate(gl::qwen35::Session& s, const gl::Tokenizer& tok, const std::string& prompt, int n, bool ignore_eos,
             int mtp_k);
