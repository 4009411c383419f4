// rlkernels/distributed/nccl.hpp
// rlkernels::communicator over NCCL: one process per GPU, collectives on device memory. Compile
// with nvcc (the class exists only when RLK_HAS_CUDA) and link libnccl (-lnccl). Under a host
// compiler this header declares nothing.
//
// Start-up: rank 0 makes the NCCL unique id and hands it to the others, under MPI through an
// mpi_communicator's broadcast, without MPI (torchrun, srun) at one TCP address
// (rendezvous.hpp; launcher.hpp's nccl_comm_id_for: MASTER_ADDR:MASTER_PORT + 1 unless
// NCCL_COMM_ID names one). When NCCL_COMM_ID is set in the environment, NCCL's own bootstrap
// meets there instead. The process environment is never written. NCCL is
// initialised non-blocking (ncclConfig_t::blocking = 0) and every wait, the initialisation's
// included, polls ncclCommGetAsyncError and the stream until done or the deadline: then the
// communicator is aborted (ncclCommAbort) and the call throws distributed_error naming this rank
// and the operation. No call hangs on a dead or missing peer.
#pragma once

#include "../core/config.hpp"

#if RLK_HAS_CUDA

#include "../core/backend.hpp"
#include "../core/communicator.hpp"
#include "../core/error.hpp"
#include "launcher.hpp"
#include "rendezvous.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace rlkernels {
namespace detail {

/// out[i] = ((parts[i] + parts[count + i]) + parts[2 count + i]) + ... over `ranks` parts, then
/// divided by `ranks` when `mean`: the device twin of fold_in_order (same additions, same order,
/// so the same bits as the host fold and as one process adding the parts; compile without
/// --use_fast_math, whose approximate division would differ).
template <class T>
__global__ void nccl_fold_in_order_kernel(const T* parts, std::size_t count, int ranks, bool mean, T* out) {
  const std::size_t stride = std::size_t(blockDim.x) * gridDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    T s = parts[i];
    for (int r = 1; r < ranks; ++r) s = T(s + parts[std::size_t(r) * count + i]);
    out[i] = mean ? T(s / T(ranks)) : s;
  }
}

/// data[i] = data[i] / ranks (the mean of a native all-reduce, after NCCL's sum).
template <class T>
__global__ void nccl_divide_kernel(T* data, std::size_t count, int ranks) {
  const std::size_t stride = std::size_t(blockDim.x) * gridDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    data[i] = T(data[i] / T(ranks));
}

/// A device allocation that only grows (cudaMalloc on its device), freed by the destructor.
class nccl_device_scratch {
 public:
  explicit nccl_device_scratch(int device) noexcept : device_(device) {}
  nccl_device_scratch(const nccl_device_scratch&) = delete;
  nccl_device_scratch& operator=(const nccl_device_scratch&) = delete;
  ~nccl_device_scratch() { release(); }
  /// At least `bytes` bytes (the device must be current).
  void* ensure(std::size_t bytes) {
    if (bytes > bytes_ || data_ == nullptr) {
      release();
      RLK_CUDA_CHECK(cudaMalloc(&data_, std::max<std::size_t>(bytes, 256)));
      bytes_ = std::max<std::size_t>(bytes, 256);
    }
    return data_;
  }

