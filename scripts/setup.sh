#!/usr/bin/env bash
# Installs the Debian packages ggml-lite needs, only those missing. Idempotent.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libfmt-dev nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev
  libomp-dev libpcre2-dev graphviz clang libclang-rt-14-dev clang-format ccache
  # The Vulkan backend: loader and headers, the GLSL -> SPIR-V compiler, and lavapipe (Mesa's CPU
  # Vulkan driver) on which its op-harness cases run in CI.
  libvulkan-dev glslc glslang-tools spirv-headers mesa-vulkan-drivers
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
