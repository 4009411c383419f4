// rlkernels/distributed/rendezvous.hpp
// Hands a few bytes from rank 0 to every other rank over one TCP address, for a job started
// without MPI: how nccl_communicator gives NCCL's unique id to the ranks of a torchrun or srun
// job without writing the process environment (NCCL_COMM_ID), and the choice of that route.
// Host only (POSIX sockets): no CUDA, no NCCL, no MPI.
#pragma once

#include "../core/communicator.hpp"
#include "../core/error.hpp"
#include "launcher.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>
#endif

namespace rlkernels {
namespace detail {

/// How the ranks of a job started without MPI come to hold the same NCCL unique id.
enum class nccl_id_route {
  single,            ///< one rank: its own ncclGetUniqueId
  nccl_environment,  ///< NCCL_COMM_ID is in the process environment: every rank's ncclGetUniqueId
                     ///< reads it and gives the same id (NCCL's own bootstrap; nothing is written)
  rendezvous,        ///< rank 0's id is handed to the others at `address` (rendezvous_broadcast)
};

/// The route and its address ("host:port"; "" for single).
struct nccl_bootstrap_plan {
  nccl_id_route route = nccl_id_route::single;
  std::string address;
};

/// @brief How rank env.rank of a job started without MPI gets NCCL's unique id: one rank needs
/// no address; with NCCL_COMM_ID set in the process environment (`comm_id_in_environment`,
/// getenv's value or null) NCCL's own bootstrap meets there; otherwise rank 0's id is handed over
/// at nccl_comm_id_for(env) (env.nccl_comm_id, or MASTER_ADDR:MASTER_PORT + 1). Reads nothing
/// itself and writes no environment.
/// @throw std::invalid_argument as nccl_comm_id_for (no address, a malformed one, torchrun's
///        MASTER_PORT)
inline nccl_bootstrap_plan plan_nccl_bootstrap(const launcher_environment& env, const char* comm_id_in_environment) {
  nccl_bootstrap_plan plan;
  if (env.world_size <= 1) return plan;
  if (comm_id_in_environment != nullptr && *comm_id_in_environment != '\0') {
    launcher_environment as_read = env;
    as_read.nccl_comm_id = comm_id_in_environment;  // what NCCL will read, checked as any address
    plan.route = nccl_id_route::nccl_environment;
    plan.address = nccl_comm_id_for(as_read);
    return plan;
  }
  plan.route = nccl_id_route::rendezvous;
  plan.address = nccl_comm_id_for(env);
  return plan;
}

#if defined(__linux__)

/// A socket closed when it goes out of scope.
class socket_handle {
 public:
  explicit socket_handle(int fd = -1) noexcept : fd_(fd) {}
  socket_handle(socket_handle&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  socket_handle& operator=(socket_handle&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  socket_handle(const socket_handle&) = delete;
  socket_handle& operator=(const socket_handle&) = delete;
  ~socket_handle() { reset(); }
  int get() const noexcept { return fd_; }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

/// The rendezvous' messages: a peer sends hello (magic, its rank, the world size); rank 0
/// answers with the magic and the payload's size then the payload, or with size ~0 and the
/// reason it refused the peer.
constexpr char rendezvous_magic[8] = {'R', 'L', 'K', 'I', 'D', 'v', '1', '\n'};

inline void put_u64(std::uint8_t* out, std::uint64_t v) {
  for (int k = 0; k < 8; ++k) out[k] = std::uint8_t(v >> (8 * k));
}
inline std::uint64_t read_u64(const std::uint8_t* in) {
  std::uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= std::uint64_t(in[k]) << (8 * k);
  return v;
}

/// The system's text for an errno value.
inline std::string socket_error_text(int code) { return std::error_code(code, std::generic_category()).message(); }

/// Milliseconds left until `deadline` (0 once past), at most `cap`.
inline int ms_until(std::chrono::steady_clock::time_point deadline, int cap = 1 << 30) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return int(std::max<std::int64_t>(0, std::min<std::int64_t>(left.count(), cap)));
}

/// Sends or receives exactly `bytes` on the non-blocking socket `fd` before `deadline`; false on
/// a closed connection, an error or the deadline.
inline bool transfer(int fd, void* data, std::size_t bytes, bool sending, std::chrono::steady_clock::time_point deadline) {
  auto* p = static_cast<std::uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = sending ? ::send(fd, p, bytes, MSG_NOSIGNAL) : ::recv(fd, p, bytes, 0);
    if (n > 0) {
      p += n;
      bytes -= std::size_t(n);
      continue;
    }
    if (n == 0 && !sending) return false;  // closed
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    pollfd pfd{fd, short(sending ? POLLOUT : POLLIN), 0};
    const int wait = ms_until(deadline);
    if (wait == 0 || ::poll(&pfd, 1, wait) <= 0) return false;
  }
  return true;
}

/// getaddrinfo of "host:port" or "[IPv6]:port" (nccl_comm_id_for's forms).
inline addrinfo* resolve(const std::string& address, const std::string& context) {
  const std::size_t colon = address.rfind(':');
  RLK_EXPECTS(colon != std::string::npos && colon > 0, std::invalid_argument, context, ": '", address,
              "' is not host:port");
  std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int status = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  RLK_EXPECTS(status == 0 && found != nullptr, std::invalid_argument, context, ": cannot resolve '", address,
              "': ", ::gai_strerror(status));
  return found;
}

inline std::string seconds_text(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

/// Rank 0's side: listens at `address`, answers every other rank's hello with `payload`.
inline void rendezvous_serve(const std::string& address, int world_size, const std::vector<std::uint8_t>& payload,
                             double timeout_seconds, const std::string& context) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_seconds));
  addrinfo* found = resolve(address, context);
  socket_handle listener;
  int last_error = 0;
  for (addrinfo* a = found; a != nullptr && listener.get() < 0; a = a->ai_next) {
    socket_handle s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (s.get() < 0) {
      last_error = errno;
      continue;
    }
    const int one = 1;
    (void)::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(s.get(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(s.get(), world_size) != 0 ||
        ::fcntl(s.get(), F_SETFL, ::fcntl(s.get(), F_GETFL) | O_NONBLOCK) != 0) {
      last_error = errno;
      continue;
    }
    listener = std::move(s);
  }
  ::freeaddrinfo(found);
  if (listener.get() < 0)
    throw distributed_error(0, context + ": cannot listen at " + address + ": " + socket_error_text(last_error) +
                                   " (the port is taken, or the host is not an address of rank 0's machine: set "
                                   "NCCL_COMM_ID=<rank 0's address>:<a free port> on every rank)");
  std::vector<bool> served(std::size_t(world_size), false);
  int joined = 1;
  while (joined < world_size) {
    pollfd pfd{listener.get(), POLLIN, 0};
    const int wait = ms_until(deadline);
    if (wait == 0 || ::poll(&pfd, 1, wait) <= 0) {
      std::string missing;
      for (int r = 1; r < world_size; ++r)
        if (!served[std::size_t(r)]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      throw distributed_error(0, context + ": timed out after " + seconds_text(timeout_seconds) + " s: rank(s) " +
                                     missing + " did not reach " + address +
                                     " (a rank did not start, or cannot reach rank 0's address)");
    }
    socket_handle peer(::accept(listener.get(), nullptr, nullptr));
    if (peer.get() < 0) continue;
    (void)::fcntl(peer.get(), F_SETFL, ::fcntl(peer.get(), F_GETFL) | O_NONBLOCK);
    // A hello within 10 s (or the deadline); a connection that says nothing, or something else,
    // is not a rank of this job: dropped.
    std::uint8_t hello[24];
    const auto hello_deadline = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(10));
    if (!transfer(peer.get(), hello, sizeof(hello), false, hello_deadline) ||
        std::memcmp(hello, rendezvous_magic, 8) != 0)
      continue;
    const std::uint64_t rank = read_u64(hello + 8), size = read_u64(hello + 16);
    std::string refusal;
    if (size != std::uint64_t(world_size))
      refusal = "rank " + std::to_string(rank) + " reached " + address + " with a world size of " +
                std::to_string(size) + "; rank 0's is " + std::to_string(world_size) +
                " (every rank must be given the same world size)";
    else if (rank == 0 || rank >= size)
      refusal = "a process reached " + address + " as rank " + std::to_string(rank) + " of " + std::to_string(size);
    else if (served[std::size_t(rank)])
      refusal = "two processes reached " + address + " as rank " + std::to_string(rank) +
                " (every rank needs a rank of its own)";
    std::vector<std::uint8_t> reply(16);
    std::memcpy(reply.data(), rendezvous_magic, 8);
    if (refusal.empty()) {
      put_u64(reply.data() + 8, payload.size());
      reply.insert(reply.end(), payload.begin(), payload.end());
    } else {
      put_u64(reply.data() + 8, ~std::uint64_t(0));
      const std::string why = "rank 0 refused this rank: " + refusal;
      reply.insert(reply.end(), why.begin(), why.end());
    }
    const bool sent = transfer(peer.get(), reply.data(), reply.size(), true, deadline);
    if (!refusal.empty()) throw distributed_error(0, context + ": " + refusal);
    if (sent) {
      served[std::size_t(rank)] = true;
      ++joined;
    }
  }
}

/// A peer's side: connects to `address` until rank 0 answers (retrying while nobody listens).
inline std::vector<std::uint8_t> rendezvous_fetch(const std::string& address, int rank, int world_size,
                                                  double timeout_seconds, const std::string& context) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_seconds));
  std::string last = "nobody answered";
  for (;;) {
    addrinfo* found = resolve(address, context);
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      socket_handle s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
      if (s.get() < 0) continue;
      bool connected = ::connect(s.get(), a->ai_addr, a->ai_addrlen) == 0;
      if (!connected && errno == EINPROGRESS) {
        pollfd pfd{s.get(), POLLOUT, 0};
        int error = 0;
        socklen_t len = sizeof(error);
        connected = ::poll(&pfd, 1, ms_until(deadline, 2000)) == 1 &&
                    ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0;
        if (!connected && error != 0) last = socket_error_text(error);
      } else if (!connected) {
        last = socket_error_text(errno);
      }
      if (!connected) continue;
      std::uint8_t hello[24];
      std::memcpy(hello, rendezvous_magic, 8);
      put_u64(hello + 8, std::uint64_t(rank));
      put_u64(hello + 16, std::uint64_t(world_size));
      std::uint8_t head[16];
      if (!transfer(s.get(), hello, sizeof(hello), true, deadline) ||
          !transfer(s.get(), head, sizeof(head), false, deadline) || std::memcmp(head, rendezvous_magic, 8) != 0) {
        last = "a connection that gave no answer";
        continue;
      }
      const std::uint64_t size = read_u64(head + 8);
      if (size == ~std::uint64_t(0)) {  // refused: the reason follows, up to the close
        std::string why;
        char c;
        while (why.size() < 4096 && transfer(s.get(), &c, 1, false, deadline)) why += c;
        ::freeaddrinfo(found);
        throw distributed_error(rank, context + ": " + why);
      }
      std::vector<std::uint8_t> payload(std::size_t(std::min<std::uint64_t>(size, 1 << 20)));
      if (size > (1u << 20) || !transfer(s.get(), payload.data(), payload.size(), false, deadline)) {
        last = "a truncated answer";
        continue;
      }
      ::freeaddrinfo(found);
      return payload;
    }
    ::freeaddrinfo(found);
    if (ms_until(deadline) == 0)
      throw distributed_error(rank, context + ": timed out after " + seconds_text(timeout_seconds) +
                                        " s waiting for rank 0 at " + address + " (last: " + last +
                                        "; rank 0 did not start, or the address is not rank 0's machine)");
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, ms_until(deadline))));
  }
}

