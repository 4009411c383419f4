// rlkernels/distributed/mpi.hpp
// rlkernels::communicator over MPI (tested with Open MPI from Debian's libopenmpi-dev; any MPI 3
// works). Link the `rlkernels::mpi` CMake target. Launch with mpirun or srun; every rank is one
// process with its own slice of the envs (docs/distributed.md).
//
// No call hangs: every collective is MPI's non-blocking form (MPI_Iallreduce, MPI_Iallgather,
// MPI_Ibcast, MPI_Ibarrier; gather_bytes and scatter_bytes as chunks of MPI_Isend / MPI_Irecv
// between root and each rank) tested until it completes or the deadline passes; then
// it throws distributed_error naming this rank and the operation. The constructor's join checks
// that every rank arrives and names those that do not. Device memory is passed to MPI directly
// when the MPI library is CUDA-aware (native reductions; a mean then divides on the device), and
// staged through pinned host memory otherwise (and for the ordered reduction, which adds the parts
// on the host). The host never reads or writes device memory itself: every access goes through
// detail::mpi_device_memory (CUDA's copies and a kernel), which tests replace by a stand-in.
#pragma once

#include "../core/communicator.hpp"
#include "../core/error.hpp"

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // the C API only (Open MPI's deprecated C++ bindings warn)
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>  // MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support
#endif

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace rlkernels {
namespace detail {

/// What mpi_communicator does to device memory (the only ways it touches it): copies to and from
/// a host staging buffer, the mean's division, and lending it to a CUDA-aware MPI. The CUDA
/// implementation below is the default when compiled with CUDA; tests substitute a stand-in
/// whose "device memory" the host cannot read, so that a path that dereferences a device pointer
/// on the host crashes in the test as it would on a GPU (tests/distributed/mpi_test.cpp).
class mpi_device_memory {
 public:
  virtual ~mpi_device_memory() = default;
  /// A host buffer of at least `bytes` bytes for staging (reused; valid until the next call).
  virtual void* host_staging(std::size_t bytes) = 0;
  /// Waits until the work queued on `where.stream` is done (the data is ready for MPI).
  virtual void synchronize(const memory_location& where) = 0;
  /// `bytes` bytes from device memory at `device` to host memory at `host`; returns when done.
  virtual void copy_to_host(void* host, const void* device, std::size_t bytes, const memory_location& where) = 0;
  /// `bytes` bytes from host memory at `host` to device memory at `device`; returns when done.
  virtual void copy_to_device(void* device, const void* host, std::size_t bytes, const memory_location& where) = 0;
  /// data[i] = data[i] / ranks in the element type, on the device (divide_host's twin); returns when done.
  virtual void divide(void* data, std::size_t count, element_kind kind, int ranks, const memory_location& where) = 0;
  /// Brackets an MPI call handed device memory directly (a CUDA-aware MPI): lend = true before,
  /// false after. Nothing to do for CUDA; the tests' stand-in lets the MPI library read it then.
  virtual void lend_to_mpi(void* data, std::size_t bytes, bool lend) {
    (void)data, (void)bytes, (void)lend;
  }
};

#if RLK_HAS_CUDA
/// data[i] = data[i] / ranks (a mean after a CUDA-aware MPI's sum, on the device).
template <class T>
__global__ void mpi_divide_kernel(T* data, std::size_t count, int ranks) {
  const std::size_t stride = std::size_t(blockDim.x) * gridDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    data[i] = T(data[i] / T(ranks));
}

/// mpi_device_memory over the CUDA runtime: pinned staging memory (cudaMallocHost, grown as
/// needed, freed by the destructor), cudaMemcpyAsync on the buffer's stream, a division kernel.
class mpi_cuda_device_memory final : public mpi_device_memory {
 public:
  mpi_cuda_device_memory() = default;
  mpi_cuda_device_memory(const mpi_cuda_device_memory&) = delete;
  mpi_cuda_device_memory& operator=(const mpi_cuda_device_memory&) = delete;
  ~mpi_cuda_device_memory() override {
    if (pinned_) (void)cudaFreeHost(pinned_);
  }
  void* host_staging(std::size_t bytes) override {
    if (bytes > pinned_bytes_) {
      if (pinned_) RLK_CUDA_CHECK(cudaFreeHost(pinned_));
      pinned_ = nullptr;
      pinned_bytes_ = 0;
      RLK_CUDA_CHECK(cudaMallocHost(&pinned_, bytes));
      pinned_bytes_ = bytes;
    }
    return pinned_;
  }
  void synchronize(const memory_location& where) override { RLK_CUDA_CHECK(cudaStreamSynchronize(stream(where))); }
  void copy_to_host(void* host, const void* device, std::size_t bytes, const memory_location& where) override {
    RLK_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream(where)));
    synchronize(where);
  }
  void copy_to_device(void* device, const void* host, std::size_t bytes, const memory_location& where) override {
    RLK_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream(where)));
    synchronize(where);
  }
  void divide(void* data, std::size_t count, element_kind kind, int ranks, const memory_location& where) override {
    const device_guard guard(where.device_index);
    constexpr unsigned block = 256;
    const unsigned grid = grid_size_for(count, block);
    with_element_kind(kind, data, [&](auto* x) {
      using T = std::remove_pointer_t<decltype(x)>;
      mpi_divide_kernel<T><<<grid, block, 0, stream(where)>>>(x, count, ranks);
    });
    RLK_CUDA_CHECK(cudaGetLastError());
    synchronize(where);
  }

 private:
  static cudaStream_t stream(const memory_location& where) { return static_cast<cudaStream_t>(where.stream); }
  void* pinned_ = nullptr;
  std::size_t pinned_bytes_ = 0;
};
#endif

}  // namespace detail

