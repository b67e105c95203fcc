#!/usr/bin/env bash
# Installs the Debian 12 packages EdgeTrain needs to build, test and run its demo, skipping the
# ones already installed. Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libeigen3-dev zlib1g-dev
  qt6-base-dev                 # Qt Core, Network, Gui, Widgets, Concurrent, Test
  qt6-charts-dev libqt6opengl6-dev  # the app's charts (Qt Charts' CMake files need Qt OpenGL)
  qt6-svg-dev                  # the report's charts as SVG (QSvgGenerator)
  poppler-utils                # pdfinfo: the GUI suite checks the exported PDF report
  libgloo-dev                  # collectives of the cluster's data plane
  libssl-dev                   # libcrypto: the control frames' HMAC-SHA256 at the CPU's SHA speed
  dataset-fashion-mnist        # the real data of the demo and the accuracy tests
  libopencv-dev libopencv-contrib-dev  # vision/: video, HOG/cascades, trackers, cv::dnn
  libxml2-dev                  # vision/: CVAT XML annotations
  libonnx-dev libprotobuf-dev protobuf-compiler  # vision/export: the student's ONNX export, written with ONNX's own protobuf definitions
  python3-onnx python3-opencv python3-numpy      # tests/vision: onnx.checker on the export; examples/run_student.py against detect
  opencv-data opencv-doc       # cascades; vtest.avi, Megamind.avi (the viewpoint demo's videos)
  locales                      # de_DE.UTF-8: the tests read and write files under a comma-decimal locale
  clang-format                 # scripts/check-format.sh: the tree as .clang-format has it (CI checks it)
  git                          # scripts/check-format.sh lists the tracked files
  libomp-14-dev                # the tsan preset: LLVM's libomp and its Archer tool (OpenMP under TSan)
  clang-16 libclang-rt-16-dev  # scripts/fuzz.sh: libFuzzer + ASan/UBSan (clang 14 cannot build the engine)
  iproute2                     # the edge lab: ip (namespaces, veth, bridge) and tc (link shaping)
  python3                      # tests/chaos/chaos.py: the chaos run's driver (scripts/test.sh)
  librsvg2-bin                 # rsvg-convert: the application icon's PNG sizes
  dpkg-dev file                # scripts/package.sh: dpkg-shlibdeps and dpkg-buildflags for CPack
  lintian desktop-file-utils appstream systemd  # scripts/check-packages.sh
)
# oneDNN's GEMM is the faster backend behind core's GEMM seam; Debian ships it for amd64 only.
# scripts/test.sh's arm64 steps (on amd64): the cross compiler, and qemu-user to run arm64 programs.
if [ "$(dpkg --print-architecture)" = amd64 ]; then
  packages+=(libdnnl-dev g++-aarch64-linux-gnu qemu-user-static)
fi
# Extra groups on request: "bench" adds the PyTorch reference of tests/benchmarks.
for extra in "$@"; do
  case "$extra" in
    bench) packages+=(python3-torch python3-numpy libdnnl-dev) ;;
    screenshots) packages+=(xvfb xauth imagemagick) ;; # the app in a real X server, and its picture
    *) echo "install-deps.sh: unknown group '$extra' (known: bench, screenshots)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# The comma-decimal locale the tests run under (files must read and write the same bytes in it).
generate_locale() {
  locale -a 2>/dev/null | grep -qi '^de_DE\.utf-\?8$' && return 0
  echo "Generating the de_DE.UTF-8 locale"
  $sudo localedef -i de_DE -f UTF-8 de_DE.UTF-8
}
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
if [ ${#missing[@]} -eq 0 ]; then
  generate_locale
  exit 0
fi

echo "Installing: ${missing[*]}"
if [ -n "$sudo" ]; then
  command -v sudo >/dev/null || { echo "install-deps.sh: run as root, or install sudo" >&2; exit 1; }
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
generate_locale
