// rlkernels/distributed/rendezvous.hpp without a GPU, MPI or NCCL: how a job started without MPI
// hands rank 0's NCCL unique id to the other ranks (nccl_communicator's start-up under torchrun
// or srun). Ranks are threads of this process meeting on 127.0.0.1: every rank receives rank 0's
// bytes whichever starts first, the environment is never written (a thread reads NCCL_COMM_ID
// and the whole environment throughout, as another thread of a training program may, and nothing
// changes: the earlier code set NCCL_COMM_ID for the start-up), a missing rank, a taken port, a
// peer of another world size and two peers claiming one rank end in distributed_error on time,
// and the route: NCCL's own bootstrap only when NCCL_COMM_ID is in the environment.
#include <rlkernels/distributed/rendezvous.hpp>

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using namespace rlkernels;
using detail::rendezvous_broadcast;

/// A TCP port on 127.0.0.1 that was free a moment ago.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  if (fd >= 0) ::close(fd);
  REQUIRE(ok);
  return ntohs(a.sin_port);
}

/// The whole environment as text ("NAME=value" lines in order).
std::string environment_text() {
  std::string s;
  for (char** e = environ; e && *e; ++e) s += std::string(*e) + "\n";
  return s;
}

/// Reads NCCL_COMM_ID and the whole environment over and over on a thread of its own while it
/// lives, as another thread of a program may: records whether either ever differed from the start.
class environment_watch {
 public:
  environment_watch() : before_(environment_text()), thread_([this] { run(); }) {}
  environment_watch(const environment_watch&) = delete;
  environment_watch& operator=(const environment_watch&) = delete;
  ~environment_watch() { stop(); }
  /// Stops the thread; true if NCCL_COMM_ID and the environment never changed.
  bool untouched() {
    stop();
    return !changed_;
  }
  std::size_t reads() const noexcept { return reads_; }

 private:
  void run() {
    while (!done_) {
      if (std::getenv("NCCL_COMM_ID") != nullptr || environment_text() != before_) changed_ = true;
      ++reads_;
    }
  }
  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::string before_;
  std::atomic<bool> done_{false}, changed_{false};
  std::atomic<std::size_t> reads_{0};
  std::thread thread_;
};