/// @brief rlkernels::communicator over MPI_COMM_WORLD (a duplicate of it, so that the library's
/// messages never mix with the application's).
///
///     rlkernels::mpi_communicator comm(argc, argv);    // MPI_Init unless already initialised
///     rlkernels::ppo<Env, rlkernels::openmp_backend> agent(rlkernels::openmp, config, {}, comm);
///
/// Waiting: a pending operation is tested in a loop that sleeps between tests once the first
/// 100 microseconds have passed, so that ranks oversubscribing a few cores do not spin against
/// each other; every wait ends at the deadline (timeout_seconds()).
class mpi_communicator final : public communicator {
 public:
  /// @brief Initialises MPI if nobody has (MPI_Init_thread, MPI_THREAD_FUNNELED; finalised by the
  /// destructor then), duplicates MPI_COMM_WORLD, and joins: every rank announces itself to rank
  /// 0 within `timeout_seconds`.
  /// @param argc, argv main's, for MPI_Init_thread (may be null)
  /// @param timeout_seconds how long any collective waits for the other ranks, > 0
  /// @throw std::invalid_argument on a bad timeout; distributed_error if MPI fails or a rank does
  ///        not join in time (rank 0's message lists the ranks that did not arrive)
  explicit mpi_communicator(int* argc = nullptr, char*** argv = nullptr, double timeout_seconds = 60.0)
      : timeout_(timeout_seconds) {
    RLK_EXPECTS(timeout_seconds > 0, std::invalid_argument,
                "rlkernels::mpi_communicator: timeout_seconds must be > 0, got ", timeout_seconds);
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        throw distributed_error(-1, "rlkernels::mpi_communicator: MPI_Init_thread failed");
      owns_mpi_ = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // The join first, on MPI_COMM_WORLD: duplicating the communicator is itself collective.
    join(MPI_COMM_WORLD);
    MPI_Request request;
    check(MPI_Comm_idup(MPI_COMM_WORLD, &comm_, &request), "MPI_Comm_idup", "MPI_COMM_WORLD");
    wait(request, "MPI_Comm_idup", "MPI_COMM_WORLD");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    cuda_aware_ = MPIX_Query_cuda_support() == 1;
#endif
  }
  /// @copydoc mpi_communicator(int*, char***, double)
  mpi_communicator(int& argc, char**& argv, double timeout_seconds = 60.0)
      : mpi_communicator(&argc, &argv, timeout_seconds) {}

  mpi_communicator(const mpi_communicator&) = delete;
  mpi_communicator& operator=(const mpi_communicator&) = delete;