 private:
  void release() noexcept {
    if (data_ == nullptr) return;
    device_guard guard(device_, std::nothrow);
    const cudaError_t status = cudaFree(data_);
    if (status != cudaSuccess) record_deferred_cuda_error(status, "cudaFree (rlkernels::nccl_communicator scratch)",
                                                          __FILE__, __LINE__);
    data_ = nullptr;
    bytes_ = 0;
  }
  int device_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// The communicator's own stream (for staging host memory), destroyed by the destructor.
class nccl_owned_stream {
 public:
  nccl_owned_stream() = default;
  nccl_owned_stream(const nccl_owned_stream&) = delete;
  nccl_owned_stream& operator=(const nccl_owned_stream&) = delete;
  ~nccl_owned_stream() {
    if (stream_ == nullptr) return;
    device_guard guard(device_, std::nothrow);
    (void)cudaStreamDestroy(stream_);
  }
  void create(int device) {
    device_ = device;
    RLK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  cudaStream_t get() const noexcept { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
};

/// The NCCL communicator handle: finalised and destroyed when healthy (waiting at most the
/// timeout for the finalisation), aborted when a collective failed.
struct nccl_comm_handle {
  ncclComm_t comm = nullptr;
  int device = 0;
  double timeout_seconds = 0;
  bool failed = false;

  nccl_comm_handle() = default;
  nccl_comm_handle(const nccl_comm_handle&) = delete;
  nccl_comm_handle& operator=(const nccl_comm_handle&) = delete;

  /// ncclCommAbort (never blocks on the peers); the handle is gone after.
  void abort() noexcept {
    failed = true;
    if (comm == nullptr) return;
    (void)ncclCommAbort(comm);
    comm = nullptr;
  }

  ~nccl_comm_handle() {
    if (comm == nullptr) return;
    device_guard guard(device, std::nothrow);
    if (failed) {
      abort();
      return;
    }
    ncclResult_t result = ncclCommFinalize(comm);
    if (result == ncclSuccess || result == ncclInProgress) {
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(timeout_seconds));
      ncclResult_t state = ncclInProgress;
      while (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclInProgress &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      if (state == ncclSuccess) {
        (void)ncclCommDestroy(comm);
        comm = nullptr;
        return;
      }
    }
    abort();
  }
};

}  // namespace detail

/// @brief rlkernels::communicator over NCCL: rank r drives one CUDA device; collectives run on
/// that device with NCCL (NVLink, PCIe, InfiniBand or sockets, as NCCL finds them).
///
///     auto env = rlkernels::launcher_environment::from_env();     // torchrun's or srun's variables
///     rlkernels::nccl_communicator comm(*env);                     // cudaSetDevice(local rank)
///     rlkernels::cuda_backend backend{...};                        // on that device
///
/// Every collective is blocking: it enqueues NCCL's operation on the buffer's stream (device
/// memory) or on the communicator's own stream (host memory, staged through a device scratch
/// buffer), then waits for that stream, polling ncclCommGetAsyncError and cudaStreamQuery
/// (spinning for 100 microseconds, then sleeping 50 microseconds between polls) until done or
/// the deadline (timeout_seconds()). So each costs one stream synchronisation beyond NCCL's
/// transfer. After a distributed_error the communicator is aborted and unusable: end the
/// process (abort()). One thread at a time may call it.
class nccl_communicator final : public communicator {
 public:
  /// @brief Joins a job started without MPI (torchrun, srun, or the same variables set by hand):
  /// makes env.local_rank the calling thread's CUDA device (cudaSetDevice, left current); rank 0
  /// makes the NCCL unique id (ncclGetUniqueId) and hands it to the other ranks at
  /// nccl_comm_id_for(env) (rank 0 listens there for one connection per rank, the others connect,
  /// retrying until it listens: detail::rendezvous_broadcast), then every rank initialises NCCL
  /// with it. When NCCL_COMM_ID is set in the process environment, NCCL's own bootstrap meets there
  /// instead (every rank's ncclGetUniqueId reads it and gives the same id; rank 0's NCCL listens).
  /// The process environment is only read, never written, so other threads may use it meanwhile.
  /// No port of the launcher's is touched (torchrun's agent holds MASTER_PORT). Costs the hand-over
  /// (one connection per rank to rank 0) and NCCL's initialisation (typically 0.1 .. a few
  /// seconds), both within `timeout_seconds`. With one rank no address is needed.
  /// @param env this rank's place in the job (launcher_environment::from_env())
  /// @param timeout_seconds how long any call waits for the other ranks, > 0
  /// @throw std::invalid_argument on a bad env or timeout, a local rank with no CUDA device, or no
  ///        address to meet at (nccl_comm_id_for says what to set); cuda_error if CUDA fails;
  ///        distributed_error if the hand-over or NCCL's initialisation fails or times out (a rank
  ///        that never starts, or rank 0 unable to listen at the address)
  explicit nccl_communicator(const launcher_environment& env, double timeout_seconds = 60.0)
      : rank_(env.rank), size_(env.world_size), device_(env.local_rank), timeout_(timeout_seconds),
        staging_(env.local_rank), gathered_(env.local_rank) {
    check_arguments("launcher_environment: the local rank");
    const auto deadline = deadline_from_now();
    const detail::nccl_bootstrap_plan plan = detail::plan_nccl_bootstrap(env, std::getenv("NCCL_COMM_ID"));
    RLK_CUDA_CHECK(cudaSetDevice(device_));
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    if (plan.route != detail::nccl_id_route::rendezvous) {
      // One rank, or NCCL_COMM_ID in the environment: NCCL reads it in ncclGetUniqueId (the same
      // id on every rank) and again in the initialisation (rank 0 listens there).
      const ncclResult_t result = ncclGetUniqueId(&id);
      if (result != ncclSuccess)
        fail_nccl("init", "the NCCL unique id", result,
                  plan.address.empty() ? std::string("ncclGetUniqueId failed")
                                       : "ncclGetUniqueId failed for NCCL_COMM_ID=" + plan.address +
                                             " (not host:port, or the host does not resolve)");
    } else {
      // Rank 0's id (and its ncclGetUniqueId result) handed to every rank at the address.
      std::vector<std::uint8_t> packet(sizeof(std::int32_t) + sizeof(ncclUniqueId), 0);
      if (rank_ == 0) {
        const std::int32_t result = static_cast<std::int32_t>(ncclGetUniqueId(&id));
        std::memcpy(packet.data(), &result, sizeof(result));
        std::memcpy(packet.data() + sizeof(result), &id, sizeof(id));
      }
      const double left = std::chrono::duration<double>(deadline - clock::now()).count();
      packet = detail::rendezvous_broadcast(plan.address, rank_, size_, packet, std::max(left, 1e-3),
                                            "rlkernels::nccl_communicator: " + where_am_i() +
                                                ": init of 'the NCCL unique id'");
      std::int32_t result = 0;
      if (packet.size() != sizeof(result) + sizeof(id))
        fail("init", "the NCCL unique id", "rank 0 sent " + std::to_string(packet.size()) + " bytes, not " +
                                               std::to_string(sizeof(result) + sizeof(id)));
      std::memcpy(&result, packet.data(), sizeof(result));
      std::memcpy(&id, packet.data() + sizeof(result), sizeof(id));
      if (result != static_cast<std::int32_t>(ncclSuccess))
        fail("init", "the NCCL unique id",
             std::string("ncclGetUniqueId failed on rank 0: ") + ncclGetErrorString(static_cast<ncclResult_t>(result)));
    }
    init(id, deadline);
  }

