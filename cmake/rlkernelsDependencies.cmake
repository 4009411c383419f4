# The dependencies of the rlkernels target, found without network access. Each missing one stops
# CMake with the apt line that installs it. Included by the top-level CMakeLists.txt and by the
# installed rlkernelsConfig.cmake (there through find_dependency, so QUIET/REQUIRED propagate).
include("${CMAKE_CURRENT_LIST_DIR}/rlkernelsFindThrust.cmake")

if(NOT TARGET OpenMP::OpenMP_CXX)
  find_package(OpenMP QUIET COMPONENTS CXX)
  if(NOT OpenMP_CXX_FOUND)
    message(FATAL_ERROR
      "rlkernels: OpenMP for C++ was not found (needed by the openmp backend). With g++ it comes with the compiler;\n"
      "for clang on Debian/Ubuntu: sudo apt-get install libomp-dev")
  endif()
endif()

if(NOT TARGET Eigen3::Eigen)
  find_package(Eigen3 3.3 QUIET NO_MODULE)
  if(NOT Eigen3_FOUND)
    message(FATAL_ERROR "rlkernels: Eigen3 was not found. On Debian/Ubuntu: sudo apt-get install libeigen3-dev")
  endif()
endif()

# cuBLAS for the networks (rlkernels/nn) in CUDA translation units: found when a CUDA compiler is
# enabled, and linked only into targets that link with the CUDA language.
get_property(rlk_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
if("CUDA" IN_LIST rlk_languages AND NOT TARGET CUDA::cublas)
  find_package(CUDAToolkit QUIET)
endif()
unset(rlk_languages)
