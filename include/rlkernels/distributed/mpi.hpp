// rlkernels/distributed/mpi.hpp
// rlkernels::communicator over MPI (tested with Open MPI from Debian's libopenmpi-dev; any MPI 3
// works). Link the `rlkernels::mpi` CMake target. Launch with mpirun or srun; every rank is one
// process with its own slice of the envs (docs/distributed.md).
//
// No call hangs: every collective is MPI's non-blocking form (MPI_Iallreduce, MPI_Iallgather,
// MPI_Ibcast, MPI_Igatherv, MPI_Ibarrier) tested until it completes or the deadline passes; then
// it throws distributed_error naming this rank and the operation. The constructor's join checks
// that every rank arrives and names those that do not. Device memory is passed to MPI directly
// when the MPI library is CUDA-aware (native reductions), and staged through pinned host memory
// otherwise (and for the ordered reduction, which adds the parts on the host).
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
#if RLK_HAS_CUDA
    if (pinned_) (void)cudaFreeHost(pinned_);
#endif
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
  /// The MPI communicator the collectives use (a duplicate of MPI_COMM_WORLD).
  MPI_Comm native_handle() const noexcept { return comm_; }
  communicator_stats stats() const noexcept override { return stats_; }

  void all_reduce_raw(void* data, std::size_t count, element_kind kind, reduce_op op, reduction_order order,
                      memory_location where, const char* what) override {
    if (count == 0) return;
    const timed t(stats_, count * detail::element_bytes(kind));
    if (where.device) {
#if RLK_HAS_CUDA
      const std::size_t bytes = count * detail::element_bytes(kind);
      if (cuda_aware_ && order == reduction_order::native) {
        RLK_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(where.stream)));
        host_all_reduce(data, count, kind, op, order, what);
        return;
      }
      void* host = pinned(bytes);
      RLK_CUDA_CHECK(cudaMemcpyAsync(host, data, bytes, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(where.stream)));
      RLK_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(where.stream)));
      host_all_reduce(host, count, kind, op, order, what);
      RLK_CUDA_CHECK(cudaMemcpyAsync(data, host, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(where.stream)));
      RLK_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(where.stream)));
      return;
#else
      fail("all_reduce", what, "device memory, but this build has no CUDA");
#endif
    }
    host_all_reduce(data, count, kind, op, order, what);
  }

  void broadcast_raw(void* data, std::size_t bytes, int root, memory_location where, const char* what) override {
    RLK_EXPECTS(root >= 0 && root < size_, std::invalid_argument, "rlkernels::mpi_communicator::broadcast of '", what,
                "': root ", root, " is not a rank (0 .. ", size_ - 1, ")");
    if (bytes == 0) return;
    const timed t(stats_, bytes);
    if (where.device) {
#if RLK_HAS_CUDA
      void* host = pinned(bytes);
      const auto stream = static_cast<cudaStream_t>(where.stream);
      RLK_CUDA_CHECK(cudaMemcpyAsync(host, data, bytes, cudaMemcpyDeviceToHost, stream));
      RLK_CUDA_CHECK(cudaStreamSynchronize(stream));
      host_broadcast(host, bytes, root, what);
      RLK_CUDA_CHECK(cudaMemcpyAsync(data, host, bytes, cudaMemcpyHostToDevice, stream));
      RLK_CUDA_CHECK(cudaStreamSynchronize(stream));
      return;
#else
      fail("broadcast", what, "device memory, but this build has no CUDA");
#endif
    }
    host_broadcast(data, bytes, root, what);
  }

  void all_gather_raw(const void* data, std::size_t bytes, void* out, const char* what) override {
    const timed t(stats_, bytes);
    gather_to_all(data, bytes, out, "all_gather", what);
  }

  std::vector<std::vector<std::uint8_t>> gather_bytes(const std::vector<std::uint8_t>& bytes, int root,
                                                      const char* what) override {
    RLK_EXPECTS(root >= 0 && root < size_, std::invalid_argument, "rlkernels::mpi_communicator::gather_bytes of '",
                what, "': root ", root, " is not a rank (0 .. ", size_ - 1, ")");
    const timed t(stats_, bytes.size());
    const std::uint64_t mine = bytes.size();
    std::vector<std::uint64_t> sizes(static_cast<std::size_t>(size_), 0);
    all_gather_raw(&mine, sizeof(mine), sizes.data(), what);
    std::uint64_t total = 0;
    std::vector<int> counts(static_cast<std::size_t>(size_), 0), displacements(static_cast<std::size_t>(size_), 0);
    for (int r = 0; r < size_; ++r) {
      if (sizes[std::size_t(r)] > std::uint64_t(INT_MAX) || total > std::uint64_t(INT_MAX) - sizes[std::size_t(r)])
        fail("gather_bytes", what, "more than INT_MAX bytes in all (MPI's int counts)");
      counts[std::size_t(r)] = int(sizes[std::size_t(r)]);
      displacements[std::size_t(r)] = int(total);
      total += sizes[std::size_t(r)];
    }
    std::vector<std::uint8_t> all(rank_ == root ? std::size_t(total) : 0);
    MPI_Request request;
    check(MPI_Igatherv(bytes.data(), int(mine), MPI_BYTE, all.data(), counts.data(), displacements.data(), MPI_BYTE,
                       root, comm_, &request),
          "gather_bytes", what);
    wait(request, "gather_bytes", what);
    std::vector<std::vector<std::uint8_t>> parts;
    if (rank_ != root) return parts;
    for (int r = 0; r < size_; ++r)
      parts.emplace_back(all.begin() + displacements[std::size_t(r)],
                         all.begin() + displacements[std::size_t(r)] + counts[std::size_t(r)]);
    return parts;
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

  void host_all_reduce(void* data, std::size_t count, element_kind kind, reduce_op op, reduction_order order,
                       const char* what) {
    const std::size_t eb = detail::element_bytes(kind);
    if (order == reduction_order::native) {
      constexpr std::size_t chunk = std::size_t(1) << 30;
      for (std::size_t first = 0; first < count; first += chunk) {
        const std::size_t n = std::min(chunk, count - first);
        MPI_Request request;
        check(MPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(data) + first * eb, int(n), datatype(kind), MPI_SUM,
                             comm_, &request),
              "all_reduce", what);
        wait(request, "all_reduce", what);
      }
      if (op == reduce_op::mean) detail::divide_host(data, count, kind, size_);
      return;
    }
    gathered_.resize(count * eb * std::size_t(size_));
    gather_to_all(data, count * eb, gathered_.data(), "all_reduce", what);
    detail::fold_host(gathered_.data(), count, kind, op, size_, data);
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

#if RLK_HAS_CUDA
  void* pinned(std::size_t bytes) {
    if (bytes > pinned_bytes_) {
      if (pinned_) RLK_CUDA_CHECK(cudaFreeHost(pinned_));
      pinned_ = nullptr;
      RLK_CUDA_CHECK(cudaMallocHost(&pinned_, bytes));
      pinned_bytes_ = bytes;
    }
    return pinned_;
  }
  void* pinned_ = nullptr;
  std::size_t pinned_bytes_ = 0;
#endif

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  double timeout_;
  bool owns_mpi_ = false, failed_ = false, cuda_aware_ = false;
  std::vector<std::uint8_t> gathered_;
  communicator_stats stats_;
};

}  // namespace rlkernels