  /// @brief Builds NCCL over an existing communicator (say, an mpi_communicator): rank and size
  /// are bootstrap's, rank 0 makes the NCCL unique id and broadcasts it through
  /// bootstrap.broadcast_raw (host memory), and `device` becomes the calling thread's CUDA device
  /// (cudaSetDevice, left current). Costs one small broadcast on bootstrap and NCCL's
  /// initialisation (waited for at most `timeout_seconds`). bootstrap may be destroyed after.
  /// @param bootstrap every rank of the job, in the same order
  /// @param device the CUDA device this rank drives (on one machine, usually its local rank)
  /// @param timeout_seconds how long any call waits for the other ranks, > 0
  /// @throw std::invalid_argument on a bad device or timeout; cuda_error if CUDA fails;
  ///        distributed_error if the broadcast or NCCL's initialisation fails or times out
  nccl_communicator(communicator& bootstrap, int device, double timeout_seconds = 60.0)
      : rank_(bootstrap.rank()), size_(bootstrap.size()), device_(device), timeout_(timeout_seconds),
        staging_(device), gathered_(device) {
    check_arguments("device");
    RLK_CUDA_CHECK(cudaSetDevice(device_));
    struct id_packet {
      std::int32_t result;  // rank 0's ncclGetUniqueId result
      ncclUniqueId id;
    } packet;
    std::memset(&packet, 0, sizeof(packet));
    if (rank_ == 0) packet.result = static_cast<std::int32_t>(ncclGetUniqueId(&packet.id));
    bootstrap.broadcast_raw(&packet, sizeof(packet), 0, memory_location{}, "the NCCL unique id");
    if (packet.result != static_cast<std::int32_t>(ncclSuccess))
      fail("init", "the NCCL unique id",
           std::string("ncclGetUniqueId failed on rank 0: ") +
               ncclGetErrorString(static_cast<ncclResult_t>(packet.result)));
    init(packet.id);
  }

  nccl_communicator(const nccl_communicator&) = delete;
  nccl_communicator& operator=(const nccl_communicator&) = delete;

