// rlkernels/distributed/tcp_bootstrap.hpp
// The launcher's environment (torchrun-style RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT) and a one-shot broadcast of a few bytes from rank 0 to every rank over TCP: what a
// NCCL communicator needs to share its unique id when no MPI is there. Host only (POSIX sockets);
// no CUDA, no MPI.
//
// Protocol of tcp_broadcast_bytes: rank 0 listens on MASTER_PORT (every interface); every other
// rank connects to MASTER_ADDR:MASTER_PORT (retrying until rank 0 listens) and sends a 12-byte
// hello (magic "RLKB", its rank, the world size; big-endian); once every rank has said hello,
// rank 0 sends each the payload as an 8-byte big-endian length and the bytes, and closes. Every
// wait (accept, connect, send, recv) ends at one deadline; then the call throws
// distributed_error naming this rank and, on rank 0, the ranks that never connected. MASTER_ADDR
// is resolved (getaddrinfo) on a helper thread, abandoned at the deadline if the resolver hangs.
#pragma once

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"

#include <cerrno>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace rlkernels {

/// @brief Where this process sits in a job started by a torchrun-style launcher (torchrun,
/// torch.distributed.run, or any script that sets the same variables).
struct launcher_environment {
  int rank = 0;                          ///< RANK: this process's rank, 0 .. world_size - 1
  int world_size = 1;                    ///< WORLD_SIZE: the number of ranks
  int local_rank = 0;                    ///< LOCAL_RANK: the rank on this machine (the CUDA device to use)
  std::string master_addr = "127.0.0.1";  ///< MASTER_ADDR: host name or address of rank 0's machine
  int master_port = 29500;               ///< MASTER_PORT: the TCP port rank 0 listens on

  /// @brief Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT. LOCAL_RANK defaults to
  /// RANK (right on one machine), MASTER_ADDR to 127.0.0.1 and MASTER_PORT to 29500 (torchrun's
  /// defaults). Costs a few getenv calls.
  /// @return nullopt when neither RANK nor WORLD_SIZE is set (not started by such a launcher)
  /// @throw std::invalid_argument naming the variable when one is set but malformed (not a whole
  ///        decimal integer, out of range, RANK >= WORLD_SIZE, an empty MASTER_ADDR), or when only
  ///        one of RANK and WORLD_SIZE is set
  static std::optional<launcher_environment> from_env();
};

namespace detail {

/// The whole of `text` as a decimal int in [lo, hi], else nullopt (no sign games, no spaces).
inline std::optional<int> parse_int_strict(const char* text, long lo, long hi) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  const char* p = text;
  if (*p == '+' || *p == '-') ++p;
  if (*p < '0' || *p > '9') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == nullptr || *end != '\0' || value < lo || value > hi) return std::nullopt;
  return static_cast<int>(value);
}

inline int env_int(const char* name, long lo, long hi, const char* meaning) {
  const char* text = std::getenv(name);
  const std::optional<int> value = parse_int_strict(text, lo, hi);
  RLK_EXPECTS(value.has_value(), std::invalid_argument, "rlkernels::launcher_environment::from_env: ", name, "='",
              text ? text : "", "' is not ", meaning, " (a decimal integer in [", lo, ", ", hi, "])");
  return *value;
}

