# Optional targets for rlkernels/distributed/ (docs/distributed.md), defined when their library is
# found and never required by rlkernels::rlkernels:
#   rlkernels::mpi   rlkernels/distributed/mpi.hpp: the library plus MPI (Debian: libopenmpi-dev)
#   rlkernels::nccl  rlkernels/distributed/nccl.hpp: the library plus NCCL and the CUDA runtime
#                    (NCCL ships with the CUDA Toolkit here; nvcc-compiled sources only)
# Included by the build and by the installed package's config (after rlkernels::rlkernels exists).
if(NOT TARGET rlkernels::mpi)
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    add_library(rlkernels_mpi INTERFACE IMPORTED GLOBAL)
    add_library(rlkernels::mpi ALIAS rlkernels_mpi)
    target_link_libraries(rlkernels_mpi INTERFACE rlkernels::rlkernels MPI::MPI_CXX)
  endif()
endif()

if(NOT TARGET rlkernels::nccl)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    find_path(RLK_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include)
    find_library(RLK_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} "${CUDAToolkit_LIBRARY_ROOT}/lib"
      ENV NCCL_HOME PATH_SUFFIXES lib lib64)
    if(RLK_NCCL_INCLUDE_DIR AND RLK_NCCL_LIBRARY)
      add_library(rlkernels_nccl INTERFACE IMPORTED GLOBAL)
      add_library(rlkernels::nccl ALIAS rlkernels_nccl)
      target_include_directories(rlkernels_nccl INTERFACE "${RLK_NCCL_INCLUDE_DIR}")
      target_link_libraries(rlkernels_nccl INTERFACE rlkernels::rlkernels "${RLK_NCCL_LIBRARY}" CUDA::cudart)
    endif()
  endif()
endif()