  /// Finalises and destroys the NCCL communicator (ncclCommFinalize, waited for at most
  /// timeout_seconds(), then ncclCommDestroy), or aborts it if a call failed; frees the scratch
  /// buffers and the stream. Never throws.
  ~nccl_communicator() override = default;

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  std::string name() const override { return "NCCL"; }
  double timeout_seconds() const noexcept override { return timeout_; }
  /// The NCCL communicator (null after a failure).
  ncclComm_t native_handle() const noexcept { return comm_.comm; }
  /// The CUDA device this rank drives.
  int device() const noexcept { return device_; }
  /// The communicator's own stream, on which host memory is staged.
  cudaStream_t stream() const noexcept { return stream_.get(); }

  /// @brief In-place all-reduce of `count` elements. native: ncclAllReduce (sum; a mean then
  /// divides on the device): 2 (R - 1) / R of the bytes moved per rank. ordered: ncclAllGather into
  /// a device scratch of R * count elements, then a kernel adds the parts in rank order (bit
  /// reproducible, equal to fold_host): R times the bytes and the memory. Host memory is copied to
  /// and from the device around it.
  /// @throw std::invalid_argument for device memory of another device than device();
  ///        distributed_error on a NCCL failure or timeout; cuda_error if a CUDA call fails
  void all_reduce_raw(void* data, std::size_t count, element_kind kind, reduce_op op, reduction_order order,
                      memory_location where, const char* what) override {
    ensure_usable("all_reduce", what);
    if (count == 0 || size_ == 1) return;  // one rank: the sum is the data, the mean divides by 1
    const std::size_t bytes = count * detail::element_bytes(kind);
    detail::device_guard guard(device_);
    const cudaStream_t stream = stream_for(where, "all_reduce", what);
    const auto deadline = deadline_from_now();
    void* buffer = data;
    if (!where.device) {
      buffer = staging_.ensure(bytes);
      RLK_CUDA_CHECK(cudaMemcpyAsync(buffer, data, bytes, cudaMemcpyHostToDevice, stream));
    }
    const bool mean = op == reduce_op::mean;
    if (order == reduction_order::native) {
      enqueue(ncclAllReduce(buffer, buffer, count, nccl_type(kind), ncclSum, comm_.comm, stream), "all_reduce", what,
              deadline);
      if (mean) launch(kind, count, stream, [&](auto zero, unsigned grid) {
        using T = decltype(zero);
        detail::nccl_divide_kernel<T><<<grid, block, 0, stream>>>(static_cast<T*>(buffer), count, size_);
      });
    } else {
      void* gathered = gathered_.ensure(bytes * std::size_t(size_));
      enqueue(ncclAllGather(buffer, gathered, count, nccl_type(kind), comm_.comm, stream), "all_reduce", what,
              deadline);
      launch(kind, count, stream, [&](auto zero, unsigned grid) {
        using T = decltype(zero);
        detail::nccl_fold_in_order_kernel<T><<<grid, block, 0, stream>>>(static_cast<const T*>(gathered), count,
                                                                         size_, mean, static_cast<T*>(buffer));
      });
    }
    wait_stream(stream, "all_reduce", what, deadline);
    if (!where.device) copy_to_host(data, buffer, bytes);
  }

  /// @brief Replaces `bytes` bytes at `data` with root's (ncclBroadcast of ncclChar); host memory
  /// is staged through the device. Costs about `bytes` moved per rank.
  /// @throw std::invalid_argument for a root that is not a rank; distributed_error on a NCCL
  ///        failure or timeout; cuda_error if a CUDA call fails
  void broadcast_raw(void* data, std::size_t bytes, int root, memory_location where, const char* what) override {
    RLK_EXPECTS(root >= 0 && root < size_, std::invalid_argument, "rlkernels::nccl_communicator::broadcast of '",
                what, "': root ", root, " is not a rank (0 .. ", size_ - 1, ")");
    ensure_usable("broadcast", what);
    if (bytes == 0 || size_ == 1) return;
    detail::device_guard guard(device_);
    const cudaStream_t stream = stream_for(where, "broadcast", what);
    const auto deadline = deadline_from_now();
    void* buffer = data;
    if (!where.device) {
      buffer = staging_.ensure(bytes);
      if (rank_ == root) RLK_CUDA_CHECK(cudaMemcpyAsync(buffer, data, bytes, cudaMemcpyHostToDevice, stream));
    }
    enqueue(ncclBroadcast(buffer, buffer, bytes, ncclChar, root, comm_.comm, stream), "broadcast", what, deadline);
    wait_stream(stream, "broadcast", what, deadline);
    if (!where.device && rank_ != root) copy_to_host(data, buffer, bytes);
  }