/// A socket closed on every path.
class socket_handle {
 public:
  socket_handle() = default;
  explicit socket_handle(int fd) noexcept : fd_(fd) {}
  socket_handle(socket_handle&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  socket_handle& operator=(socket_handle&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  socket_handle(const socket_handle&) = delete;
  socket_handle& operator=(const socket_handle&) = delete;
  ~socket_handle() { reset(); }
  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  void reset() noexcept {
    if (fd_ >= 0) (void)::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

/// getaddrinfo's list, freed on every path.
class address_list {
 public:
  address_list() = default;
  address_list(const address_list&) = delete;
  address_list& operator=(const address_list&) = delete;
  ~address_list() {
    if (list_) ::freeaddrinfo(list_);
  }
  /// 0 or getaddrinfo's error code (no deadline: for the passive, local look-up only).
  int resolve(const char* host, int port, bool passive) {
    if (list_) ::freeaddrinfo(list_);
    list_ = nullptr;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    const std::string service = std::to_string(port);
    return ::getaddrinfo(host, service.c_str(), &hints, &list_);
  }
  const addrinfo* get() const noexcept { return list_; }

 private:
  addrinfo* list_ = nullptr;
};

/// A host name resolved on a helper thread, so that a slow resolver (a DNS server that does not
/// answer) cannot hold the caller past its deadline: then the thread is abandoned (detached; it
/// frees its result whenever getaddrinfo returns).
struct pending_resolution {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  int rc = EAI_AGAIN;
  addrinfo* list = nullptr;
  ~pending_resolution() {
    if (list) ::freeaddrinfo(list);
  }
};

/// getaddrinfo(host, port) for a stream socket, waiting at most until `deadline`. Null with
/// `error` set when it fails or is still running at the deadline.
inline std::shared_ptr<pending_resolution> resolve_until(const std::string& host, int port,
                                                         std::chrono::steady_clock::time_point deadline,
                                                         std::string& error) {
  auto state = std::make_shared<pending_resolution>();
  try {
    std::thread([state, host, port] {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      hints.ai_flags = AI_NUMERICSERV;
      addrinfo* list = nullptr;
      const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
      std::lock_guard<std::mutex> lock(state->mutex);
      state->rc = rc;
      state->list = rc == 0 ? list : nullptr;
      state->done = true;
      state->done_cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    error = std::string("cannot start a thread to resolve MASTER_ADDR: ") + e.what();
    return nullptr;
  }
  std::unique_lock<std::mutex> lock(state->mutex);
  if (!state->done_cv.wait_until(lock, deadline, [&] { return state->done; })) {
    error = "resolving MASTER_ADDR '" + host + "' had not finished at the deadline (a slow or unreachable DNS server)";
    return nullptr;
  }
  if (state->rc != 0) {
    error = "cannot resolve MASTER_ADDR '" + host + "': " + ::gai_strerror(state->rc);
    return nullptr;
  }
  return state;
}

/// The state shared by the steps of one tcp_broadcast_bytes call: the deadline and the messages.
class tcp_bootstrap_session {
 public:
  using clock = std::chrono::steady_clock;

  tcp_bootstrap_session(const launcher_environment& env, double timeout_seconds)
      : env_(env),
        timeout_(timeout_seconds),
        deadline_(clock::now() +
                  std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_seconds))) {}

  const launcher_environment& env() const noexcept { return env_; }
  clock::time_point deadline() const noexcept { return deadline_; }
  bool expired() const noexcept { return clock::now() >= deadline_; }

  /// Milliseconds left until the deadline for poll(), at least 0, at most `cap_ms`.
  int poll_ms(int cap_ms = INT_MAX) const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - clock::now()).count();
    if (left <= 0) return 0;
    return static_cast<int>(std::min<long long>(static_cast<long long>(left) + 1, static_cast<long long>(cap_ms)));
  }

  std::string where() const {
    return "rank " + std::to_string(env_.rank) + " of " + std::to_string(env_.world_size);
  }
  std::string seconds() const {
    std::ostringstream s;
    s << timeout_ << " s";
    return s.str();
  }
  std::string master() const { return env_.master_addr + ":" + std::to_string(env_.master_port); }

  [[noreturn]] void fail(const std::string& why) const {
    throw distributed_error(env_.rank, "rlkernels::tcp_broadcast_bytes: " + where() + ": TCP bootstrap " + why);
  }
  [[noreturn]] void fail_errno(const std::string& doing, int code) const {
    fail(doing + " failed: " + std::strerror(code));
  }

  /// Waits until `fd` is ready for `events` or the deadline; false at the deadline.
  bool wait_for(int fd, short events, const char* doing) const {
    for (;;) {
      pollfd p{};
      p.fd = fd;
      p.events = events;
      const int ms = poll_ms();
      const int n = ::poll(&p, 1, ms);
      if (n > 0) return true;  // ready, or an error/hang-up the next call reports
      if (n < 0 && errno != EINTR) fail_errno(std::string("poll while ") + doing, errno);
      if (n == 0 && expired()) return false;
    }
  }

  /// Sends all of `data`; false at the deadline. Throws if the peer went away.
  bool send_all(int fd, const void* data, std::size_t bytes, const std::string& peer) const {
    const auto* p = static_cast<const std::uint8_t*>(data);
    while (bytes > 0) {
      int flags = 0;
#ifdef MSG_NOSIGNAL
      flags |= MSG_NOSIGNAL;
#endif
      const ssize_t n = ::send(fd, p, bytes, flags);
      if (n > 0) {
        p += n;
        bytes -= static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!wait_for(fd, POLLOUT, "sending")) return false;
        continue;
      }
      fail_errno("sending to " + peer, n < 0 ? errno : EPIPE);
    }
    return true;
  }

  /// Receives exactly `bytes`; false at the deadline. Throws if the peer closed first.
  bool recv_all(int fd, void* data, std::size_t bytes, const std::string& peer) const {
    auto* p = static_cast<std::uint8_t*>(data);
    while (bytes > 0) {
      const ssize_t n = ::recv(fd, p, bytes, 0);
      if (n > 0) {
        p += n;
        bytes -= static_cast<std::size_t>(n);
        continue;
      }
      if (n == 0)
        fail("failed: " + peer + " closed the connection early (it failed or was stopped: see its own message)");
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!wait_for(fd, POLLIN, "receiving")) return false;
        continue;
      }
      fail_errno("receiving from " + peer, errno);
    }
    return true;
  }

 private:
  launcher_environment env_;
  double timeout_;
  clock::time_point deadline_;
};

