// rlkernels::nccl_communicator (rlkernels/distributed/nccl.hpp) on one GPU, CUDA only: built as
// nccl_test_cuda (nvcc, linked with NCCL; tests/CMakeLists.txt) and run by scripts/device_check.sh
// where libnccl.so.2 is found.
//
//   - one rank (world size 1): every collective on device and host memory leaves the data as it is
//     (a sum of one part, a mean over one rank), and the argument checks still hold;
//   - two ranks on the one GPU: this process is rank 0 and starts rank 1 as a second process
//     (fork, then exec of this program with --rlk-nccl-peer, so that rank 1 starts with a CUDA
//     state of its own whatever this process did before); rank 1 receives rank 0's NCCL unique id
//     at MASTER_ADDR:MASTER_PORT + 1 on 127.0.0.1 (distributed/rendezvous.hpp) while rank 0 holds
//     MASTER_PORT open, as torchrun's agent does (its rendezvous store), and a thread of rank 0
//     reading NCCL_COMM_ID throughout its start-up never sees it set (the earlier code set it for
//     the start-up, racing with getenv on other threads). The ordered all-reduce must give the same bits as the host fold of
//     the ranks' parts in rank order (detail::fold_host), on device and host memory, for float,
//     double and uint64, sum and mean; the native one the same values up to rounding (uint64
//     exactly); broadcast, all_gather, gather_bytes and barrier the exact bytes. NCCL may refuse
//     two ranks on one device ("Duplicate GPU detected"): the case then says so (WARN) and
//     passes; any other failure fails it;
//   - a rank that never joins: rank 0 of 2 alone, with a 3 s timeout, throws distributed_error
//     from the hand-over of NCCL's unique id within a few seconds.
//
// NCCL's own warnings go to a file per process (NCCL_DEBUG=WARN, NCCL_DEBUG_FILE, unless set
// already), read back to recognise a refused device and shown when a case fails.
#define CATCH_CONFIG_RUNNER  // a main of our own: the same program also runs rank 1 (--rlk-nccl-peer)
#include <catch2/catch.hpp>

#include <rlkernels/core/communicator.hpp>
#include <rlkernels/core/memory.hpp>
#include <rlkernels/distributed/nccl.hpp>
#include <rlkernels/distributed/launcher.hpp>

#include <cuda_runtime.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using rlkernels::cuda_backend;
using rlkernels::distributed_error;
using rlkernels::element_kind;
using rlkernels::memory_location;
using rlkernels::nccl_communicator;
using rlkernels::reduce_op;
using rlkernels::reduction_order;

constexpr const char* peer_flag = "--rlk-nccl-peer";
constexpr double two_rank_timeout_s = 15.0;

// Rank 1's exit status.
enum peer_status : int {
  peer_passed = 0,
  peer_check_failed = 1,
  peer_distributed_error = 2,
  peer_other_error = 3,
  peer_bad_use = 4,
  peer_duplicate_gpu = 10,
  peer_exec_failed = 127
};

// ---- helpers ------------------------------------------------------------------------------------

/// The NCCL_DEBUG_FILE pattern this program set ("" when the caller set one of their own).
std::string nccl_log_pattern;

/// Sends NCCL's warnings to <tmp>/rlk-nccl-test-<pid>.<pid of the writer>.log, unless the caller
/// chose where they go. Before any NCCL call; rank 1 inherits the variables.
void route_nccl_warnings() {
  if (std::getenv("NCCL_DEBUG_FILE") != nullptr) return;
  const char* tmp = std::getenv("TMPDIR");
  nccl_log_pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/rlk-nccl-test-" + std::to_string(::getpid()) +
                     ".%p.log";
  ::setenv("NCCL_DEBUG_FILE", nccl_log_pattern.c_str(), 1);
  if (std::getenv("NCCL_DEBUG") == nullptr) ::setenv("NCCL_DEBUG", "WARN", 1);
}