  /// @brief Every rank's `bytes` host bytes in rank order at `out` (ncclAllGather of ncclChar,
  /// staged through the device). Costs R * bytes received per rank.
  /// @throw distributed_error on a NCCL failure or timeout; cuda_error if a CUDA call fails
  void all_gather_raw(const void* data, std::size_t bytes, void* out, const char* what) override {
    ensure_usable("all_gather", what);
    if (bytes == 0) return;
    if (size_ == 1) {
      std::memmove(out, data, bytes);
      return;
    }
    detail::device_guard guard(device_);
    const cudaStream_t stream = stream_.get();
    const auto deadline = deadline_from_now();
    void* mine = staging_.ensure(bytes);
    void* all = gathered_.ensure(bytes * std::size_t(size_));
    RLK_CUDA_CHECK(cudaMemcpyAsync(mine, data, bytes, cudaMemcpyHostToDevice, stream));
    enqueue(ncclAllGather(mine, all, bytes, ncclChar, comm_.comm, stream), "all_gather", what, deadline);
    wait_stream(stream, "all_gather", what, deadline);
    copy_to_host(out, all, bytes * std::size_t(size_));
  }

  // ---- gather and scatter of byte strings: point to point between root and each rank ----

  /// @brief Root receives every rank's host bytes in rank order (the others an empty list): an
  /// all-gather of the sizes (8 bytes per rank), then each rank sends its bytes to root alone
  /// (ncclSend / ncclRecv, staged through the device in chunks of p2p_chunk_bytes, every rank's
  /// k-th chunk in one NCCL group). Root receives each part once; no other rank receives any.
  /// @throw std::invalid_argument for a root that is not a rank; distributed_error on a NCCL
  ///        failure or timeout; cuda_error if a CUDA call fails
  std::vector<std::vector<std::uint8_t>> gather_bytes(const std::vector<std::uint8_t>& bytes, int root,
                                                      const char* what) override {
    RLK_EXPECTS(root >= 0 && root < size_, std::invalid_argument, "rlkernels::nccl_communicator::gather_bytes of '",
                what, "': root ", root, " is not a rank (0 .. ", size_ - 1, ")");
    ensure_usable("gather_bytes", what);
    if (size_ == 1) return {bytes};
    const std::uint64_t mine = bytes.size();
    std::vector<std::uint64_t> sizes(static_cast<std::size_t>(size_), 0);
    all_gather_raw(&mine, sizeof(mine), sizes.data(), what);
    std::vector<std::vector<std::uint8_t>> parts;
    if (rank_ == root) {
      parts.resize(std::size_t(size_));
      for (int r = 0; r < size_; ++r)
        if (r != root) parts[std::size_t(r)].resize(static_cast<std::size_t>(sizes[std::size_t(r)]));
    }
    const std::uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
    detail::device_guard guard(device_);
    const cudaStream_t stream = stream_.get();
    for (std::uint64_t first = 0; first < largest; first += p2p_chunk_bytes) {
      const auto deadline = deadline_from_now();
      if (rank_ == root) {
        auto* slots = static_cast<std::uint8_t*>(gathered_.ensure(p2p_chunk_bytes * std::size_t(size_)));
        enqueue(ncclGroupStart(), "gather_bytes", what, deadline);
        for (int r = 0; r < size_; ++r)
          if (r != root && sizes[std::size_t(r)] > first)
            enqueue(ncclRecv(slots + std::size_t(r) * p2p_chunk_bytes, p2p_count(sizes[std::size_t(r)] - first),
                             ncclChar, r, comm_.comm, stream),
                    "gather_bytes", what, deadline);
        enqueue(ncclGroupEnd(), "gather_bytes", what, deadline);
        wait_stream(stream, "gather_bytes", what, deadline);
        for (int r = 0; r < size_; ++r)
          if (r != root && sizes[std::size_t(r)] > first)
            copy_to_host(parts[std::size_t(r)].data() + first, slots + std::size_t(r) * p2p_chunk_bytes,
                         p2p_count(sizes[std::size_t(r)] - first));
      } else if (mine > first) {
        void* chunk = staging_.ensure(p2p_chunk_bytes);
        const std::size_t n = p2p_count(mine - first);
        RLK_CUDA_CHECK(cudaMemcpyAsync(chunk, bytes.data() + first, n, cudaMemcpyHostToDevice, stream));
        enqueue(ncclSend(chunk, n, ncclChar, root, comm_.comm, stream), "gather_bytes", what, deadline);
        wait_stream(stream, "gather_bytes", what, deadline);
      }
    }
    if (rank_ == root) parts[std::size_t(root)] = bytes;
    return parts;
  }