inline bool set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

inline void put_u32(std::uint8_t* out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}
inline std::uint32_t get_u32(const std::uint8_t* in) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | in[i];
  return v;
}

constexpr std::uint32_t tcp_bootstrap_magic = 0x524c4b42u;  // "RLKB"
constexpr std::size_t tcp_bootstrap_hello_bytes = 12;

/// Rank 0's socket listening on every interface at `port` (IPv6 dual-stack when available, else
/// IPv4), non-blocking.
inline socket_handle tcp_listen(const tcp_bootstrap_session& s) {
  address_list addresses;
  const int rc = addresses.resolve(nullptr, s.env().master_port, true);
  if (rc != 0) s.fail("failed: getaddrinfo for the listening port: " + std::string(::gai_strerror(rc)));
  // Prefer IPv6 (dual-stack takes IPv4 peers too), then IPv4.
  int last_error = 0;
  for (int family : {AF_INET6, AF_INET}) {
    for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
      if (a->ai_family != family) continue;
      socket_handle fd(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
      if (!fd) {
        last_error = errno;
        continue;
      }
      const int one = 1, zero = 0;
      (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (family == AF_INET6) (void)::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
        last_error = errno;
        if (last_error == EADDRINUSE)
          s.fail("failed: cannot listen on MASTER_PORT " + std::to_string(s.env().master_port) + ": " +
                 std::strerror(last_error) + " (another job or process uses it: choose another MASTER_PORT)");
        continue;
      }
      const int backlog = std::max(16, std::min(s.env().world_size, 4096));
      if (::listen(fd.get(), backlog) != 0 || !set_nonblocking(fd.get())) {
        last_error = errno;
        continue;
      }
      return fd;
    }
  }
  s.fail_errno("listening on MASTER_PORT " + std::to_string(s.env().master_port), last_error ? last_error : EINVAL);
}

