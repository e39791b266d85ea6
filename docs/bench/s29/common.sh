# Sourced by the session-28 scripts: unpack the carried tar (if any), the source symlink, the Vulkan loader.
R=$PWD
B=/tmp/g/gpu
mkdir -p /tmp/g; [ -n "${TAR:-}" ] && tar -C /tmp/g -xJf ".gpu-run/$TAR"
src=$(cat $B/source_dir); [ -e "$src" ] || { mkdir -p "$(dirname "$src")"; ln -s "$R" "$src"; }
mkdir -p "$(cat $B/binary_dir)"
[ -d .gpu-run/lq ] && mkdir -p "$(dirname "$src")/shared/fixtures" && ln -sfn "$R/.gpu-run/lq" "$(dirname "$src")/shared/fixtures/llama-quants"
for f in .vk/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
nvidia-smi --query-gpu=name --format=csv,noheader >> $OUT/gpu.txt
summ() { grep -E '^\[  (PASSED|FAILED)  \]|ERROR SUMMARY|RACECHECK SUMMARY' "$1" | head -6; grep -E '^\[  FAILED  \]' "$1" | head; }
row() { grep -E "^\| (qwen|q4|q8|m35|m9)|ready|floor" | sed "s/^/$1 /"; }
b() { local tag=$1; shift; "$@" 2>&1 | row "$tag" | tee -a $OUT/rows.txt; }
s=$SECONDS
