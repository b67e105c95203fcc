# Read by cpack before it makes the packages of a cross build (CPACK_PROJECT_CONFIG_FILE in
# packaging/CMakeLists.txt).

# dpkg-shlibdeps works for DEB_HOST_ARCH: that architecture's objdump reads the libraries, and
# its symbols files are the ones that apply. Without it, the build machine's.
set(ENV{DEB_HOST_ARCH} ${CPACK_DEBIAN_PACKAGE_ARCHITECTURE})

# CPack runs dpkg-shlibdeps with --ignore-missing-info: a sysroot without the packages' shlibs and
# symbols files would give Depends without a single library, and no error.
foreach(info shlibs symbols)
  if(NOT EXISTS "${CPACK_EDGETRAIN_SYSROOT}/DEBIAN/${info}")
    message(FATAL_ERROR "${CPACK_EDGETRAIN_SYSROOT} has no DEBIAN/${info}, which the packages' "
      "Depends are computed from: make it again with scripts/arm64-sysroot.sh")
  endif()
endforeach()
