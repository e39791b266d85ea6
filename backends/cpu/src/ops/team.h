// team.h - the CPU backend's persistent worker threads and the loop that splits a kernel over them.
//
//   Team team(2);                               // the backend owns one; the caller is thread 0
//   Team::Bind bind(team);                      // for the duration of compute()
//   parallel_for(rows, worth_it, [&](int64_t r0, int64_t r1) { for (r = r0; r < r1; ++r) ...; });
//
// Why not an OpenMP team per op: a decode step of a small model has hundreds of ops of a few
// microseconds; opening a team costs about as much, so only the largest ops were split and the
// step ran on one core; and OpenMP peers spin on a barrier, which starves when another process
// holds the other core. Here the workers spin on one word between ops and take chunks of a loop
// from a shared counter: the caller takes chunks too, so a loop never waits for a worker that has
// not started (nor one the OS has put to sleep); it waits only for chunks a worker has claimed.
// Every item is computed by the same code whichever thread takes it: results do not depend on
// the thread count.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace gl::cpu {

class Team {
 public:
  explicit Team(int n_threads);
  ~Team();
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(ctx, i0, i1) over [0, n) in n_chunks chunks on the caller and the workers; returns
  // when every chunk is done. n_chunks in [1, 2^20).
  using Fn = void (*)(void* ctx, int64_t i0, int64_t i1);
  void run(int64_t n, int64_t n_chunks, Fn fn, void* ctx);

  // Makes `team` the one parallel_for() uses on this thread while it lives.
  class Bind {
   public:
    explicit Bind(Team& team);
    ~Bind();
    Bind(const Bind&) = delete;
    Bind& operator=(const Bind&) = delete;

   private:
    Team* prev_;
  };
  // The team bound on this thread, or nullptr (then loops run inline).
  static Team* current();

 private:
  // state_: generation (24 bits) | chunks of the job (20 bits) | chunks not yet claimed (20 bits).
  static constexpr int kChunkBits = 20;
  static constexpr uint64_t kChunkMask = (uint64_t{1} << kChunkBits) - 1;

  void worker_loop();
  bool claim_and_run(uint64_t gen);  // runs chunks of job `gen` while any is left; false when none was
  void wait_for_job(uint64_t& seen);
  void wake();  // wakes the workers that sleep on wake_

  struct Job {
    int64_t n = 0;
    int64_t n_chunks = 1;
    Fn fn = nullptr;
    void* ctx = nullptr;
  };
  Job job_;
  alignas(64) std::atomic<uint64_t> state_{0};
  alignas(64) std::atomic<int64_t> done_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<uint32_t> wake_{0};  // a futex word (32 bits): bumped to wake sleepers
  std::atomic<bool> stop_{false};
  bool busy_ = false;  // a loop is running: a nested one runs inline
  std::vector<std::thread> workers_;
};

// fn(i0, i1) over [0, n): split over the bound team when `worth` (enough work to pay for the
// hand-off), else one call on this thread.
template <class F>
void parallel_for(int64_t n, bool worth, F&& fn) {
  Team* team = Team::current();
  if (n <= 0) return;
  if (!worth || n == 1 || team == nullptr || team->size() == 1) {
    fn(int64_t{0}, n);
    return;
  }
  // A few chunks per thread: a late or descheduled worker leaves its share to the others.
  const int64_t n_chunks = std::min<int64_t>(n, int64_t{4} * team->size());
  using Body = std::remove_reference_t<F>;
  team->run(
      n, n_chunks, [](void* ctx, int64_t i0, int64_t i1) { (*static_cast<Body*>(ctx))(i0, i1); },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

}  // namespace gl::cpu