  /// @brief Root sends rank r the bytes of `parts[r]` and every rank returns its own: the sizes
  /// are broadcast (8 bytes per rank), then root sends each rank its part alone (ncclSend /
  /// ncclRecv, staged through the device in chunks of p2p_chunk_bytes, every rank's k-th chunk in
  /// one NCCL group). No rank receives another's part.
  /// @throw std::invalid_argument (every rank) if root's `parts` does not have size() entries or
  ///        root is not a rank; distributed_error on a NCCL failure or timeout; cuda_error if a
  ///        CUDA call fails
  std::vector<std::uint8_t> scatter_bytes(const std::vector<view<const std::uint8_t>>& parts, int root,
                                          const char* what) override {
    RLK_EXPECTS(root >= 0 && root < size_, std::invalid_argument, "rlkernels::nccl_communicator::scatter_bytes of '",
                what, "': root ", root, " is not a rank (0 .. ", size_ - 1, ")");
    ensure_usable("scatter_bytes", what);
    std::vector<std::uint64_t> sizes = detail::scatter_sizes(parts, std::size_t(size_), rank_ == root);
    broadcast_raw(sizes.data(), sizes.size() * sizeof(std::uint64_t), root, memory_location{}, what);
    detail::check_scatter_sizes(sizes, parts.size(), std::size_t(size_), rank_ == root, what);
    const std::uint64_t own = sizes[std::size_t(rank_)];
    std::vector<std::uint8_t> mine(static_cast<std::size_t>(rank_ == root ? 0 : own));
    const std::uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
    detail::device_guard guard(device_);
    const cudaStream_t stream = stream_.get();
    for (std::uint64_t first = 0; first < largest && size_ > 1; first += p2p_chunk_bytes) {
      const auto deadline = deadline_from_now();
      if (rank_ == root) {
        auto* slots = static_cast<std::uint8_t*>(gathered_.ensure(p2p_chunk_bytes * std::size_t(size_)));
        for (int r = 0; r < size_; ++r)
          if (r != root && sizes[std::size_t(r)] > first)
            RLK_CUDA_CHECK(cudaMemcpyAsync(slots + std::size_t(r) * p2p_chunk_bytes,
                                           parts[std::size_t(r)].data() + first,
                                           p2p_count(sizes[std::size_t(r)] - first), cudaMemcpyHostToDevice, stream));
        enqueue(ncclGroupStart(), "scatter_bytes", what, deadline);
        for (int r = 0; r < size_; ++r)
          if (r != root && sizes[std::size_t(r)] > first)
            enqueue(ncclSend(slots + std::size_t(r) * p2p_chunk_bytes, p2p_count(sizes[std::size_t(r)] - first),
                             ncclChar, r, comm_.comm, stream),
                    "scatter_bytes", what, deadline);
        enqueue(ncclGroupEnd(), "scatter_bytes", what, deadline);
        wait_stream(stream, "scatter_bytes", what, deadline);
      } else if (own > first) {
        void* chunk = staging_.ensure(p2p_chunk_bytes);
        const std::size_t n = p2p_count(own - first);
        enqueue(ncclRecv(chunk, n, ncclChar, root, comm_.comm, stream), "scatter_bytes", what, deadline);
        wait_stream(stream, "scatter_bytes", what, deadline);
        copy_to_host(mine.data() + first, chunk, n);
      }
    }
    if (rank_ == root) mine.assign(parts[std::size_t(root)].begin(), parts[std::size_t(root)].end());
    return mine;
  }

  /// Bytes of one chunk of gather_bytes and scatter_bytes (root's device scratch holds one per rank).
  static constexpr std::size_t p2p_chunk_bytes = std::size_t(16) << 20;