std::string nccl_log_path(pid_t pid) {
  const std::size_t at = nccl_log_pattern.rfind("%p");
  if (at == std::string::npos) return {};
  return nccl_log_pattern.substr(0, at) + std::to_string(pid) + nccl_log_pattern.substr(at + 2);
}

/// What NCCL wrote to process `pid`'s warning file ("" when none).
std::string nccl_log_of(pid_t pid) {
  const std::string path = nccl_log_path(pid);
  if (path.empty()) return {};
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void remove_nccl_log(pid_t pid) {
  const std::string path = nccl_log_path(pid);
  if (!path.empty()) (void)std::remove(path.c_str());
}

/// NCCL's words when two ranks of a communicator drive the same device.
bool says_duplicate_gpu(const std::string& text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return lower.find("duplicate gpu") != std::string::npos;
}

/// A TCP port on 127.0.0.1 that nobody listens on now (the kernel's choice for port 0).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot find a free TCP port on 127.0.0.1");
  return ntohs(a.sin_port);
}

/// torchrun's variables for a rank on this machine; NCCL's bootstrap meets at master_port + 1.
rlkernels::launcher_environment env_for(int rank, int world, int master_port) {
  rlkernels::launcher_environment env;
  env.launcher = rlkernels::launcher_kind::torchrun;
  env.rank = rank;
  env.world_size = world;
  env.local_rank = 0;  // every rank on the one GPU
  env.master_addr = "127.0.0.1";
  env.master_port = master_port;
  return env;
}

/// A listening socket on 127.0.0.1, as torchrun's agent holds MASTER_PORT (its TCPStore), on a
/// port whose successor was free when chosen (NCCL's bootstrap meets there).
class held_master_port {
 public:
  held_master_port() {
    for (int attempt = 0; attempt < 50 && port_ == 0; ++attempt) {
      fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
      if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      socklen_t len = sizeof(a);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 && ::listen(fd_, 8) == 0 &&
          ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0 && ntohs(a.sin_port) < 65535 &&
          port_is_free(ntohs(a.sin_port) + 1)) {
        port_ = ntohs(a.sin_port);
      } else {
        ::close(fd_);
        fd_ = -1;
      }
    }
    if (port_ == 0) throw std::runtime_error("cannot hold a TCP port on 127.0.0.1 whose successor is free");
  }
  held_master_port(const held_master_port&) = delete;
  held_master_port& operator=(const held_master_port&) = delete;
  ~held_master_port() { ::close(fd_); }
  int port() const noexcept { return port_; }

 private:
  static bool port_is_free(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    ::close(fd);
    return ok;
  }
  int fd_ = -1, port_ = 0;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// "" when device 0 is usable (its context is then created, so that later timings do not
/// include it), else why not.
std::string gpu_problem() {
  static const std::string problem = [] {
    int devices = 0;
    cudaError_t status = cudaGetDeviceCount(&devices);
    if (status != cudaSuccess)
      return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(status) + ": " +
             cudaGetErrorString(status);
    if (devices < 1) return std::string("no CUDA device");
    status = cudaSetDevice(0);
    if (status == cudaSuccess) status = cudaFree(nullptr);
    if (status != cudaSuccess)
      return std::string("CUDA device 0 is not usable: ") + cudaGetErrorName(status) + ": " +
             cudaGetErrorString(status);
    return std::string();
  }();
  return problem;
}

#define REQUIRE_GPU()                                                                                    \
  do {                                                                                                   \
    const std::string rlk_gpu_problem_ = gpu_problem();                                                  \
    INFO("nccl_test_cuda needs a CUDA GPU: " << rlk_gpu_problem_);                                       \
    REQUIRE(rlk_gpu_problem_.empty());                                                                   \
  } while (0)

