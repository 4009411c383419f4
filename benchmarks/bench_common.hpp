// benchmarks/bench_common.hpp
// What every rlkernels benchmark binary shares: the backend of this build variant, cached
// fixtures (built once per batch size, freed before the CUDA runtime shuts down), the machine's
// memory, and row registration with the same timing settings everywhere.
#pragma once

#include <rlkernels/core/backend.hpp>
#include <rlkernels/core/error.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
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

/// Options of the env-throughput binaries beyond Google Benchmark's own flags, for
/// benchmarks/compare.py (which measures every system over the same N, warm-up and timing):
///   --rlk_batch_sizes=1,16,256   the N to register rows for (default: the binary's own list)
///   --rlk_min_time=0.5           seconds per row and repetition (default: the binary's own)
///   --rlk_compare_warmup         warm each fixture up by compare_warmup_steps(N) steps (the
///                                driver's rule for every system) instead of the binary's own count
/// parse_options removes them from argv, so that benchmark::Initialize sees only its own flags.
struct options {
  std::vector<std::int64_t> batch_sizes;  // empty: the binary's defaults
  double min_time_s = 0;                  // 0: the binary's default
  bool compare_warmup = false;
};

/// The warm-up rule benchmarks/compare.py applies to every system: 128 steps, fewer for big
/// batches so that about 2^20 env-steps are spent (at least 8 steps).
inline int compare_warmup_steps(std::int64_t n) {
  const std::int64_t budget = std::int64_t(1) << 20;
  return int(std::max<std::int64_t>(8, std::min<std::int64_t>(128, budget / std::max<std::int64_t>(1, n))));
}

inline options& current_options() {
  static options o;
  return o;
}

/// Parses and removes the --rlk_* flags (see options); throws std::invalid_argument naming a bad one.
inline options& parse_options(int& argc, char** argv) {
  options& o = current_options();
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value_of = [&](const char* prefix) -> const char* {
      const std::size_t len = std::strlen(prefix);
      return arg.compare(0, len, prefix) == 0 ? argv[i] + len : nullptr;
    };
    if (const char* v = value_of("--rlk_batch_sizes=")) {
      o.batch_sizes.clear();
      std::string list = v;
      std::size_t pos = 0;
      while (pos <= list.size()) {
        const std::size_t comma = std::min(list.find(',', pos), list.size());
        const std::string item = list.substr(pos, comma - pos);
        char* end = nullptr;
        const long long n = std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || n < 1)
          throw std::invalid_argument("--rlk_batch_sizes: '" + item + "' is not a positive integer (expected e.g. 1,16,256)");
        o.batch_sizes.push_back(n);
        pos = comma + 1;
      }
    } else if (const char* v = value_of("--rlk_min_time=")) {
      char* end = nullptr;
      o.min_time_s = std::strtod(v, &end);
      if (*v == '\0' || *end != '\0' || !(o.min_time_s > 0))
        throw std::invalid_argument(std::string("--rlk_min_time: '") + v + "' is not a positive number of seconds");
    } else if (arg == "--rlk_compare_warmup") {
      o.compare_warmup = true;
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  argv[argc] = nullptr;
  return o;
}

/// parse_options for main(): reports a bad flag as `name: what` on stderr and returns false.
inline bool parse_options_or_report(int& argc, char** argv, const char* name) {
  try {
    parse_options(argc, argv);
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return false;
  }
}

/// The batch sizes to register: --rlk_batch_sizes, or the binary's defaults.
template <std::size_t K>
std::vector<std::int64_t> batch_sizes_or(const std::int64_t (&defaults)[K]) {
  const options& o = current_options();
  return o.batch_sizes.empty() ? std::vector<std::int64_t>(defaults, defaults + K) : o.batch_sizes;
}

/// Seconds per row: --rlk_min_time, or the binary's default.
inline double min_time_or(double default_s) { return current_options().min_time_s > 0 ? current_options().min_time_s : default_s; }

/// Warm-up steps for batch size n: compare_warmup_steps(n) under --rlk_compare_warmup, else the binary's own.
inline int warmup_or(std::int64_t n, int default_steps) {
  return current_options().compare_warmup ? compare_warmup_steps(n) : default_steps;
}

/// Registers a row over batch size n, timed in real time (the OpenMP and CUDA rows are
/// multithreaded/asynchronous) for at least min_time_s seconds.
inline void add_row(const std::string& name, void (*fn)(benchmark::State&), std::int64_t n, double min_time_s) {
  benchmark::RegisterBenchmark(name.c_str(), fn)->Arg(n)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(min_time_s);
}

/// The same for a row that takes its fixtures' warm-up step count as an extra argument.
inline void add_row(const std::string& name, void (*fn)(benchmark::State&, int), int warmup, std::int64_t n,
                    double min_time_s) {
  benchmark::RegisterBenchmark(name.c_str(), fn, warmup)
      ->Arg(n)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(min_time_s);
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
