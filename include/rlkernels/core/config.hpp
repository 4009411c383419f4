// rlkernels/core/config.hpp
// Compiler and platform configuration: the library's host/device function macro, the CUDA switch
// and the version. Every rlkernels header includes this first, so nothing depends on include order.
#pragma once

/// Major, minor and patch version of rlkernels.
#define RLKERNELS_VERSION_MAJOR 0
#define RLKERNELS_VERSION_MINOR 1
#define RLKERNELS_VERSION_PATCH 0

#if defined(__CUDACC__)
/// 1 when the translation unit is compiled by a CUDA compiler (the CUDA backend is available).
#define RLK_HAS_CUDA 1
/// Marks a function callable from host and device code; empty under a plain host compiler.
#define RLK_HOST_DEVICE __host__ __device__
/// Like RLK_HOST_DEVICE, and asks the compiler to inline.
#define RLK_INLINE __host__ __device__ __forceinline__
#else
#define RLK_HAS_CUDA 0
#define RLK_HOST_DEVICE
#if defined(_MSC_VER)
#define RLK_INLINE __forceinline
#else
#define RLK_INLINE inline __attribute__((always_inline))
#endif
#endif

#if defined(__CUDA_ARCH__)
/// In device code, keeps a large function out of line (the physics engine's stages: inlining
/// them into every caller multiplies nvcc's time and the kernel's size); nothing on the host.
#define RLK_DEVICE_NOINLINE __noinline__
#else
#define RLK_DEVICE_NOINLINE
#endif

#if defined(_OPENMP)
/// 1 when OpenMP is enabled for this translation unit (the OpenMP backend then runs in parallel).
#define RLK_HAS_OPENMP 1
#else
#define RLK_HAS_OPENMP 0
#endif

#if __cplusplus < 201703L && !defined(_MSVC_LANG)
#error "rlkernels needs C++17 or newer (-std=c++17)"
#endif
