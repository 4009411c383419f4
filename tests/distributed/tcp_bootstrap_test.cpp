// The torchrun-style launcher environment and the TCP bootstrap broadcast: parsing and rejecting
// the variables, and real exchanges between forked processes on 127.0.0.1 (rank 0 in the test
// process, the other ranks in children), including the timeouts when a rank never joins.
#include <rlkernels/distributed/tcp_bootstrap.hpp>

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

/// Restores (or unsets) the launcher variables when the test case ends.
class launcher_variables {
 public:
  launcher_variables() {
    for (const char* name : names_) {
      const char* value = std::getenv(name);
      saved_.push_back(value ? std::optional<std::string>(value) : std::nullopt);
      ::unsetenv(name);
    }
  }
  ~launcher_variables() {
    for (std::size_t i = 0; i < saved_.size(); ++i) {
      if (saved_[i]) ::setenv(names_[i], saved_[i]->c_str(), 1);
      else ::unsetenv(names_[i]);
    }
  }
  static void set(const char* name, const char* value) { ::setenv(name, value, 1); }

 private:
  static constexpr const char* names_[5] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"};
  std::vector<std::optional<std::string>> saved_;
};

/// A TCP port nobody listens on now (the kernel's choice for port 0).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  socklen_t len = sizeof(a);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

rlkernels::launcher_environment env_for(int rank, int world, int port) {
  rlkernels::launcher_environment env;
  env.rank = rank;
  env.world_size = world;
  env.local_rank = rank;
  env.master_addr = "127.0.0.1";
  env.master_port = port;
  return env;
}

std::vector<std::uint8_t> payload(std::size_t n) {
  std::vector<std::uint8_t> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>((i * 131 + 7) & 0xff);
  return bytes;
}

/// Forks a peer that runs the bootstrap as `rank` and exits 0 when it received `expected` (or,
/// with expect_failure, when it threw distributed_error), 1 otherwise. Never returns in the child.
pid_t fork_peer(int rank, int world, int port, double timeout, const std::vector<std::uint8_t>& expected,
                bool expect_failure = false) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid != 0) return pid;
  int code = 1;
  try {
    const std::vector<std::uint8_t> got =
        rlkernels::tcp_broadcast_bytes(env_for(rank, world, port), {}, timeout);
    code = (!expect_failure && got == expected) ? 0 : 1;
  } catch (const rlkernels::distributed_error&) {
    code = expect_failure ? 0 : 2;
  } catch (...) {
    code = 3;
  }
  std::_Exit(code);
}

