#!/usr/bin/env bash
# Makes the arm64 sysroot that edgetrain-node and edgetrain-cli are cross-compiled against and
# run in under qemu-user: Debian 12's own arm64 packages, unpacked, never installed.
#
#   scripts/arm64-sysroot.sh [DIR]        (default: out/sysroot-arm64)
#
# apt resolves the dependency closure for arm64 in a private state of its own (its own package
# lists and an empty dpkg status, under DIR/.sysroot/apt), so the host's dpkg is left alone:
# libgloo-dev:arm64 could not be installed beside the amd64 one anyway. Every downloaded .deb is
# unpacked with dpkg-deb -x; no maintainer script runs, so the two things they would have done
# that a sysroot needs are done here: absolute symlinks are made relative (they would point into
# the host), and the library alternatives (libblas.so.3, liblapack.so.3) are linked.
# The packages' shlibs and symbols files (what dpkg keeps in /var/lib/dpkg/info/ for installed
# packages) go to DIR/DEBIAN/shlibs and DIR/DEBIAN/symbols: dpkg-shlibdeps reads a library's
# dependency information from DEBIAN/ at the root of the tree it found the library in, so an arm64
# package's Depends can be computed from the sysroot (scripts/package.sh arm64).
# Re-running does nothing once DIR/.sysroot/complete names the same package set.
set -euo pipefail
cd "$(dirname "$0")/.."

arch=arm64
triplet=aarch64-linux-gnu
sysroot="${1:-out/sysroot-$arch}"
# What the node and the CLI link (the arm64 side of scripts/install-deps.sh's build list): the
# top-level CMakeLists needs OpenCV and libxml2 for vision/ even when only the node is built.
# oneDNN is amd64-only in Debian; core falls back to its Eigen GEMM without it.
packages=(
  libc6-dev libstdc++6 libgomp1   # the C library; OpenMP's runtime for the cross gcc's -fopenmp
  libeigen3-dev zlib1g-dev
  qt6-base-dev                    # Qt Core, Network, Gui, Concurrent
  libgloo-dev
  libssl-dev                      # libcrypto: the control frames' HMAC
  libopencv-dev libopencv-contrib-dev libxml2-dev
  libonnx-dev libprotobuf-dev     # vision/export: the student's ONNX export (onnx_proto)
)

meta="$sysroot/.sysroot"
stamp="$meta/complete"
# The stamp names the package set and the version of the fix-ups below: either changing remakes it.
fixups=3
wanted="$arch (fix-ups $fixups): ${packages[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  echo "arm64-sysroot.sh: $sysroot is complete ($(wc -l < "$meta/packages.txt") packages)"
  exit 0
fi
# An unfinished or outdated sysroot is made again from nothing, but only one this script made.
if [ -e "$sysroot" ] && [ -n "$(ls -A "$sysroot")" ] && [ ! -d "$meta" ]; then
  echo "arm64-sysroot.sh: $sysroot exists and is not a sysroot this script made" >&2
  exit 1
fi
for tool in apt-get dpkg-deb realpath; do
  command -v "$tool" >/dev/null || { echo "arm64-sysroot.sh: needs $tool" >&2; exit 1; }
done
start_s=$(date +%s)
rm -rf "$sysroot"
mkdir -p "$meta/apt/state/lists/partial" "$meta/apt/cache/archives/partial" "$sysroot/DEBIAN"
: > "$meta/apt/status"
sysroot="$(realpath "$sysroot")"
meta="$sysroot/.sysroot"
stamp="$meta/complete"

# The host's sources and keys, everything else private; an arm64-only view of the archive.
apt_private=(
  -o "APT::Architecture=$arch" -o "APT::Architectures=$arch"
  -o "Dir::State=$meta/apt/state" -o "Dir::State::status=$meta/apt/status"
  -o "Dir::Cache=$meta/apt/cache" -o "Acquire::Languages=none"
  -o "APT::Sandbox::User=$(id -un)" -q
)
# A mirror caught mid-sync fails one index now and then: try again before giving up.
for attempt in 1 2 3; do
  if apt-get "${apt_private[@]}" update; then
    break
  fi
  [ "$attempt" -eq 3 ] && { echo "arm64-sysroot.sh: apt-get update failed" >&2; exit 1; }
  sleep 10
done
apt-get "${apt_private[@]}" install --download-only --no-install-recommends -y "${packages[@]}"

