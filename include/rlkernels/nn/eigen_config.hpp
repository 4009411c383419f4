// rlkernels/nn/eigen_config.hpp
// How rlkernels includes Eigen (host-side matrix products and QR of the nn layer). Included by the
// nn headers before anything else of Eigen's; the settings only take effect when rlkernels includes
// Eigen first in a translation unit.
#pragma once

// Eigen's own OpenMP-parallel GEMM would start threads under the serial backend and could change
// the bits with the thread count; rlkernels parallelises over fixed row chunks itself.
#if !defined(EIGEN_WORLD_VERSION) && !defined(EIGEN_DONT_PARALLELIZE)
#define EIGEN_DONT_PARALLELIZE
#endif
// rlkernels calls Eigen on the host only: under nvcc, Eigen's __host__ __device__ annotations
// would only bring warnings (20012, 20013), so they are turned off.
#if defined(__NVCC__) && !defined(EIGEN_WORLD_VERSION) && !defined(EIGEN_NO_CUDA)
#define EIGEN_NO_CUDA
#endif

#include <Eigen/Core>
#include <Eigen/QR>