int exit_code_of(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/// Open file descriptors of this process (Linux's /proc/self/fd), -1 where unknown.
int open_descriptors() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int n = 0;
  while (::readdir(dir) != nullptr) ++n;
  ::closedir(dir);
  return n;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("launcher_environment::from_env reads torchrun's variables", "[distributed]") {
  launcher_variables guard;
  CHECK_FALSE(rlkernels::launcher_environment::from_env().has_value());

  launcher_variables::set("RANK", "2");
  launcher_variables::set("WORLD_SIZE", "4");
  launcher_variables::set("LOCAL_RANK", "1");
  launcher_variables::set("MASTER_ADDR", "node-7.cluster");
  launcher_variables::set("MASTER_PORT", "12345");
  const auto env = rlkernels::launcher_environment::from_env();
  REQUIRE(env.has_value());
  CHECK(env->rank == 2);
  CHECK(env->world_size == 4);
  CHECK(env->local_rank == 1);
  CHECK(env->master_addr == "node-7.cluster");
  CHECK(env->master_port == 12345);

  SECTION("defaults for LOCAL_RANK, MASTER_ADDR and MASTER_PORT") {
    ::unsetenv("LOCAL_RANK");
    ::unsetenv("MASTER_ADDR");
    ::unsetenv("MASTER_PORT");
    const auto d = rlkernels::launcher_environment::from_env();
    REQUIRE(d.has_value());
    CHECK(d->local_rank == 2);
    CHECK(d->master_addr == "127.0.0.1");
    CHECK(d->master_port == 29500);
  }
}

TEST_CASE("launcher_environment::from_env rejects malformed variables, naming them", "[distributed]") {
  launcher_variables guard;
  launcher_variables::set("RANK", "0");
  launcher_variables::set("WORLD_SIZE", "2");
  launcher_variables::set("LOCAL_RANK", "0");
  launcher_variables::set("MASTER_ADDR", "127.0.0.1");
  launcher_variables::set("MASTER_PORT", "29500");
  REQUIRE(rlkernels::launcher_environment::from_env().has_value());

  const auto rejects = [](const char* name, const char* value, const char* named) {
    launcher_variables::set(name, value);
    std::string message = "(nothing thrown)";
    try {
      (void)rlkernels::launcher_environment::from_env();
    } catch (const std::invalid_argument& e) {
      message = e.what();
    }
    INFO(name << "='" << value << "': " << message);
    CHECK(message.find(named) != std::string::npos);
  };
  SECTION("RANK") {
    rejects("RANK", "one", "RANK");
    rejects("RANK", "", "RANK");
    rejects("RANK", "-1", "RANK");
    rejects("RANK", "1x", "RANK");
    rejects("RANK", " 1", "RANK");
    rejects("RANK", "2", "RANK");  // not below WORLD_SIZE
  }
  SECTION("WORLD_SIZE") {
    rejects("WORLD_SIZE", "0", "WORLD_SIZE");
    rejects("WORLD_SIZE", "2.0", "WORLD_SIZE");
    rejects("WORLD_SIZE", "99999999999999999999", "WORLD_SIZE");
  }
  SECTION("LOCAL_RANK") { rejects("LOCAL_RANK", "gpu0", "LOCAL_RANK"); }
  SECTION("MASTER_PORT") {
    rejects("MASTER_PORT", "0", "MASTER_PORT");
    rejects("MASTER_PORT", "65536", "MASTER_PORT");
    rejects("MASTER_PORT", "http", "MASTER_PORT");
  }
  SECTION("MASTER_ADDR") { rejects("MASTER_ADDR", "", "MASTER_ADDR"); }
  SECTION("only one of RANK and WORLD_SIZE") {
    ::unsetenv("WORLD_SIZE");
    CHECK_THROWS_WITH(rlkernels::launcher_environment::from_env(), Catch::Matchers::Contains("WORLD_SIZE"));
    CHECK_THROWS_AS(rlkernels::launcher_environment::from_env(), std::invalid_argument);
  }
}

TEST_CASE("tcp_broadcast_bytes rejects bad arguments; one rank returns its bytes", "[distributed]") {
  CHECK_THROWS_AS(rlkernels::tcp_broadcast_bytes(env_for(2, 2, 29500), {}, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::tcp_broadcast_bytes(env_for(0, 2, 0), {}, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(rlkernels::tcp_broadcast_bytes(env_for(0, 2, 29500), {}, 0.0), std::invalid_argument);
  const auto bytes = payload(10);
  CHECK(rlkernels::tcp_broadcast_bytes(env_for(0, 1, 29500), bytes, 1.0) == bytes);
}

TEST_CASE("tcp_broadcast_bytes: 3 ranks exchange 1000 bytes on 127.0.0.1", "[distributed]") {
  const int port = free_port();
  const auto bytes = payload(1000);
  // The peers start first and retry until rank 0 listens.
  const pid_t p1 = fork_peer(1, 3, port, 20.0, bytes);
  const pid_t p2 = fork_peer(2, 3, port, 20.0, bytes);
  std::vector<std::uint8_t> got;
  CHECK_NOTHROW(got = rlkernels::tcp_broadcast_bytes(env_for(0, 3, port), bytes, 20.0));
  CHECK(got == bytes);
  CHECK(exit_code_of(p1) == 0);
  CHECK(exit_code_of(p2) == 0);

  SECTION("again on the same port, rank 0 first, an empty payload") {
    const pid_t q1 = fork_peer(1, 2, port, 20.0, {});
    CHECK(rlkernels::tcp_broadcast_bytes(env_for(0, 2, port), {}, 20.0).empty());
    CHECK(exit_code_of(q1) == 0);
  }
}

TEST_CASE("tcp_broadcast_bytes: rank 0 names the ranks that never connect, within its timeout", "[distributed]") {
  const int port = free_port();
  const auto bytes = payload(64);
  // Ranks 1 and 3 of 4 join; rank 2 never does. Ranks 1 and 3 fail too, when rank 0 gives up.
  const pid_t p1 = fork_peer(1, 4, port, 10.0, bytes, true);
  const pid_t p3 = fork_peer(3, 4, port, 10.0, bytes, true);
  const int descriptors_before = open_descriptors();
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    rlkernels::tcp_broadcast_bytes(env_for(0, 4, port), bytes, 1.0);
  } catch (const rlkernels::distributed_error& e) {
    message = e.what();
    CHECK(e.rank() == 0);
  }
  const double elapsed = seconds_since(start);
  CHECK(open_descriptors() == descriptors_before);  // the listener and accepted sockets are closed
  INFO(message);
  CHECK(elapsed >= 0.9);
  CHECK(elapsed < 3.0);
  CHECK(message.find("rank 0 of 4") != std::string::npos);
  CHECK(message.find("timed out after 1 s") != std::string::npos);
  CHECK(message.find("ranks that never connected: 2 ") != std::string::npos);
  // The connected peers learn of the failure as soon as rank 0 closes (well before their 10 s).
  const auto peers_start = std::chrono::steady_clock::now();
  CHECK(exit_code_of(p1) == 0);
  CHECK(exit_code_of(p3) == 0);
  CHECK(seconds_since(peers_start) < 5.0);
}

TEST_CASE("tcp_broadcast_bytes: a peer whose rank 0 never starts throws within its timeout", "[distributed]") {
  const int port = free_port();
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    rlkernels::tcp_broadcast_bytes(env_for(1, 2, port), {}, 0.5);
  } catch (const rlkernels::distributed_error& e) {
    message = e.what();
    CHECK(e.rank() == 1);
  }
  const double elapsed = seconds_since(start);
  INFO(message);
  CHECK(elapsed >= 0.45);
  CHECK(elapsed < 2.5);
  CHECK(message.find("rank 1 of 2") != std::string::npos);
  CHECK(message.find("timed out after 0.5 s") != std::string::npos);
  CHECK(message.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
}

TEST_CASE("tcp_broadcast_bytes: rank 0 rejects a peer started with another WORLD_SIZE", "[distributed]") {
  const int port = free_port();
  const pid_t p1 = fork_peer(1, 3, port, 10.0, {}, true);  // says WORLD_SIZE=3; rank 0 has 2
  std::string message;
  try {
    rlkernels::tcp_broadcast_bytes(env_for(0, 2, port), payload(8), 10.0);
  } catch (const rlkernels::distributed_error& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.find("WORLD_SIZE is 3, rank 0 has 2") != std::string::npos);
  CHECK(exit_code_of(p1) == 0);  // and the peer fails at once, when rank 0 closes
}

// Last: the abandoned resolver thread it may leave behind should not be running when a test forks.
TEST_CASE("tcp_broadcast_bytes: a peer of an unresolvable MASTER_ADDR throws within its timeout", "[distributed]") {
  auto env = env_for(1, 2, free_port());
  env.master_addr = "no-such-host.invalid";
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    rlkernels::tcp_broadcast_bytes(env, {}, 0.5);
  } catch (const rlkernels::distributed_error& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.find("no-such-host.invalid") != std::string::npos);
  CHECK(seconds_since(start) < 2.5);  // a slow DNS server does not hold the call past its deadline
}