#endif

/// @brief Rank 0's `payload` on every rank of a job without another channel: rank 0 listens at
/// `address` ("host:port" or "[IPv6]:port", an address of its machine) until each of the other
/// world_size - 1 ranks has connected and received it; the others connect (retrying while
/// nobody listens) and return it. Touches no environment variable. Every wait ends at
/// `timeout_seconds`. `context` starts every message (say "rlkernels::nccl_communicator: rank 1
/// of 2: init of 'the NCCL unique id'").
/// @throw distributed_error (this rank) when rank 0 cannot listen there, when a rank does not
///        come in time, or when a peer reports another world size or a rank already served (rank
///        0 and that peer both throw); std::invalid_argument on an address that does not resolve
inline std::vector<std::uint8_t> rendezvous_broadcast(const std::string& address, int rank, int world_size,
                                                      const std::vector<std::uint8_t>& payload, double timeout_seconds,
                                                      const std::string& context) {
  RLK_EXPECTS(world_size >= 1 && rank >= 0 && rank < world_size, std::invalid_argument, context, ": rank ", rank,
              " is not a rank of a world of size ", world_size);
  RLK_EXPECTS(timeout_seconds > 0 && timeout_seconds < 1e9, std::invalid_argument, context,
              ": timeout_seconds must be > 0 (and finite), got ", timeout_seconds);
  if (world_size == 1) return payload;
#if defined(__linux__)
  if (rank == 0) {
    rendezvous_serve(address, world_size, payload, timeout_seconds, context);
    return payload;
  }
  return rendezvous_fetch(address, rank, world_size, timeout_seconds, context);
#else
  (void)address;
  throw std::logic_error(context + ": the rendezvous needs POSIX sockets");
#endif
}

}  // namespace detail
}  // namespace rlkernels
