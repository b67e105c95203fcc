#!/usr/bin/env bash
# Cross-compiles edgetrain-node and edgetrain-cli for another Debian architecture on this amd64
# machine, portable as the "release" preset is (Release, no -march=native), without the desktop
# app and the test suites.
#
#   scripts/cross-build.sh arm64 [BUILD_DIR] [CMAKE_ARGS...]   (default BUILD_DIR: build/arm64)
#
# Installs the cross toolchain and qemu-user if missing, makes the sysroot if missing
# (scripts/arm64-sysroot.sh; EDGETRAIN_SYSROOT names another one), configures with
# cmake/toolchains/aarch64-linux-gnu.cmake and builds the two programs. The build directory is
# then ready for cpack (scripts/package.sh arm64). Run the results with
#   qemu-aarch64-static -L SYSROOT BUILD_DIR/bin/edgetrain-node --help
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: scripts/cross-build.sh arm64 [BUILD_DIR] [CMAKE_ARGS...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
arch="$1"
shift
case "$arch" in
  arm64) triplet=aarch64-linux-gnu qemu=qemu-aarch64-static ;;
  armhf)
    # Debian 12 builds gloo (the data plane's collectives) for 64-bit architectures only.
    echo "cross-build.sh: armhf is not supported: Debian 12 has no libgloo-dev:armhf" >&2
    exit 1 ;;
  *) usage ;;
esac
build_dir="${1:-build/$arch}"
if [ $# -ge 1 ]; then shift; fi
sysroot="${EDGETRAIN_SYSROOT:-out/sysroot-$arch}"

# The host side: the cross compiler, qemu-user for running the results, and the host Qt's moc
# and rcc (a Qt 6 cross build runs the build machine's tools).
host_packages=(cmake ninja-build pkg-config qt6-base-dev "g++-$triplet" qemu-user-static)
missing=()
for p in "${host_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "cross-build.sh: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

scripts/arm64-sysroot.sh "$sysroot"
sysroot="$(realpath "$sysroot")"

cmake -S . -B "$build_dir" -G Ninja \
  --toolchain "$PWD/cmake/toolchains/$triplet.cmake" \
  -DEDGETRAIN_SYSROOT="$sysroot" \
  -DCMAKE_BUILD_TYPE=Release -DEDGETRAIN_NATIVE=OFF \
  -DEDGETRAIN_BUILD_GUI=OFF -DBUILD_TESTING=OFF -DEDGETRAIN_WITH_DNNL=OFF \
  "$@"
cmake --build "$build_dir" -j "$(nproc)" --target edgetrain-node edgetrain-cli

echo "cross-build.sh: $arch binaries (run them with $qemu -L $sysroot):"
for program in edgetrain-node edgetrain-cli; do
  echo "  $(realpath "$build_dir/bin/$program")"
done
