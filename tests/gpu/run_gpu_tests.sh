#!/usr/bin/env bash
# run_gpu_tests.sh - the CUDA test run on the GPU machine, from binaries built elsewhere.
#
# 1. On a development machine (nvcc, no GPU), from the repository root, build only what runs there
#    and pack it (stripped binaries plus the paths they were built with, a few tens of MB):
#      cmake --preset cuda -DGL_BUILD_EXAMPLES=ON
#      cmake --build build-cuda -j2 --target gl_test_gpu gl_test_ops gl_test_graph gl_test_models bench qwen35
#      tests/gpu/run_gpu_tests.sh --pack            # -> build-cuda/gpu/
# 2. On the GPU machine, from the repository root of a copy of the same tree, with build-cuda/gpu
#    carried along:
#      tests/gpu/run_gpu_tests.sh                   # or: tests/gpu/run_gpu_tests.sh path/to/bundle
#      tests/gpu/run_gpu_tests.sh [bundle] --bench [preset:type ...]  # tests, then benchmarks (bench_all)
#      tests/gpu/run_gpu_tests.sh [bundle] --bench-only [preset:type ...]
#      tests/gpu/run_gpu_tests.sh [bundle] --sanitize  # CUDA op cases + model tests under
#                                                      # compute-sanitizer memcheck and racecheck
#    A bundle built with GL_VULKAN links libvulkan.so.1: bring the loader first (../shared/docs/GPU.md).
#
# gl_test_gpu checks the CUDA backend and the executor's GPU <-> CPU paths, gl_test_ops runs every
# op case on every backend present (cpu, and cuda when a device is visible), then gl_test_graph and
# gl_test_models. Each binary's output goes to $OUT/<binary>.log when OUT is
# set (else <bundle>/logs). The last lines printed are a table of passed/failed/skipped per binary.
# The binaries read fixtures and write scratch files under the absolute source and build paths
# they were compiled with; when those do not exist here they are linked to this checkout.
# Exit status: 0 when every binary passed and CUDA cases ran, 1 otherwise.
set -u

BINARIES=(gl_test_gpu gl_test_ops gl_test_graph gl_test_models)
TOOLS=(bench qwen35)  # examples/, packed when built
# Benchmarked models: gguf-synth presets generated in memory by the bench (no file: the 35B BF16
# model is larger than the GPU machine's disk).
BENCH_MODELS=(qwen35-9b:bf16 qwen35-9b:q8_0 qwen35-35b-a3b:bf16)

die() {
  echo "run_gpu_tests: $*" >&2
  exit 2
}

# --pack [build-dir]: copy the test binaries (stripped) and the paths they were built with.
pack() {
  local build=${1:-build-cuda}
  [[ -f $build/CMakeCache.txt ]] || die "$build is not a configured build folder"
  local dst=$build/gpu
  rm -rf "$dst"
  mkdir -p "$dst" || die "cannot create $dst"
  for b in "${BINARIES[@]}"; do
    if [[ -x $build/tests/$b ]]; then
      strip -o "$dst/$b" "$build/tests/$b" || die "strip $b failed"
    else
      echo "run_gpu_tests: $build/tests/$b not built, left out" >&2
    fi
  done
  for b in "${TOOLS[@]}"; do
    local exe
    exe=$(find "$build/examples" -name "$b" -type f -perm -u+x 2>/dev/null | head -1)
    if [[ -n $exe ]]; then strip -o "$dst/$b" "$exe" || die "strip $b failed"; fi
  done
  # GL_SOURCE_DIR and GL_BINARY_DIR as compiled into the tests (see tests/CMakeLists.txt).
  sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" >"$dst/source_dir"
  sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$build/CMakeCache.txt" >"$dst/binary_dir"
  du -sh "$dst"
}

# Makes the compiled-in source path resolve to this checkout when it does not exist here.
link_source_dir() {
  local bundle=$1
  [[ -f $bundle/source_dir ]] || return 0
  local src
  src=$(cat "$bundle/source_dir")
  [[ -n $src && ! -e $src ]] || return 0
  mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src" && echo "linked $src -> $PWD" && return 0
  echo "run_gpu_tests: warning: cannot link $src to $PWD; tests that read fixtures will fail" >&2
}

# "passed failed skipped" from a gtest log.
counts() {
  local log=$1 p f s
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  echo "${p:-0} ${f:-0} ${s:-0}"
}

