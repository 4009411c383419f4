# Helpers that build one source for several backends (project-internal; not installed).
#
# rlk_add_variants(<name> SOURCE <file> [CUDA] [LIBRARIES <libs...>] [DEFINITIONS <defs...>]
#                  [OPTIONS <compile options...>] [HOST_VARIANTS <serial|openmp...>])
#   Creates <name>_serial and <name>_openmp (those in RLK_HOST_VARIANTS) from <file>, compiled with
#   RLK_BACKEND_SERIAL or RLK_BACKEND_OPENMP defined, and, with CUDA given and nvcc present, <name>_cuda from a generated
#   .cu file that includes <file>, compiled with RLK_BACKEND_CUDA. The list of targets made is
#   returned in <name>_TARGETS. Every <name>_cuda also becomes a dependency of the target
#   ${RLK_CUDA_AGGREGATE} (default rlk_cuda_variants: build it to compile the CUDA variants of the
#   tests and nothing else; the benchmarks' join rlk_cuda_benchmarks).
function(rlk_add_variants name)
  cmake_parse_arguments(ARG "CUDA" "SOURCE" "LIBRARIES;DEFINITIONS;OPTIONS;HOST_VARIANTS" ${ARGN})
  get_filename_component(source "${ARG_SOURCE}" ABSOLUTE)
  set(targets "")
  set(host_variants ${RLK_HOST_VARIANTS})
  if(ARG_HOST_VARIANTS)
    # Only those of the requested ones that this build makes at all.
    set(host_variants "")
    foreach(backend IN LISTS ARG_HOST_VARIANTS)
      if(backend IN_LIST RLK_HOST_VARIANTS)
        list(APPEND host_variants ${backend})
      endif()
    endforeach()
  endif()
  foreach(backend IN LISTS host_variants)
    string(TOUPPER ${backend} upper)
    add_executable(${name}_${backend} "${source}")
    target_compile_definitions(${name}_${backend} PRIVATE RLK_BACKEND_${upper} ${ARG_DEFINITIONS})
    target_link_libraries(${name}_${backend} PRIVATE rlkernels::rlkernels ${ARG_LIBRARIES})
    target_compile_options(${name}_${backend} PRIVATE ${ARG_OPTIONS})
    if(RLK_USE_BLAS)
      target_link_libraries(${name}_${backend} PRIVATE rlk_blas)
    endif()
    list(APPEND targets ${name}_${backend})
  endforeach()
  if(ARG_CUDA AND RLK_HAVE_CUDA)
    set(cu "${CMAKE_CURRENT_BINARY_DIR}/cuda/${name}.cu")
    file(CONFIGURE OUTPUT "${cu}" CONTENT "// Generated: the CUDA variant of ${ARG_SOURCE}\n#include \"${source}\"\n")
    add_executable(${name}_cuda "${cu}")
    target_compile_definitions(${name}_cuda PRIVATE RLK_BACKEND_CUDA ${ARG_DEFINITIONS})
    # CUDA::cublas explicitly: a target that also links C++ objects (Catch2's main) links with the
    # C++ linker, where the library's $<LINK_LANGUAGE:CUDA> condition does not hold.
    target_link_libraries(${name}_cuda PRIVATE rlkernels::rlkernels ${ARG_LIBRARIES} CUDA::cublas)
    target_include_directories(${name}_cuda PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
    target_compile_options(${name}_cuda PRIVATE ${ARG_OPTIONS})
    # A host-only function called from host/device code is only a warning in nvcc; make it an
    # error here so that a missing RLK_HOST_DEVICE cannot slip through (20011, 20013, 20014).
    target_compile_options(${name}_cuda PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:--extended-lambda --diag-error=20011,20013,20014>)
    list(APPEND targets ${name}_cuda)
    # The aggregate this directory's CUDA variants join (RLK_CUDA_AGGREGATE, default
    # rlk_cuda_variants: the compile check CI runs; the benchmarks set rlk_cuda_benchmarks).
    set(aggregate rlk_cuda_variants)
    if(RLK_CUDA_AGGREGATE)
      set(aggregate ${RLK_CUDA_AGGREGATE})
    endif()
    if(NOT TARGET ${aggregate})
      add_custom_target(${aggregate})
    endif()
    add_dependencies(${aggregate} ${name}_cuda)
  endif()
  set(${name}_TARGETS ${targets} PARENT_SCOPE)
endfunction()

# rlk_speed_options(<target>): the build's speed options for a host executable that is measured
# (training examples and benchmarks): -march=native -fno-math-errno with RLK_NATIVE_ARCH, Eigen on
# BLAS with RLK_USE_BLAS. Never -ffast-math: the tanh-Gaussian's stable log-probabilities and the
# NaN checks need IEEE semantics (with -Ofast, SAC on Pendulum-v1 stops learning).
function(rlk_speed_options target)
  if(RLK_NATIVE_ARCH)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-march=native -fno-math-errno>)
  endif()
  if(RLK_USE_BLAS)
    target_link_libraries(${target} PRIVATE rlk_blas)
  endif()
endfunction()