  /// Frees the duplicate and finalises MPI if the constructor initialised it, unless a collective
  /// failed (finalising then could wait forever for a dead peer).
  ~mpi_communicator() override {
    if (failed_) return;
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi_ && !finalized) MPI_Finalize();
  }

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  std::string name() const override { return "MPI"; }
  double timeout_seconds() const noexcept override { return timeout_; }
  /// True when the MPI library says it takes CUDA device pointers (Open MPI's MPIX_Query_cuda_support).
  bool cuda_aware() const noexcept { return cuda_aware_; }
  /// @brief For tests: replaces how device memory is reached (CUDA's runtime when compiled with
  /// CUDA, nothing otherwise) by `memory`, which must outlive the communicator's use of it, and
  /// says whether MPI takes device pointers directly (as a CUDA-aware MPI does).
  void use_device_memory_for_testing(detail::mpi_device_memory& memory, bool mpi_takes_device_pointers) noexcept {
    device_memory_ = &memory;
    cuda_aware_ = mpi_takes_device_pointers;
  }
  /// The MPI communicator the collectives use (a duplicate of MPI_COMM_WORLD).
  MPI_Comm native_handle() const noexcept { return comm_; }
  communicator_stats stats() const noexcept override { return stats_; }

  void all_reduce_raw(void* data, std::size_t count, element_kind kind, reduce_op op, reduction_order order,
                      memory_location where, const char* what) override {
    if (count == 0) return;
    const std::size_t bytes = count * detail::element_bytes(kind);
    const timed t(stats_, bytes);
    if (!where.device) {
      host_all_reduce(data, count, kind, op, order, what);
      return;
    }
    detail::mpi_device_memory& device = device_memory("all_reduce", what);
    if (cuda_aware_ && order == reduction_order::native) {
      // MPI sums in device memory; the mean's division runs on the device too.
      device.synchronize(where);
      device.lend_to_mpi(data, bytes, true);
      native_sum(data, count, kind, what);  // on failure it throws and the communicator is unusable
      device.lend_to_mpi(data, bytes, false);
      if (op == reduce_op::mean) device.divide(data, count, kind, size_, where);
      return;
    }
    void* host = device.host_staging(bytes);
    device.copy_to_host(host, data, bytes, where);
    host_all_reduce(host, count, kind, op, order, what);
    device.copy_to_device(data, host, bytes, where);
  }

  void broadcast_raw(void* data, std::size_t bytes, int root, memory_location where, const char* what) override {
    RLK_EXPECTS(root >= 0 && root < size_, std::invalid_argument, "rlkernels::mpi_communicator::broadcast of '", what,
                "': root ", root, " is not a rank (0 .. ", size_ - 1, ")");
    if (bytes == 0) return;
    const timed t(stats_, bytes);
    if (!where.device) {
      host_broadcast(data, bytes, root, what);
      return;
    }
    detail::mpi_device_memory& device = device_memory("broadcast", what);
    void* host = device.host_staging(bytes);
    device.copy_to_host(host, data, bytes, where);
    host_broadcast(host, bytes, root, what);
    device.copy_to_device(data, host, bytes, where);
  }

  void all_gather_raw(const void* data, std::size_t bytes, void* out, const char* what) override {
    const timed t(stats_, bytes);
    gather_to_all(data, bytes, out, "all_gather", what);
  }

  // ---- gather and scatter of byte strings, in chunks (MPI counts are int) ----

  /// @brief Root receives every rank's bytes in rank order (the others an empty list): the sizes
  /// are all-gathered (8 bytes per rank), then every rank sends its bytes to root alone in
  /// messages of at most chunk_bytes(), the ranks' k-th chunks in flight together. Any total size
  /// (beyond MPI's int counts) works. Root holds every part once; no rank receives another's.
  /// @throw std::invalid_argument for a root that is not a rank; distributed_error on a failure
  ///        or timeout
  std::vector<std::vector<std::uint8_t>> gather_bytes(const std::vector<std::uint8_t>& bytes, int root,
                                                      const char* what) override {
    RLK_EXPECTS(root >= 0 && root < size_, std::invalid_argument, "rlkernels::mpi_communicator::gather_bytes of '",
                what, "': root ", root, " is not a rank (0 .. ", size_ - 1, ")");
    const timed t(stats_, bytes.size());
    const std::uint64_t mine = bytes.size();
    std::vector<std::uint64_t> sizes(static_cast<std::size_t>(size_), 0);
    all_gather_raw(&mine, sizeof(mine), sizes.data(), what);
    std::vector<std::vector<std::uint8_t>> parts;
    if (rank_ == root) {
      parts.resize(std::size_t(size_));
      for (int r = 0; r < size_; ++r)
        if (r != root) parts[std::size_t(r)].resize(std::size_t(sizes[std::size_t(r)]));
    }
    const std::uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
    for (std::uint64_t first = 0; first < largest; first += chunk_bytes_) {
      std::vector<MPI_Request> requests;
      if (rank_ == root) {
        for (int r = 0; r < size_; ++r) {
          const std::uint64_t size = sizes[std::size_t(r)];
          if (r == root || size <= first) continue;
          requests.push_back(MPI_REQUEST_NULL);
          check(MPI_Irecv(parts[std::size_t(r)].data() + first, chunk_count(size - first), MPI_BYTE, r, gather_tag,
                          comm_, &requests.back()),
                "gather_bytes", what);
        }
      } else if (mine > first) {
        requests.push_back(MPI_REQUEST_NULL);
        check(MPI_Isend(bytes.data() + first, chunk_count(mine - first), MPI_BYTE, root, gather_tag, comm_,
                        &requests.back()),
              "gather_bytes", what);
      }
      wait_all(requests, "gather_bytes", what);
    }
    if (rank_ == root) parts[std::size_t(root)] = bytes;
    return parts;
  }

  /// @brief Root sends rank r the bytes of `parts[r]` and every rank returns its own: the sizes
  /// are broadcast (8 bytes per rank), then root sends each rank its part alone in messages of at
  /// most chunk_bytes(), the ranks' k-th chunks in flight together. Any size works; no rank
  /// receives another's part.
  /// @throw std::invalid_argument (every rank) if root's `parts` does not have size() entries or
  ///        root is not a rank; distributed_error on a failure or timeout
  std::vector<std::uint8_t> scatter_bytes(const std::vector<view<const std::uint8_t>>& parts, int root,
                                          const char* what) override {
    RLK_EXPECTS(root >= 0 && root < size_, std::invalid_argument, "rlkernels::mpi_communicator::scatter_bytes of '",
                what, "': root ", root, " is not a rank (0 .. ", size_ - 1, ")");
    std::vector<std::uint64_t> sizes = detail::scatter_sizes(parts, std::size_t(size_), rank_ == root);
    host_broadcast(sizes.data(), sizes.size() * sizeof(std::uint64_t), root, what);
    detail::check_scatter_sizes(sizes, parts.size(), std::size_t(size_), rank_ == root, what);
    const std::uint64_t own = sizes[std::size_t(rank_)];
    std::uint64_t sent = 0;
    if (rank_ == root)
      for (std::uint64_t s : sizes) sent += s;
    const timed t(stats_, rank_ == root ? sent : own);
    std::vector<std::uint8_t> mine(static_cast<std::size_t>(rank_ == root ? 0 : own));
    const std::uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
    for (std::uint64_t first = 0; first < largest; first += chunk_bytes_) {
      std::vector<MPI_Request> requests;
      if (rank_ == root) {
        for (int r = 0; r < size_; ++r) {
          const std::uint64_t size = sizes[std::size_t(r)];
          if (r == root || size <= first) continue;
          requests.push_back(MPI_REQUEST_NULL);
          check(MPI_Isend(parts[std::size_t(r)].data() + first, chunk_count(size - first), MPI_BYTE, r, scatter_tag,
                          comm_, &requests.back()),
                "scatter_bytes", what);
        }
      } else if (own > first) {
        requests.push_back(MPI_REQUEST_NULL);
        check(MPI_Irecv(mine.data() + first, chunk_count(own - first), MPI_BYTE, root, scatter_tag, comm_,
                        &requests.back()),
              "scatter_bytes", what);
      }
      wait_all(requests, "scatter_bytes", what);
    }
    if (rank_ == root) mine.assign(parts[std::size_t(root)].begin(), parts[std::size_t(root)].end());
    return mine;
  }

  /// Largest message (bytes) of one MPI call in gather_bytes and scatter_bytes; longer parts go in
  /// several. Default 1 GiB.
  std::size_t chunk_bytes() const noexcept { return std::size_t(chunk_bytes_); }
  /// @brief Sets chunk_bytes(): every rank must set the same value (the receiver expects the
  /// sender's chunks). Tests lower it to cover the chunking without gigabytes of data.
  /// @throw std::invalid_argument unless 1 <= bytes <= INT_MAX
  void set_chunk_bytes(std::size_t bytes) {
    RLK_EXPECTS(bytes >= 1 && bytes <= std::size_t(INT_MAX), std::invalid_argument,
                "rlkernels::mpi_communicator::set_chunk_bytes: ", bytes, " is not in 1 .. INT_MAX");
    chunk_bytes_ = bytes;
  }

  void barrier(const char* what) override {
    const timed t(stats_, 0);
    MPI_Request request;
    check(MPI_Ibarrier(comm_, &request), "barrier", what);
    wait(request, "barrier", what);
  }

  [[noreturn]] void abort(int code) noexcept override {
    failed_ = true;
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; in case an implementation does
  }

 private:
  void gather_to_all(const void* data, std::size_t bytes, void* out, const char* op, const char* what) {
    RLK_EXPECTS(bytes <= std::size_t(INT_MAX), std::invalid_argument, "rlkernels::mpi_communicator::", op, " of '",
                what, "': ", bytes, " bytes per rank is over MPI's int count");
    if (bytes == 0) return;
    MPI_Request request;
    check(MPI_Iallgather(data, int(bytes), MPI_BYTE, out, int(bytes), MPI_BYTE, comm_, &request), op, what);
    wait(request, op, what);
  }

  static MPI_Datatype datatype(element_kind kind) {
    switch (kind) {
      case element_kind::f32: return MPI_FLOAT;
      case element_kind::f64: return MPI_DOUBLE;
      default: return MPI_UINT64_T;
    }
  }

  /// In-place MPI_SUM over the ranks (host memory, or device memory for a CUDA-aware MPI).
  void native_sum(void* data, std::size_t count, element_kind kind, const char* what) {
    const std::size_t eb = detail::element_bytes(kind);
    constexpr std::size_t chunk = std::size_t(1) << 30;
    for (std::size_t first = 0; first < count; first += chunk) {
      const std::size_t n = std::min(chunk, count - first);
      MPI_Request request;
      check(MPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(data) + first * eb, int(n), datatype(kind), MPI_SUM,
                           comm_, &request),
            "all_reduce", what);
      wait(request, "all_reduce", what);
    }
  }

  /// All-reduce of host memory.
  void host_all_reduce(void* data, std::size_t count, element_kind kind, reduce_op op, reduction_order order,
                       const char* what) {
    const std::size_t eb = detail::element_bytes(kind);
    if (order == reduction_order::native) {
      native_sum(data, count, kind, what);
      if (op == reduce_op::mean) detail::divide_host(data, count, kind, size_);
      return;
    }
    gathered_.resize(count * eb * std::size_t(size_));
    gather_to_all(data, count * eb, gathered_.data(), "all_reduce", what);
    detail::fold_host(gathered_.data(), count, kind, op, size_, data);
  }

  // ---- gather_bytes' and scatter_bytes' chunks ----
  static constexpr int gather_tag = 21069, scatter_tag = 21070;  // within the 32767 every MPI allows

  /// The count of the next chunk of a part with `left` bytes to go.
  int chunk_count(std::uint64_t left) const { return int(std::min<std::uint64_t>(left, chunk_bytes_)); }

  /// Waits for every request (in flight together) until one deadline.
  void wait_all(std::vector<MPI_Request>& requests, const char* op, const char* what) {
    const auto deadline = clock::now() + seconds(timeout_);
    for (MPI_Request& request : requests)
      if (!wait_until(request, deadline))
        fail(op, what,
             "timed out after " + format_seconds() + " waiting for the other ranks (a rank died, hangs, or called the "
             "collectives in another order)");
  }

  void host_broadcast(void* data, std::size_t bytes, int root, const char* what) {
    constexpr std::size_t chunk = std::size_t(1) << 30;
    for (std::size_t first = 0; first < bytes; first += chunk) {
      MPI_Request request;
      check(MPI_Ibcast(static_cast<char*>(data) + first, int(std::min(chunk, bytes - first)), MPI_BYTE, root, comm_,
                       &request),
            "broadcast", what);
      wait(request, "broadcast", what);
    }
  }

  /// Every rank sends a message to rank 0, which answers all once every rank has arrived: rank 0
  /// can then name the ranks that did not (a barrier could not).
  void join(MPI_Comm world) {
    constexpr int tag = 21068;  // within the 32767 every MPI allows
    const int one = 1;
    if (rank_ == 0) {
      std::vector<int> hello(static_cast<std::size_t>(size_), 0);
      std::vector<MPI_Request> requests(std::size_t(size_), MPI_REQUEST_NULL);
      for (int r = 1; r < size_; ++r)
        check(MPI_Irecv(&hello[std::size_t(r)], 1, MPI_INT, r, tag, world, &requests[std::size_t(r)]), "join",
              "the ranks' announcements");
      const auto deadline = clock::now() + seconds(timeout_);
      for (int r = 1; r < size_; ++r) {
        if (!wait_until(requests[std::size_t(r)], deadline)) {
          std::ostringstream missing;
          int n = 0;
          for (int q = r; q < size_; ++q) {
            int done = 0;
            if (requests[std::size_t(q)] != MPI_REQUEST_NULL) MPI_Test(&requests[std::size_t(q)], &done, MPI_STATUS_IGNORE);
            if (!done) missing << (n++ ? ", " : "") << q;
          }
          fail("join", "the ranks' announcements",
               "rank(s) " + missing.str() + " did not join within " + format_seconds() +
                   " (not started, crashed at start-up, or started in another job)");
        }
      }
    } else {
      MPI_Request request;
      check(MPI_Isend(&one, 1, MPI_INT, 0, tag, world, &request), "join", "this rank's announcement");
      wait(request, "join", "this rank's announcement to rank 0");
    }
    int go = 1;
    MPI_Request request;
    check(MPI_Ibcast(&go, 1, MPI_INT, 0, world, &request), "join", "rank 0's confirmation that every rank joined");
    wait(request, "join", "rank 0's confirmation that every rank joined");
  }

  using clock = std::chrono::steady_clock;
  /// Counts one collective and its time into stats_ (nested ones count once: the outer's).
  struct timed {
    communicator_stats& s;
    clock::time_point start = clock::now();
    bool outer;
    timed(communicator_stats& stats, std::size_t bytes) : s(stats), outer(depth()++ == 0) {
      if (outer) {
        ++s.calls;
        s.bytes += bytes;
      }
    }
    ~timed() {
      --depth();
      if (outer) s.seconds += std::chrono::duration<double>(clock::now() - start).count();
    }
    static int& depth() {
      static thread_local int d = 0;
      return d;
    }
  };

  static clock::duration seconds(double s) {
    return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s));
  }

  bool wait_until(MPI_Request& request, clock::time_point deadline) {
    const auto start = clock::now();
    for (;;) {
      int done = 0;
      if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
      if (done) return true;
      const auto now = clock::now();
      if (now >= deadline) return false;
      if (now - start > std::chrono::microseconds(100)) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void wait(MPI_Request& request, const char* op, const char* what) {
    if (wait_until(request, clock::now() + seconds(timeout_))) return;
    fail(op, what,
         "timed out after " + format_seconds() + " waiting for the other ranks (a rank died, hangs, or called the "
         "collectives in another order)");
  }

  std::string format_seconds() const {
    std::ostringstream s;
    s << timeout_ << " s";
    return s.str();
  }

  void check(int code, const char* op, const char* what) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    fail(op, what, std::string("MPI error: ") + std::string(text, std::size_t(length)));
  }

  [[noreturn]] void fail(const char* op, const char* what, const std::string& why) {
    failed_ = true;
    throw distributed_error(rank_, "rlkernels::mpi_communicator: " + where_am_i() + ": " + op + " of '" + what +
                                       "': " + why);
  }

  /// How device memory is reached: CUDA's runtime, a test's stand-in, or nothing (refused).
  detail::mpi_device_memory& device_memory(const char* op, const char* what) {
    if (device_memory_ == nullptr) fail(op, what, "device memory, but this build has no CUDA");
    return *device_memory_;
  }

#if RLK_HAS_CUDA
  detail::mpi_cuda_device_memory cuda_memory_;
  detail::mpi_device_memory* device_memory_ = &cuda_memory_;
#else
  detail::mpi_device_memory* device_memory_ = nullptr;
#endif

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  double timeout_;
  bool owns_mpi_ = false, failed_ = false, cuda_aware_ = false;
  std::vector<std::uint8_t> gathered_;
  communicator_stats stats_;
  std::uint64_t chunk_bytes_ = std::uint64_t(1) << 30;  // gather_bytes' and scatter_bytes' largest message
};

}  // namespace rlkernels