  /// @brief Waits for every rank: an all-reduce of one int on the communicator's stream.
  /// @throw distributed_error on a NCCL failure or timeout; cuda_error if a CUDA call fails
  void barrier(const char* what) override {
    ensure_usable("barrier", what);
    if (size_ == 1) return;
    detail::device_guard guard(device_);
    const cudaStream_t stream = stream_.get();
    const auto deadline = deadline_from_now();
    void* one = staging_.ensure(sizeof(int));
    RLK_CUDA_CHECK(cudaMemsetAsync(one, 0, sizeof(int), stream));
    enqueue(ncclAllReduce(one, one, 1, ncclInt32, ncclSum, comm_.comm, stream), "barrier", what, deadline);
    wait_stream(stream, "barrier", what, deadline);
  }

  /// @brief Aborts the NCCL communicator (ncclCommAbort) and ends this process at once with
  /// `code` (std::_Exit: no destructors, no atexit handlers). NCCL cannot end the other ranks:
  /// they fail their next collective (NCCL's remote error or their deadline), or the launcher
  /// ends them when this process exits.
  [[noreturn]] void abort(int code) noexcept override {
    comm_.abort();
    std::_Exit(code);
  }

 private:
  using clock = std::chrono::steady_clock;
  static constexpr unsigned block = 256;

  void check_arguments(const char* device_name) {
    RLK_EXPECTS(timeout_ > 0 && timeout_ < 1e9, std::invalid_argument,
                "rlkernels::nccl_communicator: timeout_seconds must be > 0 (and finite), got ", timeout_);
    RLK_EXPECTS(size_ >= 1 && rank_ >= 0 && rank_ < size_, std::invalid_argument,
                "rlkernels::nccl_communicator: rank ", rank_, " is not a rank of a world of size ", size_);
    int devices = 0;
    RLK_CUDA_CHECK(cudaGetDeviceCount(&devices));
    RLK_EXPECTS(device_ >= 0 && device_ < devices, std::invalid_argument, "rlkernels::nccl_communicator: ",
                device_name, " ", device_, " is not a CUDA device of this machine (it has ", devices, ")");
    comm_.device = device_;
    comm_.timeout_seconds = timeout_;
  }

  /// Initialises NCCL with `id`, waiting until `deadline` (the start-up's, from now by default).
  void init(const ncclUniqueId& id) { init(id, deadline_from_now()); }
  void init(const ncclUniqueId& id, clock::time_point deadline) {
    stream_.create(device_);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclUniqueId copy = id;
    const ncclResult_t result = ncclCommInitRankConfig(&comm_.comm, size_, copy, rank_, &config);
    if (result != ncclSuccess && result != ncclInProgress)
      fail_nccl("init", "the NCCL communicator", result, "ncclCommInitRankConfig failed");
    wait(nullptr, false, "init", "the NCCL communicator", deadline);
  }

  clock::time_point deadline_from_now() const {
    return clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_));
  }

  cudaStream_t stream_for(const memory_location& where, const char* op, const char* what) const {
    if (!where.device) return stream_.get();
    RLK_EXPECTS(where.device_index == device_, std::invalid_argument, "rlkernels::nccl_communicator::", op, " of '",
                what, "': the buffer is on CUDA device ", where.device_index, ", this rank drives device ", device_);
    return static_cast<cudaStream_t>(where.stream);
  }

  /// The bytes of the next chunk of a part with `left` bytes to go.
  static std::size_t p2p_count(std::uint64_t left) {
    return static_cast<std::size_t>(std::min<std::uint64_t>(left, p2p_chunk_bytes));
  }

  static ncclDataType_t nccl_type(element_kind kind) {
    switch (kind) {
      case element_kind::f32: return ncclFloat32;
      case element_kind::f64: return ncclFloat64;
      default: return ncclUint64;
    }
  }

