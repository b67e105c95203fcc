# Cross-compiles for arm64 (64-bit Raspberry Pi OS, Debian arm64) with Debian's cross toolchain
# (g++-aarch64-linux-gnu) against the sysroot scripts/arm64-sysroot.sh makes. scripts/cross-build.sh
# uses it; by hand:
#   cmake -S . -B build/arm64 -G Ninja --toolchain cmake/toolchains/aarch64-linux-gnu.cmake \
#     -DEDGETRAIN_SYSROOT=$PWD/out/sysroot-arm64 -DEDGETRAIN_BUILD_GUI=OFF -DBUILD_TESTING=OFF
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(EDGETRAIN_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../../out/sysroot-arm64"
  CACHE PATH "The arm64 sysroot (scripts/arm64-sysroot.sh)")
get_filename_component(EDGETRAIN_SYSROOT "${EDGETRAIN_SYSROOT}" ABSOLUTE)
if(NOT EXISTS "${EDGETRAIN_SYSROOT}/.sysroot/complete")
  message(FATAL_ERROR "No complete arm64 sysroot at ${EDGETRAIN_SYSROOT}: run scripts/arm64-sysroot.sh")
endif()
# try_compile() projects read this file again: hand them the sysroot.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES EDGETRAIN_SYSROOT)

set(CMAKE_SYSROOT "${EDGETRAIN_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH "${EDGETRAIN_SYSROOT}")
# Programs (moc, rcc, pkg-config) from the host; libraries, headers and packages from the sysroot.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The arm64 binaries run here only through qemu-user (no binfmt_misc).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L "${EDGETRAIN_SYSROOT}")

# pkg-config (FindLibXml2 asks it) reads the sysroot's .pc files and prefixes their paths.
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${EDGETRAIN_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR} "${EDGETRAIN_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${EDGETRAIN_SYSROOT}/usr/lib/pkgconfig:${EDGETRAIN_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Qt 6 cross builds run the host's moc and rcc: the host Qt (qt6-base-dev) is the "host path".
set(QT_HOST_PATH "/usr" CACHE PATH "Qt for the build machine (moc, rcc)")
set(QT_HOST_PATH_CMAKE_DIR "/usr/lib/${CMAKE_HOST_SYSTEM_PROCESSOR}-linux-gnu/cmake"
  CACHE PATH "The host Qt's CMake packages")