inline void tcp_broadcast_root(const tcp_bootstrap_session& s, const std::vector<std::uint8_t>& bytes) {
  const int world = s.env().world_size;
  socket_handle listener = tcp_listen(s);

  struct pending {
    socket_handle fd;
    std::uint8_t hello[tcp_bootstrap_hello_bytes] = {};
    std::size_t got = 0;
  };
  std::vector<pending> pendings;                                  // accepted, hello not complete
  std::vector<socket_handle> peers(static_cast<std::size_t>(world));  // by rank, once identified
  int joined = 1;

  while (joined < world) {
    std::vector<pollfd> fds(1 + pendings.size());
    fds[0].fd = listener.get();
    fds[0].events = POLLIN;
    for (std::size_t i = 0; i < pendings.size(); ++i) {
      fds[i + 1].fd = pendings[i].fd.get();
      fds[i + 1].events = POLLIN;
    }
    const int n = ::poll(fds.data(), static_cast<nfds_t>(fds.size()), s.poll_ms());
    if (n < 0) {
      if (errno == EINTR) continue;
      s.fail_errno("poll while waiting for the ranks", errno);
    }
    if (n == 0) {
      if (!s.expired()) continue;
      std::ostringstream missing;
      int count = 0;
      for (int r = 1; r < world; ++r)
        if (!peers[static_cast<std::size_t>(r)]) missing << (count++ ? ", " : "") << r;
      s.fail("on port " + std::to_string(s.env().master_port) + " timed out after " + s.seconds() + "; " +
             std::to_string(count) + " of " + std::to_string(world - 1) +
             " other ranks never connected; ranks that never connected: " + missing.str() +
             " (check MASTER_ADDR/MASTER_PORT, WORLD_SIZE and RANK on every rank, that every rank was started, and "
             "that rank 0's port is reachable from the others' machines)");
    }
    // Hellos first (indices stay valid), then new connections.
    for (std::size_t i = pendings.size(); i-- > 0;) {
      if (fds[i + 1].revents == 0) continue;
      pending& p = pendings[i];
      const ssize_t got = ::recv(p.fd.get(), p.hello + p.got, tcp_bootstrap_hello_bytes - p.got, 0);
      if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (got <= 0) {  // closed before saying hello: not one of ours, or it died; forget it
        pendings.erase(pendings.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      p.got += static_cast<std::size_t>(got);
      if (p.got < tcp_bootstrap_hello_bytes) continue;
      const std::uint32_t magic = get_u32(p.hello), rank = get_u32(p.hello + 4), size = get_u32(p.hello + 8);
      if (magic != tcp_bootstrap_magic) {  // a stranger on the port: ignore it
        pendings.erase(pendings.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (size != static_cast<std::uint32_t>(world))
        s.fail("failed: a rank (" + std::to_string(rank) + ") says WORLD_SIZE is " + std::to_string(size) +
               ", rank 0 has " + std::to_string(world) + " (the ranks were started with different settings)");
      if (rank == 0 || rank >= static_cast<std::uint32_t>(world))
        s.fail("failed: a peer says it is rank " + std::to_string(rank) + ", not one of 1 .. " +
               std::to_string(world - 1));
      if (peers[rank])
        s.fail("failed: two processes say they are rank " + std::to_string(rank) +
               " (check RANK on every process, and that no other job uses MASTER_PORT " +
               std::to_string(s.env().master_port) + ")");
      peers[rank] = std::move(p.fd);
      ++joined;
      pendings.erase(pendings.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (fds[0].revents != 0) {
      for (;;) {
        socket_handle fd(::accept(listener.get(), nullptr, nullptr));
        if (!fd) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          if (errno == EAGAIN || errno == EWOULDBLOCK) break;
          s.fail_errno("accept", errno);
        }
        if (!set_nonblocking(fd.get())) s.fail_errno("fcntl(O_NONBLOCK) on an accepted connection", errno);
        pending p;
        p.fd = std::move(fd);
        pendings.push_back(std::move(p));
      }
    }
  }
  listener.reset();

  std::uint8_t header[8];
  const std::uint64_t length = bytes.size();
  put_u32(header, static_cast<std::uint32_t>(length >> 32));
  put_u32(header + 4, static_cast<std::uint32_t>(length));
  for (int r = 1; r < world; ++r) {
    const int fd = peers[static_cast<std::size_t>(r)].get();
    const std::string peer = "rank " + std::to_string(r);
    if (!s.send_all(fd, header, sizeof(header), peer) || !s.send_all(fd, bytes.data(), bytes.size(), peer))
      s.fail("timed out after " + s.seconds() + " sending the payload to rank " + std::to_string(r) +
             " (it stopped reading)");
  }
}

/// A connected non-blocking socket to rank 0, or an empty handle with `error` set (to retry).
inline socket_handle tcp_try_connect(const tcp_bootstrap_session& s, std::string& error) {
  const std::shared_ptr<pending_resolution> addresses =
      resolve_until(s.env().master_addr, s.env().master_port, s.deadline(), error);
  if (!addresses) return {};
  for (const addrinfo* a = addresses->list; a != nullptr; a = a->ai_next) {
    socket_handle fd(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
    if (!fd || !set_nonblocking(fd.get())) {
      error = std::string("socket: ") + std::strerror(errno);
      continue;
    }
    int status = ::connect(fd.get(), a->ai_addr, a->ai_addrlen);
    if (status != 0 && (errno == EINPROGRESS || errno == EINTR)) {
      if (!s.wait_for(fd.get(), POLLOUT, "connecting")) {
        error = "connection attempt still pending at the deadline";
        return {};
      }
      int so_error = 0;
      socklen_t len = sizeof(so_error);
      if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
      if (so_error == 0) status = 0;
      else errno = so_error;
    }
    if (status == 0) {
      const int one = 1;
      (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return fd;
    }
    error = std::strerror(errno);
  }
  return {};
}

inline std::vector<std::uint8_t> tcp_broadcast_peer(const tcp_bootstrap_session& s) {
  std::string error = "no attempt made";
  socket_handle fd;
  for (;;) {
    fd = tcp_try_connect(s, error);
    if (fd || s.expired()) break;
    // Rank 0 may not listen yet: try again shortly (the last try is at the deadline).
    const auto pause = std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(50),
                                                                     s.deadline() - std::chrono::steady_clock::now());
    if (pause > std::chrono::steady_clock::duration::zero()) std::this_thread::sleep_for(pause);
  }
  if (!fd)
    s.fail("timed out after " + s.seconds() + " connecting to rank 0 at MASTER_ADDR:MASTER_PORT = " + s.master() +
           " (last error: " + error + "); rank 0 never accepted (check that rank 0 was started, and "
           "MASTER_ADDR/MASTER_PORT on every rank)");

  std::uint8_t hello[tcp_bootstrap_hello_bytes];
  put_u32(hello, tcp_bootstrap_magic);
  put_u32(hello + 4, static_cast<std::uint32_t>(s.env().rank));
  put_u32(hello + 8, static_cast<std::uint32_t>(s.env().world_size));
  if (!s.send_all(fd.get(), hello, sizeof(hello), "rank 0 at " + s.master()))
    s.fail("timed out after " + s.seconds() + " sending this rank's hello to rank 0 at " + s.master());

  const std::string peer = "rank 0 at " + s.master();
  const std::string waiting = "timed out after " + s.seconds() + " waiting for rank 0 at " + s.master() +
                              " to send the payload (connected, but rank 0 is still waiting for other ranks or hangs)";
  std::uint8_t header[8];
  if (!s.recv_all(fd.get(), header, sizeof(header), peer)) s.fail(waiting);
  const std::uint64_t length = (std::uint64_t(get_u32(header)) << 32) | get_u32(header + 4);
  if (length > std::uint64_t(1) << 40) s.fail("failed: rank 0 announced an implausible payload of " +
                                               std::to_string(length) + " bytes (a stranger on MASTER_PORT?)");
  std::vector<std::uint8_t> out(static_cast<std::size_t>(length));
  if (!s.recv_all(fd.get(), out.data(), out.size(), peer)) s.fail(waiting);
  return out;
}

}  // namespace detail

inline std::optional<launcher_environment> launcher_environment::from_env() {
  const char* rank_text = std::getenv("RANK");
  const char* size_text = std::getenv("WORLD_SIZE");
  if (rank_text == nullptr && size_text == nullptr) return std::nullopt;
  RLK_EXPECTS(rank_text != nullptr && size_text != nullptr, std::invalid_argument,
              "rlkernels::launcher_environment::from_env: ", rank_text ? "RANK" : "WORLD_SIZE", " is set but ",
              rank_text ? "WORLD_SIZE" : "RANK", " is not (a torchrun-style launcher sets both)");
  launcher_environment env;
  env.world_size = detail::env_int("WORLD_SIZE", 1, INT_MAX, "a number of ranks");
  env.rank = detail::env_int("RANK", 0, INT_MAX, "a rank");
  RLK_EXPECTS(env.rank < env.world_size, std::invalid_argument, "rlkernels::launcher_environment::from_env: RANK=",
              env.rank, " is not below WORLD_SIZE=", env.world_size);
  env.local_rank = std::getenv("LOCAL_RANK") ? detail::env_int("LOCAL_RANK", 0, INT_MAX, "a local rank") : env.rank;
  if (const char* addr = std::getenv("MASTER_ADDR")) {
    RLK_EXPECTS(*addr != '\0', std::invalid_argument,
                "rlkernels::launcher_environment::from_env: MASTER_ADDR is set but empty");
    env.master_addr = addr;
  }
  if (std::getenv("MASTER_PORT")) env.master_port = detail::env_int("MASTER_PORT", 1, 65535, "a TCP port");
  return env;
}

/// @brief Rank 0's `root_bytes`, on every rank, over TCP: rank 0 listens on env.master_port (all
/// interfaces, SO_REUSEADDR), accepts a connection from every other rank and sends each the bytes;
/// the others connect to env.master_addr:env.master_port (a host name or address), retrying while
/// rank 0 has not started (each try resolves MASTER_ADDR on a short-lived helper thread, so that
/// a hanging DNS server cannot outlast the deadline). One call per job and port (rank 0 must be the only listener). Costs
/// one connection per rank and world_size - 1 copies of the bytes sent by rank 0: for small
/// payloads (a NCCL unique id), not for data.
/// @param env this rank's place in the job (launcher_environment::from_env())
/// @param root_bytes the payload on rank 0; ignored on the other ranks
/// @param timeout_seconds the deadline of the whole exchange, > 0
/// @return rank 0's bytes
/// @throw std::invalid_argument on a bad env or timeout;
///        distributed_error on a socket failure or at the deadline, naming this rank and, on rank
///        0, the ranks that never connected
inline std::vector<std::uint8_t> tcp_broadcast_bytes(const launcher_environment& env,
                                                     std::vector<std::uint8_t> root_bytes, double timeout_seconds) {
  RLK_EXPECTS(env.world_size >= 1 && env.rank >= 0 && env.rank < env.world_size, std::invalid_argument,
              "rlkernels::tcp_broadcast_bytes: rank ", env.rank, " is not a rank of a world of size ", env.world_size);
  RLK_EXPECTS(env.master_port >= 1 && env.master_port <= 65535, std::invalid_argument,
              "rlkernels::tcp_broadcast_bytes: master_port ", env.master_port, " is not a TCP port");
  RLK_EXPECTS(timeout_seconds > 0 && timeout_seconds < 1e9, std::invalid_argument,
              "rlkernels::tcp_broadcast_bytes: timeout_seconds must be > 0 (and finite), got ", timeout_seconds);
  if (env.world_size == 1) return root_bytes;
  const detail::tcp_bootstrap_session session(env, timeout_seconds);
  if (env.rank == 0) {
    detail::tcp_broadcast_root(session, root_bytes);
    return root_bytes;
  }
  return detail::tcp_broadcast_peer(session);
}

}  // namespace rlkernels