  /// Calls launch_kernel(T{}, grid) with T the element type of `kind`, then checks the launch.
  template <class Launch>
  void launch(element_kind kind, std::size_t count, cudaStream_t, Launch&& launch_kernel) {
    const unsigned grid = detail::grid_size_for(count, block);
    switch (kind) {
      case element_kind::f32: launch_kernel(float{}, grid); break;
      case element_kind::f64: launch_kernel(double{}, grid); break;
      default: launch_kernel(std::uint64_t{}, grid); break;
    }
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) fail_cuda("all_reduce", "its reduction kernel", status);
  }

  /// A NCCL call that queues work: on ncclInProgress waits (to the deadline) until NCCL has queued
  /// it, so that what follows on the stream runs after it.
  void enqueue(ncclResult_t result, const char* op, const char* what, clock::time_point deadline) {
    if (result != ncclSuccess && result != ncclInProgress) fail_nccl(op, what, result, "NCCL refused the operation");
    wait(nullptr, false, op, what, deadline);
  }

  void wait_stream(cudaStream_t stream, const char* op, const char* what, clock::time_point deadline) {
    wait(stream, true, op, what, deadline);
  }

  /// Polls NCCL's state (and then `stream`, if `query_stream`) until done or the deadline.
  void wait(cudaStream_t stream, bool query_stream, const char* op, const char* what, clock::time_point deadline) {
    const auto start = clock::now();
    for (;;) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t query = ncclCommGetAsyncError(comm_.comm, &state);
      if (query != ncclSuccess) fail_nccl(op, what, query, "ncclCommGetAsyncError failed");
      if (state != ncclSuccess && state != ncclInProgress) fail_nccl(op, what, state, "NCCL reported an error");
      if (state == ncclSuccess) {
        if (!query_stream) return;
        const cudaError_t done = cudaStreamQuery(stream);
        if (done == cudaSuccess) return;
        if (done != cudaErrorNotReady) fail_cuda(op, what, done);
      }
      const auto now = clock::now();
      if (now >= deadline) {
        std::ostringstream seconds;
        seconds << timeout_ << " s";
        fail_timeout(op, what, state,
                  std::string("timed out after ") + seconds.str() +
                      (std::strcmp(op, "init") == 0
                           ? " (a rank did not start or cannot reach the others: check that every rank runs, and "
                             "NCCL_SOCKET_IFNAME / NCCL_DEBUG=INFO)"
                           : " waiting for the other ranks (a rank died, hangs, or called the collectives in "
                             "another order)"));
      }
      if (now - start > std::chrono::microseconds(100)) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  /// Device scratch to host memory on the communicator's stream (local: no peer involved).
  void copy_to_host(void* out, const void* device_data, std::size_t bytes) {
    RLK_CUDA_CHECK(cudaMemcpyAsync(out, device_data, bytes, cudaMemcpyDeviceToHost, stream_.get()));
    RLK_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  void ensure_usable(const char* op, const char* what) const {
    if (comm_.failed || comm_.comm == nullptr)
      throw distributed_error(rank_, "rlkernels::nccl_communicator: " + where_am_i() + ": " + op + " of '" + what +
                                         "': the communicator is unusable after an earlier failure (end the process)");
  }

  [[noreturn]] void fail(const char* op, const char* what, const std::string& why) {
    comm_.abort();
    throw distributed_error(rank_, "rlkernels::nccl_communicator: " + where_am_i() + ": " + op + " of '" + what +
                                       "': " + why);
  }

  [[noreturn]] void fail_nccl(const char* op, const char* what, ncclResult_t result, const std::string& why) {
    const char* last = ncclGetLastError(comm_.comm);  // before the abort frees the communicator
    std::string message = why + " (" + ncclGetErrorString(result);
    if (last != nullptr && *last != '\0') message += std::string("; NCCL's last error: ") + last;
    message += ")";
    fail(op, what, message);
  }

  [[noreturn]] void fail_timeout(const char* op, const char* what, ncclResult_t state, const std::string& why) {
    const char* last = ncclGetLastError(comm_.comm);
    std::string message = why + (state == ncclInProgress ? " (NCCL had not finished queueing the operation"
                                                         : " (NCCL queued the operation; the stream did not finish");
    if (last != nullptr && *last != '\0') message += std::string("; NCCL's last error: ") + last;
    message += ")";
    fail(op, what, message);
  }

  [[noreturn]] void fail_cuda(const char* op, const char* what, cudaError_t status) {
    fail(op, what, std::string("CUDA error ") + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
  }

  int rank_, size_, device_;
  double timeout_;
  // Destroyed in reverse order: the buffers, the stream, then the NCCL communicator.
  detail::nccl_comm_handle comm_;
  detail::nccl_owned_stream stream_;
  detail::nccl_device_scratch staging_, gathered_;
};

}  // namespace rlkernels

#endif  // RLK_HAS_CUDA
