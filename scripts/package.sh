#!/usr/bin/env bash
# Builds EdgeTrain's Debian packages into out/packages/.
#   scripts/package.sh [amd64]  edgetrain (the desktop app and edgetrain-cli) and edgetrain-node,
#                               built here from the release preset (portable: no -march=native)
#   scripts/package.sh arm64    edgetrain-node (and edgetrain with the CLI alone, where the cross
#                               build made it), cross-built by scripts/cross-build.sh
# One build folder per architecture (build/package-ARCH), installed under /usr, no test suites.
set -euo pipefail
cd "$(dirname "$0")/.."

arch="${1:-amd64}"
build="build/package-$arch"
case "$arch" in
amd64 | arm64) ;;
*)
  echo "usage: scripts/package.sh [amd64|arm64]" >&2
  exit 2
  ;;
esac
# Debian's hardening flags for the package's architecture (fortify, stack protector, relro and
# bindnow), without its -g: the packages ship stripped programs. CMake reads them from the
# environment when it first configures a build folder.
export DEB_BUILD_MAINT_OPTIONS=hardening=+all DEB_CXXFLAGS_MAINT_STRIP=-g
buildflags() { DEB_HOST_ARCH="$arch" dpkg-buildflags --get "$1"; }
CXXFLAGS="$(buildflags CPPFLAGS) $(buildflags CXXFLAGS)"
LDFLAGS="$(buildflags LDFLAGS)"
export CXXFLAGS LDFLAGS

case "$arch" in
amd64)
  if [ "$(dpkg --print-architecture)" != amd64 ]; then
    echo "package.sh: amd64 packages are built on an amd64 machine (this one is $(dpkg --print-architecture))" >&2
    exit 2
  fi
  cmake --preset release -B "$build" -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_TESTING=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)"
  ;;
arm64)
  if [ ! -x scripts/cross-build.sh ]; then
    echo "package.sh: the arm64 setup is missing: scripts/cross-build.sh (the cross-compilation" \
      "toolchain) is not in this tree, so arm64 packages cannot be built here" >&2
    exit 2
  fi
  scripts/cross-build.sh arm64 "$build"
  # Packages install under /usr, whatever prefix the cross build was configured with.
  cmake -DCMAKE_INSTALL_PREFIX=/usr -B "$build" >/dev/null
  cmake --build "$build" -j "$(nproc)"
  ;;
esac

# The node always; the CLI and the app where this build made them.
components=node
[ -x "$build/bin/edgetrain-cli" ] && components+=";cli"
[ -x "$build/bin/edgetrain" ] && components+=";gui"
(cd "$build" && cpack -G DEB -D "CPACK_COMPONENTS_ALL=$components")

mkdir -p out/packages
rm -f out/packages/*_"$arch".deb
mv "$build"/*_"$arch".deb out/packages/
ls -l out/packages/*_"$arch".deb
