// fuzz_target.h - what each fuzz target source provides.
//
// A target defines LLVMFuzzerTestOneInput (libFuzzer's entry point; the plain driver
// calls it too) and gl_fuzz_seeds(), a small corpus of valid inputs built in code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

std::vector<std::vector<uint8_t>> gl_fuzz_seeds();
