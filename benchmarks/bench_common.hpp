// benchmarks/bench_common.hpp
// What every rlkernels benchmark binary shares: the backend of this build variant, cached
// fixtures (built once per batch size, freed before the CUDA runtime shuts down), the machine's
// memory, and row registration with the same timing settings everywhere.
#pragma once

#include <rlkernels/core/backend.hpp>
#include <rlkernels/core/error.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace rlk_bench {

#if defined(RLK_BACKEND_CUDA)
#if !RLK_HAS_CUDA
#error "rlkernels benchmarks: RLK_BACKEND_CUDA needs the file to be compiled by nvcc"
#endif
using bench_backend = rlkernels::cuda_backend;
#elif defined(RLK_BACKEND_OPENMP)
using bench_backend = rlkernels::openmp_backend;
#elif defined(RLK_BACKEND_SERIAL)
using bench_backend = rlkernels::serial_backend;
#else
#error "rlkernels benchmarks: define RLK_BACKEND_SERIAL, RLK_BACKEND_OPENMP or RLK_BACKEND_CUDA (rlk_add_variants does)"
#endif

/// Frees the cached fixtures; main calls release_fixtures() before returning, so that device
/// memory is released while the CUDA runtime is still up.
inline std::vector<void (*)()>& fixture_releasers() {
  static std::vector<void (*)()> releasers;
  return releasers;
}

inline void release_fixtures() {
  for (auto release : fixture_releasers()) release();
}

template <class Fixture>
std::unique_ptr<Fixture>& cached_fixture() {
  static std::unique_ptr<Fixture> cached;
  return cached;
}

/// Google Benchmark calls a benchmark function several times while it picks the iteration count;
/// keeping the last fixture of each kind avoids rebuilding it. Rows are registered N by N, so each
/// kind is built once per N. Builds Fixture(n, warmup) (Fixture has a member num_envs).
template <class Fixture>
Fixture& fixture_for(std::size_t n, int warmup) {
  std::unique_ptr<Fixture>& cached = cached_fixture<Fixture>();
  if (!cached) fixture_releasers().push_back([] { cached_fixture<Fixture>().reset(); });
  if (!cached || cached->num_envs != n) {
    cached.reset();  // free the previous one first: the big fixtures are gigabytes
    cached = std::make_unique<Fixture>(n, warmup);
  }
  return *cached;
}

/// Physical memory of the host in bytes (a large number where unknown).
inline double physical_memory_bytes() {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) return double(pages) * double(page_size);
#endif
  return 1e18;
}

/// Registers a row over batch size n, timed in real time (the OpenMP and CUDA rows are
/// multithreaded/asynchronous) for at least min_time_s seconds.
inline void add_row(const std::string& name, void (*fn)(benchmark::State&), std::int64_t n, double min_time_s) {
  benchmark::RegisterBenchmark(name.c_str(), fn)->Arg(n)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(min_time_s);
}

/// Adds the backend (and thread count or GPU name) to the benchmark context.
inline void add_backend_context() {
  benchmark::AddCustomContext("rlkernels_backend", rlkernels::backend_name(bench_backend{}));
#if defined(RLK_BACKEND_OPENMP) && RLK_HAS_OPENMP
  benchmark::AddCustomContext("omp_max_threads", std::to_string(omp_get_max_threads()));
#endif
#if defined(RLK_BACKEND_CUDA)
  int device = 0;
  cudaDeviceProp prop{};
  RLK_CUDA_CHECK(cudaGetDevice(&device));
  RLK_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  benchmark::AddCustomContext("cuda_device", prop.name);
#endif
}

/// The usual main() after the rows are registered: parses Google Benchmark's flags, adds the
/// backend context, runs the rows and frees the fixtures; reports an exception as `name: what`.
inline int run_registered_benchmarks(int argc, char** argv, const char* name) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    add_backend_context();
    benchmark::RunSpecifiedBenchmarks();
    release_fixtures();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}

}  // namespace rlk_bench
