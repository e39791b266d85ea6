// team.cpp - persistent workers: spin on the job word, then sleep; chunks claimed by compare-and-swap.
#include "team.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "ggml-lite/status.h"

namespace gl::cpu {
namespace {

thread_local Team* t_current = nullptr;

// About a millisecond of polling before a worker sleeps: decode steps come back to back, so
// the next job usually arrives within microseconds; an idle backend costs no CPU.
constexpr int kSpinsBeforeSleep = 1 << 15;

// Spins of the caller on chunks a worker holds before it yields the core: that worker may be
// descheduled (another process on its core), and spinning would only delay it further.
constexpr int kSpinsBeforeYield = 1 << 12;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

}  // namespace

Team::Team(int n_threads) {
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

Team::~Team() {
  stop_.store(true);
  state_.fetch_add(uint64_t{1} << (2 * kChunkBits));  // a new generation wakes every worker
  wake();
  for (std::thread& w : workers_) w.join();
}

Team::Bind::Bind(Team& team) : prev_(t_current) { t_current = &team; }
Team::Bind::~Bind() { t_current = prev_; }
Team* Team::current() { return t_current; }

void Team::run(int64_t n, int64_t n_chunks, Fn fn, void* ctx) {
  GL_ASSERT(n_chunks >= 1 && static_cast<uint64_t>(n_chunks) <= kChunkMask, "team: bad chunk count");
  if (busy_) {  // nested loop: the outer one already spreads the work
    fn(ctx, 0, n);
    return;
  }
  busy_ = true;
  job_ = {n, n_chunks, fn, ctx};
  done_.store(0, std::memory_order_relaxed);
  const uint64_t gen = (state_.load(std::memory_order_relaxed) >> (2 * kChunkBits)) + 1;
  const auto chunks = static_cast<uint64_t>(n_chunks);
  // seq_cst store, then the sleeper count: a worker about to sleep either sees this job or is counted.
  state_.store(gen << (2 * kChunkBits) | chunks << kChunkBits | chunks);
  if (sleepers_.load() > 0) wake();
  claim_and_run(gen);
  for (int spins = 0; done_.load(std::memory_order_acquire) < n_chunks; ++spins) {
    if (spins < kSpinsBeforeYield) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  busy_ = false;
}

bool Team::claim_and_run(uint64_t gen) {
  bool ran = false;
  uint64_t s = state_.load(std::memory_order_acquire);
  while ((s >> (2 * kChunkBits)) == (gen & ((uint64_t{1} << (64 - 2 * kChunkBits)) - 1)) && (s & kChunkMask) > 0) {
    if (!state_.compare_exchange_weak(s, s - 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    // Claimed: job_ stays as it is until this chunk is counted done.
    const int64_t total = static_cast<int64_t>((s >> kChunkBits) & kChunkMask);
    const int64_t c = total - static_cast<int64_t>(s & kChunkMask);
    const int64_t i0 = job_.n * c / total, i1 = job_.n * (c + 1) / total;
    job_.fn(job_.ctx, i0, i1);
    done_.fetch_add(1, std::memory_order_release);
    ran = true;
    s = state_.load(std::memory_order_acquire);
  }
  return ran;
}

void Team::wait_for_job(uint64_t& seen) {
  for (int i = 0; i < kSpinsBeforeSleep; ++i) {
    const uint64_t s = state_.load(std::memory_order_acquire);
    if ((s >> (2 * kChunkBits)) != (seen >> (2 * kChunkBits))) {
      seen = s;
      return;
    }
    cpu_relax();
  }
  // Counted as a sleeper before reading the job word: run() either sees the count and bumps
  // wake_, or stored its job before this load.
  sleepers_.fetch_add(1);
  for (;;) {
    const uint32_t w = wake_.load();
    const uint64_t s = state_.load();
    if ((s >> (2 * kChunkBits)) != (seen >> (2 * kChunkBits))) {
      seen = s;
      break;
    }
    wake_.wait(w);
  }
  sleepers_.fetch_sub(1);
}

void Team::wake() {
  wake_.fetch_add(1);
  wake_.notify_all();
}

void Team::worker_loop() {
  uint64_t seen = 0;  // the state before the first job: this thread may start after it was posted
  for (;;) {
    wait_for_job(seen);
    if (stop_.load()) return;
    claim_and_run(seen >> (2 * kChunkBits));
  }
}

}  // namespace gl::cpu