# The benchmarks: every model in $@ (default BENCH_MODELS): pp512, tg128 and spec 3 at forced
# acceptance, markdown to the terminal and JSON to $logs; then tg128 of the first model with CUDA
# graphs off (the A/B of capture), and the embedded model through the qwen35 example on the GPU.
bench_all() {
  local bundle=$1 logs=$2
  shift 2
  local models=("$@")
  ((${#models[@]})) || models=("${BENCH_MODELS[@]}")
  [[ -x $bundle/bench ]] || { echo "run_gpu_tests: no bench in $bundle" >&2; return 1; }
  local status=0 m
  for m in "${models[@]}"; do
    echo "== bench $m"
    "$bundle/bench" --synth "$m" --backend cuda -p 512 -n 128 --spec 3 --force-accept -r 5 \
      -o "$logs/bench-${m//[:\/]/-}.json" 2>&1 | tee "$logs/bench-${m//[:\/]/-}.md" || status=1
  done
  echo "== bench ${models[0]}, CUDA graphs off"
  GL_CUDA_GRAPHS=0 "$bundle/bench" --synth "${models[0]}" --backend cuda -p 0 -n 128 -r 3 2>&1 |
    tee "$logs/bench-graphs-off.md" || status=1
  if [[ -x $bundle/qwen35 ]]; then
    echo "== qwen35 example, embedded model, cuda vs cpu (greedy, MTP 2)"
    "$bundle/qwen35" --backend cuda -n 64 --mtp 2 >"$logs/qwen35-cuda.txt" 2>&1 || status=1
    "$bundle/qwen35" --backend cpu -n 64 --mtp 2 >"$logs/qwen35-cpu.txt" 2>&1 || status=1
    tail -12 "$logs/qwen35-cuda.txt"
    # The generated text only: the statistics from the "prefill:" line on hold timings.
    if diff <(sed '/^prefill:/,$d' "$logs/qwen35-cuda.txt") <(sed '/^prefill:/,$d' "$logs/qwen35-cpu.txt") >/dev/null; then
      echo "qwen35: cuda text == cpu text"
    else
      echo "qwen35: cuda text differs from cpu text"; status=1
    fi
  fi
  return $status
}

# --sanitize: the CUDA op cases and the CUDA model tests under compute-sanitizer's memcheck, and
# the op cases under racecheck (shared-memory hazards). Exit 1 on any reported error.
sanitize() {
  local bundle=$1 logs=$2 cs status=0
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  [[ -x $cs ]] || die "compute-sanitizer not found (PATH, /usr/local/cuda/bin)"
  local runs=("memcheck gl_test_ops *__cuda*" "memcheck gl_test_models *Cuda*" "racecheck gl_test_ops *__cuda*")
  for r in "${runs[@]}"; do
    read -r tool exe filter <<<"$r"
    local log=$logs/$tool-$exe.log start=$SECONDS rc
    "$cs" --tool "$tool" --error-exitcode 9 --print-limit 50 "$bundle/$exe" --gtest_color=no \
      --gtest_filter="$filter" >"$log" 2>&1
    rc=$?
    echo "$tool $exe ($filter): rc $rc, $((SECONDS - start)) s; $(grep -E '(ERROR|RACECHECK) SUMMARY' "$log")"
    ((rc != 0)) && status=1
  done
  return $status
}

main() {
  if [[ ${1:-} == --pack ]]; then
    pack "${2:-}"
    exit 0
  fi
  local bundle=build-cuda/gpu bench=0 tests=1 sanitizer=0
  if [[ -n ${1:-} && -d $1 ]]; then bundle=$1; shift; fi
  if [[ ${1:-} == --sanitize ]]; then sanitizer=1; shift; fi
  if [[ ${1:-} == --bench ]]; then bench=1; shift; fi
  if [[ ${1:-} == --bench-only ]]; then bench=1; tests=0; shift; fi
  [[ -d $bundle ]] || die "no bundle at $bundle (build and --pack first, see the top of this script)"
  local logs=${OUT:-$bundle/logs}
  mkdir -p "$logs" || die "cannot create $logs"

  echo "== devices"
  nvidia-smi -L || echo "(nvidia-smi failed)"
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
    [[ -d $d ]] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
  link_source_dir "$bundle"
  [[ -f $bundle/binary_dir ]] && mkdir -p "$(cat "$bundle/binary_dir")"

  local rows=() status=0
  if ((sanitizer)); then
    sanitize "$bundle" "$logs" || status=1
    exit "$status"
  fi
  if ((bench && !tests)); then
    bench_all "$bundle" "$logs" "$@" || status=1
    exit "$status"
  fi
  for b in "${BINARIES[@]}"; do
    local exe=$bundle/$b log=$logs/$b.log
    if [[ ! -x $exe ]]; then
      rows+=("$(printf '%-16s %8s %8s %8s %6s  %s' "$b" - - - - "not in the bundle")")
      status=1
      continue
    fi
    echo "== $b"
    local start=$SECONDS rc
    "$exe" --gtest_color=no >"$log" 2>&1
    rc=$?
    read -r p f s < <(counts "$log")
    local note="$((SECONDS - start)) s"
    if [[ $b == gl_test_ops ]]; then
      # Result lines of the run itself end in "(N ms)"; gtest's closing list repeats failures without it.
      local cuda_ok cuda_fail cuda_skip
      cuda_ok=$(grep -c '^\[       OK \] .*__cuda.* ms)$' "$log")
      cuda_fail=$(grep -c '^\[  FAILED  \] .*__cuda.* ms)$' "$log")
      cuda_skip=$(grep -c '^\[  SKIPPED \] .*__cuda.* ms)$' "$log")
      note+=", cuda cases: $cuda_ok passed, $cuda_fail failed, $cuda_skip skipped"
      if ((cuda_ok + cuda_fail == 0)); then
        note+=" (NO CUDA CASES RAN)"
        status=1
      fi
    fi
    ((rc != 0)) && status=1
    grep '^\[  FAILED  \] .* ms)$' "$log" | head -20
    rows+=("$(printf '%-16s %8s %8s %8s %6s  %s' "$b" "$p" "$f" "$s" "$rc" "$note")")
  done

  if ((bench)); then bench_all "$bundle" "$logs" "$@" || status=1; fi

  echo
  echo "== summary (logs in $logs)"
  printf '%-16s %8s %8s %8s %6s  %s\n' binary passed failed skipped rc note
  printf '%s\n' "${rows[@]}"
  exit "$status"
}

main "$@"