debs=("$meta"/apt/cache/archives/*.deb)
echo "arm64-sysroot.sh: unpacking ${#debs[@]} packages into $sysroot"
: > "$meta/packages.txt"
: > "$meta/alternatives.txt"
: > "$sysroot/DEBIAN/shlibs"
: > "$sysroot/DEBIAN/symbols"
for deb in "${debs[@]}"; do
  dpkg-deb -x "$deb" "$sysroot"
  dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb" >> "$meta/packages.txt"
  # Each file's entries name their own package, so one file of each kind holds them all.
  for info in shlibs symbols; do
    if dpkg-deb -I "$deb" "$info" > "$meta/$info" 2>/dev/null; then
      sed -e '$a\' "$meta/$info" >> "$sysroot/DEBIAN/$info"
    fi
  done
  # "update-alternatives --install LINK NAME PATH PRIORITY", continuation lines joined.
  if dpkg-deb -I "$deb" postinst > "$meta/postinst" 2>/dev/null; then
    sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$meta/postinst" \
      | tr -s '\t' ' ' | grep -oE 'update-alternatives +--install +[^ ]+ +[^ ]+ +[^ ]+ +[0-9]+' \
      | awk '{print $3, $5, $6}' >> "$meta/alternatives.txt" || true
  fi
done
rm -f "$meta/postinst" "$meta/shlibs" "$meta/symbols"

# Library alternatives: the highest priority wins, as update-alternatives' auto mode would pick.
sort -k1,1 -k3,3nr "$meta/alternatives.txt" | awk '!seen[$1]++' | while read -r link target _; do
  case "$link" in /lib/* | /usr/lib/*) ;; *) continue ;; esac
  [ -e "$sysroot$target" ] && [ ! -e "$sysroot$link" ] || continue
  ln -s "$(realpath -m -s --relative-to="$(dirname "$sysroot$link")" "$sysroot$target")" \
    "$sysroot$link"
done
# Absolute symlinks (libz.so -> /lib/aarch64-linux-gnu/libz.so.1.2.13) would reach into the host.
find "$sysroot" -path "$meta" -prune -o -type l -lname '/*' -print | while read -r link; do
  ln -sfn "$(realpath -m -s --relative-to="$(dirname "$link")" "$sysroot$(readlink "$link")")" \
    "$link"
done
# CMake package files that name their libraries by absolute path (Debian's GlooTargets-*.cmake:
# "/usr/lib/libgloo.so.0.5.0") would hand the linker the host's library: root them in the sysroot.
: > "$meta/rooted-cmake-files.txt"
{ grep -rlE --include='*.cmake' '(IMPORTED_LOCATION|_cmake_import_check_files_for_).*"/(usr|lib)/' \
  "$sysroot/usr/lib" "$sysroot/usr/share" || true; } | while read -r config; do
  sed -i -E '/IMPORTED_LOCATION|_cmake_import_check_files_for_/ s#"/(usr|lib)/#"${CMAKE_SYSROOT}/\1/#g' \
    "$config"
  echo "${config#"$sysroot"}" >> "$meta/rooted-cmake-files.txt"
done
# Documentation and translations are no use to a compiler or to qemu.
rm -rf "$sysroot"/usr/share/{doc,man,info,locale,lintian}

for needed in "lib/ld-linux-aarch64.so.1" "usr/lib/$triplet/libQt6Core.so" \
  "usr/lib/libgloo.so" "usr/lib/$triplet/cmake/opencv4/OpenCVConfig.cmake"; do
  [ -e "$sysroot/$needed" ] || { echo "arm64-sysroot.sh: $needed missing" >&2; exit 1; }
done
for soname in libc.so.6 libQt6Core.so.6; do
  grep -q "^$soname " "$sysroot/DEBIAN/symbols" \
    || { echo "arm64-sysroot.sh: no symbols file for $soname" >&2; exit 1; }
done
grep -q '^libgloo 0 ' "$sysroot/DEBIAN/shlibs" \
  || { echo "arm64-sysroot.sh: no shlibs entry for libgloo.so.0" >&2; exit 1; }
rm -rf "$meta/apt" # the .debs and lists: the sysroot is what was wanted
echo "$wanted" > "$stamp"
echo "arm64-sysroot.sh: $sysroot complete: $(wc -l < "$meta/packages.txt") packages," \
  "$(du -sh "$sysroot" | cut -f1), $(($(date +%s) - start_s)) s"
