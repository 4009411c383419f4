# Finds the Thrust/CUB headers (NVIDIA CCCL) that rlkernels uses on every backend and defines the
# imported target rlkernels::thrust. Prefers the CCCL shipped with the CUDA Toolkit (it must match
# nvcc), then a system Thrust (Debian/Ubuntu: libthrust-dev). Host-only builds need no nvcc: they
# use Thrust's CPP/OMP systems with the host compiler. Used at build time and by the installed
# package config.
if(TARGET rlkernels::thrust)
  return()
endif()

find_package(CUDAToolkit QUIET)
set(_rlk_thrust_hints "")
if(CUDAToolkit_FOUND)
  foreach(_dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
    list(APPEND _rlk_thrust_hints "${_dir}/cccl" "${_dir}")
  endforeach()
endif()
list(APPEND _rlk_thrust_hints /usr/local/cuda/include/cccl /usr/local/cuda/include)

find_path(RLKERNELS_THRUST_INCLUDE_DIR thrust/version.h
  HINTS ${_rlk_thrust_hints}
  DOC "Directory holding thrust/version.h (CUDA Toolkit CCCL or libthrust-dev)")

if(NOT RLKERNELS_THRUST_INCLUDE_DIR)
  message(FATAL_ERROR
    "rlkernels: Thrust (NVIDIA CCCL) was not found. Install the CUDA Toolkit, or on Debian/Ubuntu:\n"
    "  sudo apt-get install libthrust-dev\n"
    "or set RLKERNELS_THRUST_INCLUDE_DIR to the directory that holds thrust/version.h.")
endif()

file(STRINGS "${RLKERNELS_THRUST_INCLUDE_DIR}/thrust/version.h" _rlk_thrust_version_line
  REGEX "^#define THRUST_VERSION [0-9]+")
string(REGEX MATCH "[0-9]+" RLKERNELS_THRUST_VERSION "${_rlk_thrust_version_line}")

add_library(rlkernels::thrust INTERFACE IMPORTED)
set_target_properties(rlkernels::thrust PROPERTIES
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${RLKERNELS_THRUST_INCLUDE_DIR}"
  INTERFACE_INCLUDE_DIRECTORIES "${RLKERNELS_THRUST_INCLUDE_DIR}")
if(NOT rlkernels_FIND_QUIETLY)
  message(STATUS "rlkernels: Thrust ${RLKERNELS_THRUST_VERSION} in ${RLKERNELS_THRUST_INCLUDE_DIR}")
endif()
unset(_rlk_thrust_hints)
unset(_rlk_thrust_version_line)