/// A non-blocking CUDA stream on device 0, destroyed at scope end.
class scoped_stream {
 public:
  scoped_stream() {
    const cudaError_t status = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (status != cudaSuccess) throw std::runtime_error(std::string("cudaStreamCreate: ") + cudaGetErrorString(status));
  }
  scoped_stream(const scoped_stream&) = delete;
  scoped_stream& operator=(const scoped_stream&) = delete;
  ~scoped_stream() { (void)cudaStreamDestroy(stream_); }
  cudaStream_t get() const noexcept { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

/// Rank 1 as a second process: fork, then exec of this program with --rlk-nccl-peer SCENARIO
/// PORT (a fresh process: the CUDA state of this one, whatever the earlier cases did, is not
/// inherited). The destructor kills and reaps it if nobody waited for it.
class peer_process {
 public:
  peer_process(const char* scenario, int port) {
    char self[4096];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) throw std::runtime_error(std::string("readlink /proc/self/exe: ") + std::strerror(errno));
    self[n] = '\0';
    const std::string port_text = std::to_string(port);
    // Everything exec needs is made before fork: the child only calls execv and _exit.
    std::vector<char*> argv = {self, const_cast<char*>(peer_flag), const_cast<char*>(scenario),
                               const_cast<char*>(port_text.c_str()), nullptr};
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid_ == 0) {
      ::execv(self, argv.data());
      ::_exit(peer_exec_failed);
    }
  }
  peer_process(const peer_process&) = delete;
  peer_process& operator=(const peer_process&) = delete;
  ~peer_process() {
    if (pid_ > 0 && !reaped_) {
      (void)::kill(pid_, SIGKILL);
      int status = 0;
      (void)::waitpid(pid_, &status, 0);
    }
    if (pid_ > 0) remove_nccl_log(pid_);
  }
  pid_t pid() const noexcept { return pid_; }

