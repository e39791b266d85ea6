// report.h - the generation loop of the qwen35 example: streaming output and the final report.
#pragma once

#include <string>

#include "ggml-lite/models/session.h"
#include "ggml-lite/models/tokenizer.h"

// Prefills the prompt, streams n tokens (stopping at end-of-text unless ignore_eos), then prints
// speed and MTP telemetry to stderr. Returns the process exit code.
int generate(gl::qwen35::Session& s, const gl::Tokenizer& tok, const std::string& prompt, int n, bool ignore_eos,
             int mtp_k);
