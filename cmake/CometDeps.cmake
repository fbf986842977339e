# Finds comet's dependencies the CMake way. Each failure names the Debian
# package that provides the missing piece (scripts/setup.sh installs them all).
find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: install the Debian package 'pkg-config'")
endif()

# comet_require_pkg(<prefix> <pkg-config module> <debian package>)
function(comet_require_pkg prefix module debpkg)
  pkg_check_modules(${prefix} IMPORTED_TARGET GLOBAL ${module})
  if(NOT ${prefix}_FOUND)
    message(FATAL_ERROR "comet: dependency '${module}' not found: install the Debian package '${debpkg}' (or run scripts/setup.sh)")
  endif()
endfunction()

comet_require_pkg(OPENBLAS openblas libopenblas-dev)
comet_require_pkg(HWLOC hwloc libhwloc-dev)
comet_require_pkg(GSL gsl libgsl-dev)
# gsl.pc adds GSL's reference CBLAS (-lgslcblas); linked before OpenBLAS it
# wins cblas_sgemm for the whole executable (~25x slower). GSL uses OpenBLAS
# as its CBLAS instead.
get_target_property(_comet_gsl_libs PkgConfig::GSL INTERFACE_LINK_LIBRARIES)
list(FILTER _comet_gsl_libs EXCLUDE REGEX "gslcblas")
list(APPEND _comet_gsl_libs PkgConfig::OPENBLAS)
set_target_properties(PkgConfig::GSL PROPERTIES INTERFACE_LINK_LIBRARIES "${_comet_gsl_libs}")
comet_require_pkg(JANSSON jansson libjansson-dev)
comet_require_pkg(YAML yaml-0.1 libyaml-dev)
if(COMET_BUILD_TESTS)
  comet_require_pkg(CMOCKA cmocka libcmocka-dev)
endif()
if(COMET_PAPI)
  comet_require_pkg(PAPI papi libpapi-dev)
endif()

# OpenBLAS's cblas.h must be the OpenBLAS one (openblas_set_num_threads).
find_path(COMET_CBLAS_INCLUDE cblas.h HINTS ${OPENBLAS_INCLUDE_DIRS} NO_DEFAULT_PATH)
if(NOT COMET_CBLAS_INCLUDE)
  message(FATAL_ERROR "comet: cblas.h from OpenBLAS not found: install the Debian package 'libopenblas-dev'")
endif()

set(MPI_C_COMPILER mpicc.mpich CACHE FILEPATH "MPICH C compiler wrapper")
find_package(MPI COMPONENTS C)
if(NOT MPI_C_FOUND)
  message(FATAL_ERROR "comet: MPI (MPICH) not found: install the Debian packages 'mpich' and 'libmpich-dev'")
endif()
find_program(COMET_MPIEXEC NAMES mpiexec.mpich mpiexec.hydra mpiexec)
if(NOT COMET_MPIEXEC)
  message(FATAL_ERROR "comet: mpiexec not found: install the Debian package 'mpich'")
endif()
set(MPIEXEC_EXECUTABLE ${COMET_MPIEXEC})

find_package(Threads REQUIRED)
find_library(COMET_LIBM m REQUIRED)

find_program(COMET_GNUPLOT gnuplot)
if(NOT COMET_GNUPLOT)
  message(FATAL_ERROR "comet: gnuplot not found: install the Debian package 'gnuplot-nox'")
endif()