/// world_size ranks as threads, rank r started after delays[r] ms; each rank's result or its
/// exception's message.
struct outcome {
  std::vector<std::uint8_t> bytes;
  std::string error;
};
std::vector<outcome> run_ranks(const std::string& address, int world_size, const std::vector<std::uint8_t>& payload,
                               double timeout, std::vector<int> delays = {}, std::vector<int> claimed = {},
                               std::vector<int> sizes = {}) {
  std::vector<outcome> out(static_cast<std::size_t>(world_size));
  std::vector<std::thread> threads;
  for (int r = 0; r < world_size; ++r) {
    threads.emplace_back([&, r] {
      const std::size_t k = std::size_t(r);
      if (k < delays.size()) std::this_thread::sleep_for(std::chrono::milliseconds(delays[k]));
      const int rank = k < claimed.size() ? claimed[k] : r;
      const int size = k < sizes.size() ? sizes[k] : world_size;
      try {
        out[k].bytes = rendezvous_broadcast(address, rank, size, rank == 0 ? payload : std::vector<std::uint8_t>(),
                                            timeout, "rank " + std::to_string(rank) + " of " + std::to_string(size));
      } catch (const std::exception& e) {
        out[k].error = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return out;
}

std::vector<std::uint8_t> unique_id_like() {
  std::vector<std::uint8_t> id(4 + 128);  // ncclGetUniqueId's result and the 128-byte id
  for (std::size_t k = 0; k < id.size(); ++k) id[k] = std::uint8_t(k * 37 + 11);
  return id;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("rendezvous: every rank receives rank 0's bytes, and the environment is never written", "[rendezvous]") {
  REQUIRE(std::getenv("NCCL_COMM_ID") == nullptr);  // the route this case takes (see the plan case)
  const std::vector<std::uint8_t> id = unique_id_like();
  environment_watch watch;
  SECTION("rank 0 first") {
    const auto out = run_ranks("127.0.0.1:" + std::to_string(free_port()), 4, id, 20.0, {0, 100, 150, 200});
    for (const outcome& o : out) {
      CHECK(o.error.empty());
      CHECK(o.bytes == id);
    }
  }
  SECTION("the other ranks first: they retry until rank 0 listens") {
    const auto out = run_ranks("127.0.0.1:" + std::to_string(free_port()), 3, id, 20.0, {400, 0, 0});
    for (const outcome& o : out) {
      CHECK(o.error.empty());
      CHECK(o.bytes == id);
    }
  }
  SECTION("an IPv4 host name, and one rank (nothing to hand over, no address needed)") {
    const auto out = run_ranks("localhost:" + std::to_string(free_port()), 2, id, 20.0);
    CHECK(out[0].error.empty());
    CHECK(out[1].bytes == id);
    CHECK(rendezvous_broadcast("", 0, 1, id, 1.0, "alone") == id);
  }
  INFO("the watching thread read the environment " << watch.reads() << " times");
  CHECK(watch.untouched());
}

TEST_CASE("rendezvous: a rank that never comes, a taken port, another world size, one rank twice", "[rendezvous]") {
  const std::vector<std::uint8_t> id = unique_id_like();
  SECTION("rank 0 waits for a missing rank until its deadline, naming it") {
    const std::string address = "127.0.0.1:" + std::to_string(free_port());
    const auto start = std::chrono::steady_clock::now();
    std::string message;
    try {
      rendezvous_broadcast(address, 0, 3, id, 1.5, "rank 0 of 3: init of 'the NCCL unique id'");
    } catch (const distributed_error& e) {
      message = e.what();
      CHECK(e.rank() == 0);
    }
    const double seconds = seconds_since(start);
    CHECK_THAT(message, Catch::Contains("rank 0 of 3: init of 'the NCCL unique id': timed out after 1.5 s: rank(s) 1, 2 "
                                       "did not reach " + address));
    CHECK(seconds >= 1.4);
    CHECK(seconds < 5.0);
  }
  SECTION("a rank whose rank 0 never listens gives up at its deadline, naming the address") {
    const std::string address = "127.0.0.1:" + std::to_string(free_port());
    const auto start = std::chrono::steady_clock::now();
    std::string message;
    try {
      rendezvous_broadcast(address, 1, 2, {}, 1.0, "rank 1 of 2");
    } catch (const distributed_error& e) {
      message = e.what();
      CHECK(e.rank() == 1);
    }
    CHECK_THAT(message, Catch::Contains("timed out after 1 s waiting for rank 0 at " + address));
    CHECK(seconds_since(start) < 4.0);
  }
  SECTION("rank 0 cannot listen on a port that is taken") {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
    REQUIRE(::listen(fd, 4) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    const std::string address = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    CHECK_THROWS_WITH(rendezvous_broadcast(address, 0, 2, id, 2.0, "rank 0 of 2"),
                      Catch::Contains("cannot listen at " + address) && Catch::Contains("NCCL_COMM_ID="));
    ::close(fd);
  }
  SECTION("a peer of another world size is refused, on rank 0 and on the peer") {
    const auto out = run_ranks("127.0.0.1:" + std::to_string(free_port()), 2, id, 10.0, {}, {}, {2, 3});
    CHECK_THAT(out[0].error, Catch::Contains("rank 1 reached") && Catch::Contains("with a world size of 3; rank 0's is 2"));
    CHECK_THAT(out[1].error, Catch::Contains("rank 0 refused this rank"));
  }
  SECTION("two peers claiming one rank: the second is refused") {
    const auto out = run_ranks("127.0.0.1:" + std::to_string(free_port()), 3, id, 5.0, {0, 100, 400}, {0, 1, 1});
    CHECK(out[1].bytes == id);
    CHECK_THAT(out[0].error, Catch::Contains("two processes reached") && Catch::Contains("as rank 1"));
    CHECK_THAT(out[2].error, Catch::Contains("rank 0 refused this rank"));
  }
  SECTION("bad arguments") {
    CHECK_THROWS_AS(rendezvous_broadcast("127.0.0.1:1", 2, 2, id, 1.0, "x"), std::invalid_argument);
    CHECK_THROWS_AS(rendezvous_broadcast("127.0.0.1:1", 0, 2, id, 0.0, "x"), std::invalid_argument);
    CHECK_THROWS_AS(rendezvous_broadcast("no-port", 1, 2, {}, 1.0, "x"), std::invalid_argument);
  }
}

TEST_CASE("rendezvous: the route of NCCL's id without MPI", "[rendezvous]") {
  launcher_environment env;
  env.launcher = launcher_kind::torchrun;
  env.rank = 1;
  env.world_size = 4;
  env.local_rank = 1;
  env.master_addr = "10.0.0.7";
  env.master_port = 29500;
  // No NCCL_COMM_ID in the environment: rank 0's id is handed over at MASTER_PORT + 1.
  detail::nccl_bootstrap_plan plan = detail::plan_nccl_bootstrap(env, nullptr);
  CHECK(plan.route == detail::nccl_id_route::rendezvous);
  CHECK(plan.address == "10.0.0.7:29501");
  plan = detail::plan_nccl_bootstrap(env, "");
  CHECK(plan.route == detail::nccl_id_route::rendezvous);
  // NCCL_COMM_ID given in launcher_environment only (not in the environment): handed over there.
  env.nccl_comm_id = "[fe80::1]:4000";
  plan = detail::plan_nccl_bootstrap(env, nullptr);
  CHECK(plan.route == detail::nccl_id_route::rendezvous);
  CHECK(plan.address == "[fe80::1]:4000");
  // NCCL_COMM_ID in the environment: NCCL's own bootstrap reads it, checked as any address.
  plan = detail::plan_nccl_bootstrap(env, "10.0.0.7:4100");
  CHECK(plan.route == detail::nccl_id_route::nccl_environment);
  CHECK(plan.address == "10.0.0.7:4100");
  CHECK_THROWS_WITH(detail::plan_nccl_bootstrap(env, "10.0.0.7:29500"), Catch::Contains("uses MASTER_PORT 29500"));
  // One rank: nothing to meet at.
  env.world_size = 1;
  env.rank = 0;
  env.master_addr.clear();
  env.nccl_comm_id.clear();
  plan = detail::plan_nccl_bootstrap(env, nullptr);
  CHECK(plan.route == detail::nccl_id_route::single);
  CHECK(plan.address.empty());
}
