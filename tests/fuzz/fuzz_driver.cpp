// fuzz_driver.cpp - runs a fuzz target without libFuzzer, so it runs under any compiler
// and in CI: a deterministic mutator (seeded std::mt19937_64, used without std
// distributions so every platform makes the same inputs) over the target's seeds.
//
//   gl_fuzz_driver_gguf [iterations=20000] [rng_seed=1]
//   gl_fuzz_driver_gguf --write-seeds DIR    # the seed corpus, e.g. for libFuzzer
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

#include "fuzz_target.h"

namespace {

constexpr std::array<uint64_t, 12> kInteresting = {0, 1, 2, 4, 5, 9, 13, 31, 32, 63, 64, 0x7fffffff};
constexpr std::array<uint64_t, 5> kInterestingBig = {0xffffffffull, 0x80000000ull, uint64_t{1} << 30, uint64_t{1} << 62,
                                                     ~uint64_t{0}};

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}
  uint64_t below(uint64_t n) { return n ? rng_() % n : 0; }

  void mutate(std::vector<uint8_t>& b, const std::vector<std::vector<uint8_t>>& seeds) {
    const uint64_t n = 1 + below(4);
    for (uint64_t i = 0; i < n; ++i) mutate_once(b, seeds);
  }

 private:
  // Offsets near the start hit the counts, lengths and types most often.
  size_t pick_offset(const std::vector<uint8_t>& b) {
    const size_t n = b.size();
    return below(4) == 0 ? below(std::min<size_t>(n, 64)) : below(n);
  }

  void put_interesting(std::vector<uint8_t>& b) {
    const uint64_t v =
        below(3) == 0 ? kInterestingBig[below(kInterestingBig.size())] : kInteresting[below(kInteresting.size())];
    const size_t width = size_t{1} << below(4);  // 1, 2, 4 or 8 bytes
    if (b.size() < width) return;
    const size_t at = std::min(pick_offset(b), b.size() - width);
    std::memcpy(b.data() + at, &v, width);
  }

  void mutate_once(std::vector<uint8_t>& b, const std::vector<std::vector<uint8_t>>& seeds) {
    switch (below(8)) {
      case 0:
        if (!b.empty()) b[pick_offset(b)] ^= uint8_t(1u << below(8));
        break;
      case 1:
        if (!b.empty()) b[pick_offset(b)] = uint8_t(rng_());
        break;
      case 2:
      case 3: put_interesting(b); break;
      case 4: b.resize(below(b.size() + 1)); break;  // truncate
      case 5: {                                      // delete a range
        const size_t at = below(b.size() + 1), len = below(std::min<size_t>(b.size() - at, 64) + 1);
        b.erase(b.begin() + ptrdiff_t(at), b.begin() + ptrdiff_t(at + len));
        break;
      }
      case 6: {  // duplicate a range
        const size_t at = below(b.size() + 1), len = below(std::min<size_t>(b.size() - at, 64) + 1);
        const std::vector<uint8_t> chunk(b.begin() + ptrdiff_t(at), b.begin() + ptrdiff_t(at + len));
        b.insert(b.begin() + ptrdiff_t(below(b.size() + 1)), chunk.begin(), chunk.end());
        break;
      }
      case 7: {  // splice: a prefix of this input, then the tail of another seed
        const std::vector<uint8_t>& o = seeds[below(seeds.size())];
        b.resize(below(b.size() + 1));
        b.insert(b.end(), o.begin() + ptrdiff_t(below(o.size() + 1)), o.end());
        break;
      }
    }
  }

  std::mt19937_64 rng_;
};

int write_seeds(const std::string& dir, const std::vector<std::vector<uint8_t>>& seeds) {
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream out(dir + "/seed-" + std::to_string(i), std::ios::binary);
    out.write(reinterpret_cast<const char*>(seeds[i].data()), std::streamsize(seeds[i].size()));
    if (!out) {
      std::fprintf(stderr, "cannot write seeds to %s\n", dir.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::vector<uint8_t>> seeds = gl_fuzz_seeds();
  if (argc == 3 && std::string(argv[1]) == "--write-seeds") return write_seeds(argv[2], seeds);
  const uint64_t iterations = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20000;
  const uint64_t rng_seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& s : seeds) LLVMFuzzerTestOneInput(s.data(), s.size());
  Mutator m(rng_seed);
  for (uint64_t i = 0; i < iterations; ++i) {
    std::vector<uint8_t> input = seeds[m.below(seeds.size())];
    m.mutate(input, seeds);
    // An exact-size copy, so ASan sees any read past the end.
    std::vector<uint8_t> exact(input.begin(), input.end());
    exact.shrink_to_fit();
    LLVMFuzzerTestOneInput(exact.data(), exact.size());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%llu iterations (rng seed %llu) over %zu seeds in %.2f s\n", static_cast<unsigned long long>(iterations),
              static_cast<unsigned long long>(rng_seed), seeds.size(), s);
  return 0;
}