  /// Its exit status, waiting at most `seconds` (then it is killed: -SIGKILL); a signal that
  /// ended it is returned as minus its number.
  int wait(double seconds) {
    const auto start = std::chrono::steady_clock::now();
    int status = 0;
    for (;;) {
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) break;
      if (done < 0 && errno != EINTR) return -1000;
      if (seconds_since(start) > seconds) {
        (void)::kill(pid_, SIGKILL);
        (void)::waitpid(pid_, &status, 0);
        reaped_ = true;
        return -SIGKILL;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -(WIFSIGNALED(status) ? WTERMSIG(status) : 1000);
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

std::string describe_peer_status(int code) {
  switch (code) {
    case peer_passed: return "0 (passed)";
    case peer_check_failed: return "1 (a check failed: see its [rank 1] lines)";
    case peer_distributed_error: return "2 (distributed_error: see its [rank 1] lines)";
    case peer_other_error: return "3 (another exception: see its [rank 1] lines)";
    case peer_bad_use: return "4 (bad arguments)";
    case peer_duplicate_gpu: return "10 (NCCL refused two ranks on one GPU)";
    case peer_exec_failed: return "127 (exec of this program failed)";
    case -SIGKILL: return "killed (it had not ended in time)";
    default: return std::to_string(code);
  }
}

template <class Exception, class F>
bool throws(F&& f) {
  try {
    f();
  } catch (const Exception&) {
    return true;
  } catch (...) {
    return false;
  }
  return false;
}

// ---- data -----------------------------------------------------------------------------------------

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Rank `rank`'s part: values of different magnitudes per rank (so that the additions round),
/// the same on every rank that asks.
template <class T>
std::vector<T> part(int rank, std::size_t count, std::uint64_t salt) {
  std::vector<T> v(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t h = mix(salt * 0x100000001b3ull + std::uint64_t(rank) * 0x51ed27ull + i);
    if constexpr (std::is_same_v<T, std::uint64_t>) {
      v[i] = h;  // sums wrap modulo 2^64, on the host and in NCCL alike
    } else {
      const double unit = double(h >> 11) * 0x1p-53 - 0.5;
      v[i] = T(unit * (rank == 0 ? 1.0 : 1234.5678) + (rank == 0 ? 1e-3 : 0.0));
    }
  }
  return v;
}

/// The host fold of every rank's part in rank order, then the mean's division (fold_host).
template <class T>
std::vector<T> host_fold(int ranks, std::size_t count, std::uint64_t salt, reduce_op op) {
  std::vector<T> all;
  for (int r = 0; r < ranks; ++r) {
    const std::vector<T> p = part<T>(r, count, salt);
    all.insert(all.end(), p.begin(), p.end());
  }
  std::vector<T> out(count);
  rlkernels::detail::fold_host(all.data(), count, rlkernels::detail::element_kind_of<T>(), op, ranks, out.data());
  return out;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// Equal up to the rounding of a different order of the additions (uint64: exactly).
template <class T>
bool close(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) return false;
  if constexpr (std::is_same_v<T, std::uint64_t>) {
    return got == want;
  } else {
    const double tolerance = std::is_same_v<T, float> ? 1e-5 : 1e-13;
    for (std::size_t i = 0; i < got.size(); ++i)
      if (!(std::fabs(double(got[i]) - double(want[i])) <= tolerance * std::max(1.0, std::fabs(double(want[i])))))
        return false;
    return true;
  }
}

template <class T>
const char* type_name() {
  return std::is_same_v<T, float> ? "float" : std::is_same_v<T, double> ? "double" : "uint64";
}

std::string label(const char* type, std::size_t count, reduce_op op, reduction_order order, const char* memory) {
  std::ostringstream s;
  s << "all_reduce " << (op == reduce_op::sum ? "sum" : "mean") << " "
    << (order == reduction_order::ordered ? "ordered" : "native") << " of " << count << " " << type << " in "
    << memory << " memory";
  return s.str();
}

// ---- the collectives with 2 ranks (run by both; no check stops the sequence, so that the ranks
// ---- keep calling the collectives in the same order) ------------------------------------------------

template <class T, class Check>
void all_reduce_cases(nccl_communicator& comm, cudaStream_t stream, Check& check) {
  const cuda_backend backend{stream, comm.device()};
  std::uint64_t salt = 11;
  for (const std::size_t count : {std::size_t(1), std::size_t(1000), std::size_t(65537)}) {
    for (const reduce_op op : {reduce_op::sum, reduce_op::mean}) {
      for (const reduction_order order : {reduction_order::ordered, reduction_order::native}) {
        ++salt;
        const std::vector<T> mine = part<T>(comm.rank(), count, salt);
        const std::vector<T> want = host_fold<T>(comm.size(), count, salt, op);

        rlkernels::buffer<T, cuda_backend> device(backend, mine);
        rlkernels::all_reduce(comm, backend, device.view(), op, order, "device data");
        const std::vector<T> got_device = device.to_host();

        std::vector<T> host = mine;  // host memory: staged through the device
        rlkernels::all_reduce(comm, rlkernels::serial, rlkernels::view<T>(host.data(), host.size()), op, order,
                              "host data");
        if (order == reduction_order::ordered) {
          check(same_bits(got_device, want), label(type_name<T>(), count, op, order, "device") +
                                                 ": the bits of the host fold in rank order");
          check(same_bits(host, want),
                label(type_name<T>(), count, op, order, "host") + ": the bits of the host fold in rank order");
        } else {
          check(close(got_device, want), label(type_name<T>(), count, op, order, "device") +
                                             ": the host fold's values up to rounding");
          check(close(host, want),
                label(type_name<T>(), count, op, order, "host") + ": the host fold's values up to rounding");
        }
      }
    }
  }
}

template <class Check>
void two_rank_sequence(nccl_communicator& comm, Check& check) {
  const int rank = comm.rank();
  check(comm.size() == 2 && (rank == 0 || rank == 1), "rank and size");
  check(comm.name() == "NCCL" && comm.device() == 0 && comm.native_handle() != nullptr, "name, device, handle");
  scoped_stream stream;

  all_reduce_cases<float>(comm, stream.get(), check);
  all_reduce_cases<double>(comm, stream.get(), check);
  all_reduce_cases<std::uint64_t>(comm, stream.get(), check);

  {  // on the legacy default stream (cuda_backend{}), device memory
    const cuda_backend backend{};
    const std::vector<double> want = host_fold<double>(2, 777, 99, reduce_op::sum);
    rlkernels::buffer<double, cuda_backend> data(backend, part<double>(rank, 777, 99));
    rlkernels::all_reduce(comm, backend, data.view(), reduce_op::sum);
    check(same_bits(data.to_host(), want), "all_reduce sum ordered of 777 double on the default stream");
  }

  {  // broadcast: device memory from rank 1, host memory from rank 0
    const cuda_backend backend{stream.get(), comm.device()};
    const std::vector<double> root1 = part<double>(1, 1001, 7);
    rlkernels::buffer<double, cuda_backend> data(backend, part<double>(rank, 1001, 7));
    rlkernels::broadcast(comm, backend, data.view(), 1, "device broadcast");
    check(same_bits(data.to_host(), root1), "broadcast of 1001 double in device memory from root 1");

    const std::vector<std::uint64_t> root0 = part<std::uint64_t>(0, 33, 8);
    std::vector<std::uint64_t> host = part<std::uint64_t>(rank, 33, 8);
    comm.broadcast_raw(host.data(), host.size() * sizeof(std::uint64_t), 0, memory_location{}, "host broadcast");
    check(host == root0, "broadcast_raw of 33 uint64 in host memory from root 0");

    check(throws<std::invalid_argument>([&] { comm.broadcast_raw(host.data(), 8, 2, memory_location{}, "bad root"); }),
          "broadcast from root 2 (not a rank) throws std::invalid_argument");
  }

  {  // all_gather of a small struct, and all_gather_raw of bytes
    struct info {
      std::int32_t rank;
      std::int32_t twice;
      double value;
    };
    const info mine{rank, 2 * rank, 0.25 + rank};
    const std::vector<info> all = rlkernels::all_gather(comm, mine, "info");
    check(all.size() == 2 && all[0].rank == 0 && all[0].twice == 0 && all[0].value == 0.25 && all[1].rank == 1 &&
              all[1].twice == 2 && all[1].value == 1.25,
          "all_gather of a struct: every rank's, in rank order");

    std::vector<std::uint8_t> bytes(13), out(26, 0xee);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::uint8_t(rank * 100 + i);
    comm.all_gather_raw(bytes.data(), bytes.size(), out.data(), "bytes");
    bool ok = true;
    for (std::size_t r = 0; r < 2; ++r)
      for (std::size_t i = 0; i < 13; ++i) ok = ok && out[r * 13 + i] == std::uint8_t(r * 100 + i);
    check(ok, "all_gather_raw of 13 bytes: every rank's, in rank order");
  }

  {  // gather_bytes: sizes that differ, to root 0 then root 1; all empty
    const auto bytes_of = [](int r) {
      std::vector<std::uint8_t> b(r == 0 ? 5 : 300);
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::uint8_t(r * 31 + i * 7);
      return b;
    };
    for (int root = 0; root < 2; ++root) {
      const auto parts = comm.gather_bytes(bytes_of(rank), root, "bytes of different sizes");
      if (rank == root)
        check(parts.size() == 2 && parts[0] == bytes_of(0) && parts[1] == bytes_of(1),
              "gather_bytes to root " + std::to_string(root) + ": 5 and 300 bytes, in rank order");
      else
        check(parts.empty(), "gather_bytes to root " + std::to_string(root) + ": the other rank receives nothing");
    }
    const auto parts = comm.gather_bytes({}, 0, "nothing");
    if (rank == 0)
      check(parts.size() == 2 && parts[0].empty() && parts[1].empty(), "gather_bytes of empty parts: two empty parts");
    else
      check(parts.empty(), "gather_bytes of empty parts: the other rank receives nothing");
  }

  {  // device memory of another device: refused before any communication; the communicator stays usable
    std::vector<float> unused(4);
    memory_location elsewhere;
    elsewhere.device = true;
    elsewhere.stream = stream.get();
    elsewhere.device_index = comm.device() + 1;
    check(throws<std::invalid_argument>([&] {
            comm.all_reduce_raw(unused.data(), unused.size(), element_kind::f32, reduce_op::sum,
                                reduction_order::ordered, elsewhere, "on another device");
          }),
          "device memory of another device than the communicator's throws std::invalid_argument");
  }

  comm.barrier("the end of the sequence");
  check(true, "barrier");
}

/// Counts and prints rank 1's failed checks.
struct peer_check {
  int failures = 0;
  void operator()(bool ok, const std::string& what) {
    if (ok) return;
    ++failures;
    std::fprintf(stderr, "[rank 1] check FAILED: %s\n", what.c_str());
  }
};

/// Reports rank 0's checks to Catch.
struct catch_check {
  void operator()(bool ok, const std::string& what) const {
    INFO("rank 0: " << what);
    CHECK(ok);
  }
};

/// Rank 1 (this program run with --rlk-nccl-peer two_ranks MASTER_PORT): the sequence, its exit status
/// saying how it went (peer_status).
int run_peer(const std::string& scenario, const char* port_text) {
  const std::optional<int> port = rlkernels::detail::parse_int_strict(port_text, 1, 65535);
  if (scenario != "two_ranks" || !port) {
    std::fprintf(stderr, "[rank 1] bad use: %s %s %s\n", peer_flag, scenario.c_str(), port_text);
    return peer_bad_use;
  }
  try {
    nccl_communicator comm(env_for(1, 2, *port), two_rank_timeout_s);
    peer_check check;
    two_rank_sequence(comm, check);
    return check.failures == 0 ? peer_passed : peer_check_failed;
  } catch (const distributed_error& e) {
    std::fprintf(stderr, "[rank 1] distributed_error: %s\n", e.what());
    return says_duplicate_gpu(e.what()) || says_duplicate_gpu(nccl_log_of(::getpid())) ? peer_duplicate_gpu
                                                                                         : peer_distributed_error;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank 1] exception: %s\n", e.what());
    return peer_other_error;
  }
}

}  // namespace

// ---- one rank -----------------------------------------------------------------------------------------

TEST_CASE("nccl_communicator with one rank: every collective leaves the data as it is", "[nccl]") {
  REQUIRE_GPU();
  nccl_communicator comm(env_for(0, 1, free_port()), 10.0);
  CHECK(comm.rank() == 0);
  CHECK(comm.size() == 1);
  CHECK(comm.name() == "NCCL");
  CHECK(comm.device() == 0);
  CHECK(comm.timeout_seconds() == 10.0);
  CHECK(comm.native_handle() != nullptr);
  CHECK(comm.where_am_i() == "rank 0 of 1");

  scoped_stream stream;
  const cuda_backend backend{stream.get(), 0};
  const auto unchanged = [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T> mine = part<T>(0, 1001, 5);
    for (const reduce_op op : {reduce_op::sum, reduce_op::mean}) {
      for (const reduction_order order : {reduction_order::ordered, reduction_order::native}) {
        INFO(label(type_name<T>(), mine.size(), op, order, "device/host"));
        rlkernels::buffer<T, cuda_backend> device(backend, mine);
        rlkernels::all_reduce(comm, backend, device.view(), op, order);
        CHECK(same_bits(device.to_host(), mine));
        memory_location where;  // the virtual call itself, past the typed front end's shortcut
        where.device = true;
        where.stream = stream.get();
        where.device_index = 0;
        comm.all_reduce_raw(device.data(), device.size(), rlkernels::detail::element_kind_of<T>(), op, order, where,
                            "device data");
        CHECK(same_bits(device.to_host(), mine));

        std::vector<T> host = mine;
        comm.all_reduce_raw(host.data(), host.size(), rlkernels::detail::element_kind_of<T>(), op, order,
                            memory_location{}, "host data");
        CHECK(same_bits(host, mine));
        CHECK(same_bits(host_fold<T>(1, mine.size(), 5, op), mine));  // the fold of one part is that part
      }
    }
  };
  unchanged(float{});
  unchanged(double{});
  unchanged(std::uint64_t{});

  SECTION("broadcast") {
    const std::vector<double> mine = part<double>(0, 100, 6);
    rlkernels::buffer<double, cuda_backend> device(backend, mine);
    rlkernels::broadcast(comm, backend, device.view(), 0);
    CHECK(same_bits(device.to_host(), mine));
    std::vector<double> host = mine;
    comm.broadcast_raw(host.data(), host.size() * sizeof(double), 0, memory_location{}, "host");
    CHECK(same_bits(host, mine));
    CHECK_THROWS_AS(comm.broadcast_raw(host.data(), 8, 1, memory_location{}, "bad root"), std::invalid_argument);
    CHECK_THROWS_AS(comm.broadcast_raw(host.data(), 8, -1, memory_location{}, "bad root"), std::invalid_argument);
  }
  SECTION("all_gather, all_gather_raw, gather_bytes, barrier") {
    struct info {
      std::int32_t rank;
      float value;
    };
    const std::vector<info> all = rlkernels::all_gather(comm, info{0, 2.5f});
    REQUIRE(all.size() == 1);
    CHECK(all[0].rank == 0);
    CHECK(all[0].value == 2.5f);

    const std::vector<std::uint8_t> bytes = {1, 2, 3, 250, 0, 7};
    std::vector<std::uint8_t> out(bytes.size(), 0xee);
    comm.all_gather_raw(bytes.data(), bytes.size(), out.data(), "bytes");
    CHECK(out == bytes);

    const auto parts = comm.gather_bytes(bytes, 0, "bytes");
    REQUIRE(parts.size() == 1);
    CHECK(parts[0] == bytes);
    const auto none = comm.gather_bytes({}, 0, "nothing");
    REQUIRE(none.size() == 1);
    CHECK(none[0].empty());
    CHECK_THROWS_AS(comm.gather_bytes(bytes, 1, "bad root"), std::invalid_argument);

    comm.barrier("one rank");
    comm.barrier("one rank, again");
    CHECK(comm.native_handle() != nullptr);
  }
}

TEST_CASE("nccl_communicator rejects a bad timeout, rank or device", "[nccl]") {
  REQUIRE_GPU();
  CHECK_THROWS_AS(nccl_communicator(env_for(0, 1, free_port()), 0.0), std::invalid_argument);
  CHECK_THROWS_AS(nccl_communicator(env_for(0, 1, free_port()), -1.0), std::invalid_argument);
  CHECK_THROWS_AS(nccl_communicator(env_for(1, 1, free_port()), 1.0), std::invalid_argument);
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  rlkernels::launcher_environment env = env_for(0, 1, free_port());
  env.local_rank = devices;  // one past the last device
  CHECK_THROWS_WITH(nccl_communicator(env, 1.0), Catch::Matchers::Contains("is not a CUDA device of this machine"));
}

// ---- two ranks ----------------------------------------------------------------------------------------

TEST_CASE("nccl_communicator with 2 ranks on the one GPU: ordered all-reduce equals the host fold bit for bit",
          "[nccl][two_ranks]") {
  REQUIRE_GPU();
  const held_master_port master;  // held for the whole case, as torchrun's agent holds it
  const int port = master.port();
  peer_process rank1("two_ranks", port);
  std::string init_error, sequence_error;
  bool started = false;
  const auto start = std::chrono::steady_clock::now();
  // Another thread reads NCCL_COMM_ID throughout the start-up, as a program's other threads may.
  REQUIRE(std::getenv("NCCL_COMM_ID") == nullptr);
  std::atomic<bool> starting{true}, comm_id_seen{false};
  std::thread reader([&] {
    while (starting)
      if (std::getenv("NCCL_COMM_ID") != nullptr) comm_id_seen = true;
  });
  try {
    nccl_communicator comm(env_for(0, 2, port), two_rank_timeout_s);
    starting = false;
    reader.join();
    started = true;
    catch_check check;
    two_rank_sequence(comm, check);
  } catch (const distributed_error& e) {
    (started ? sequence_error : init_error) = e.what();
  }
  starting = false;
  if (reader.joinable()) reader.join();
  CHECK_FALSE(comm_id_seen);  // the start-up never wrote the environment
  const int peer = rank1.wait(two_rank_timeout_s + 10.0);
  const std::string logs = nccl_log_of(::getpid()) + nccl_log_of(rank1.pid());
  INFO("rank 0's NCCL warnings and rank 1's (NCCL_DEBUG=WARN):\n" << (logs.empty() ? "(none)" : logs));
  INFO("rank 1 (pid " << rank1.pid() << ") exit status " << describe_peer_status(peer));

  if (!started && (says_duplicate_gpu(init_error) || says_duplicate_gpu(logs))) {
    WARN("NCCL refused 2 ranks on one GPU (\"Duplicate GPU detected\"): the 2-rank collectives were NOT run on "
         "this machine; it needs 2 GPUs for them. rank 0: "
         << init_error);
    CHECK((peer == peer_duplicate_gpu || peer == peer_distributed_error));
    return;
  }
  INFO("rank 0's start-up: " << (init_error.empty() ? "ok" : init_error));
  INFO("rank 0's collectives: " << (sequence_error.empty() ? "ok" : sequence_error));
  CHECK(init_error.empty());
  CHECK(sequence_error.empty());
  CHECK(peer == peer_passed);
  WARN("2 ranks on one GPU: start-up, the collectives and the finalisation took " << seconds_since(start) << " s");
}

TEST_CASE("nccl_communicator: a rank that never joins ends rank 0's start-up at its deadline",
          "[nccl][timeout]") {
  REQUIRE_GPU();
  const auto start = std::chrono::steady_clock::now();
  std::string message = "(nothing thrown)";
  int rank = -1;
  try {
    nccl_communicator comm(env_for(0, 2, free_port()), 3.0);  // rank 1 is never started
  } catch (const distributed_error& e) {
    message = e.what();
    rank = e.rank();
  }
  const double seconds = seconds_since(start);
  INFO(message);
  INFO("after " << seconds << " s");
  CHECK(rank == 0);
  CHECK_THAT(message, Catch::Matchers::Contains("rank 0 of 2"));
  CHECK_THAT(message, Catch::Matchers::Contains("init of 'the NCCL unique id': timed out after 3 s"));
  CHECK(seconds >= 2.9);
  CHECK(seconds < 8.0);
}

int main(int argc, char* argv[]) {
  if (argc >= 2 && std::strcmp(argv[1], peer_flag) == 0) {
    if (argc != 4) {
      std::fprintf(stderr, "[rank 1] usage: %s %s two_ranks MASTER_PORT\n", argv[0], peer_flag);
      return peer_bad_use;
    }
    // NCCL_DEBUG and NCCL_DEBUG_FILE are inherited from rank 0: this rank's warnings go to its own file.
    const char* file = std::getenv("NCCL_DEBUG_FILE");
    if (file != nullptr && std::strstr(file, "/rlk-nccl-test-") != nullptr) nccl_log_pattern = file;
    return run_peer(argv[2], argv[3]);
  }
  route_nccl_warnings();
  const int failed = Catch::Session().run(argc, argv);
  remove_nccl_log(::getpid());
  return failed;
}
