// rlkernels/distributed/launcher.hpp without a GPU, MPI or network: the rank, size, local rank and
// rank 0's address as mpirun (Open MPI, MPICH), torchrun and srun set them, the refusals of
// missing or inconsistent variables, and the address NCCL's own bootstrap meets at
// (NCCL_COMM_ID): never torchrun's MASTER_PORT, which its agent holds (checked against a socket
// that holds it, as the agent's TCPStore does). Each case starts from an environment without any
// launcher variable and restores the process's own at its end.
#include <rlkernels/distributed/launcher.hpp>

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

using rlkernels::launcher_environment;
using rlkernels::launcher_kind;
using rlkernels::nccl_comm_id_for;

/// Unsets every variable a launcher sets for the scope of a test case, then restores them.
class clean_launcher_environment {
 public:
  clean_launcher_environment() {
    for (const char* name : names) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
      ::unsetenv(name);
    }
  }
  clean_launcher_environment(const clean_launcher_environment&) = delete;
  clean_launcher_environment& operator=(const clean_launcher_environment&) = delete;
  ~clean_launcher_environment() {
    for (const auto& [name, value] : saved_) {
      if (value)
        ::setenv(name, value->c_str(), 1);
      else
        ::unsetenv(name);
    }
  }
  void set(std::initializer_list<std::pair<const char*, const char*>> variables) {
    for (const auto& [name, value] : variables) ::setenv(name, value, 1);
  }

  static constexpr const char* names[] = {
      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
      "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMIX_RANK",
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
      "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_STEP_NODELIST",
      "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_LAUNCH_NODE_IPADDR", "NCCL_COMM_ID"};

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

launcher_environment discovered() {
  const std::optional<launcher_environment> env = launcher_environment::from_env();
  REQUIRE(env.has_value());
  return *env;
}

/// A listening TCP socket on 127.0.0.1, as torchrun's agent holds MASTER_PORT (its TCPStore).
class listener {
 public:
  explicit listener(int port = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    const int one = 1;
    (void)::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // as NCCL and the old bootstrap did
    ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 && ::listen(fd_, 8) == 0;
    socklen_t len = sizeof(a);
    if (ok_ && ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) port_ = ntohs(a.sin_port);
  }
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;
  ~listener() { ::close(fd_); }
  bool listening() const noexcept { return ok_; }
  int port() const noexcept { return port_; }

 private:
  int fd_ = -1, port_ = 0;
  bool ok_ = false;
};

}  // namespace

TEST_CASE("launcher: no launcher's variables is a single process", "[distributed][launcher]") {
  clean_launcher_environment vars;
  CHECK_FALSE(launcher_environment::from_env().has_value());
  // A Slurm batch script (no step: no SLURM_STEP_NUM_TASKS) is one process, not rank 0 of 4.
  vars.set({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"}, {"SLURM_JOB_NODELIST", "n[1-4]"}});
  CHECK_FALSE(launcher_environment::from_env().has_value());
}

TEST_CASE("launcher: mpirun (Open MPI and MPICH) rank, size and local rank", "[distributed][launcher]") {
  clean_launcher_environment vars;
  SECTION("Open MPI") {
    vars.set({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
              {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
              // mpirun inside a Slurm job: its daemons' SLURM_* variables must not win
              {"SLURM_PROCID", "1"}, {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_LOCALID", "0"}});
    const launcher_environment env = discovered();
    CHECK(env.launcher == launcher_kind::mpi);
    CHECK(std::string(env.launcher_name()) == "mpirun");
    CHECK(env.rank == 5);
    CHECK(env.world_size == 8);
    CHECK(env.local_rank == 1);
  }
  SECTION("MPICH (Hydra) and srun --mpi=pmi2") {
    vars.set({{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"}});
    const launcher_environment env = discovered();
    CHECK(env.launcher == launcher_kind::mpi);
    CHECK(env.rank == 3);
    CHECK(env.world_size == 4);
    CHECK(env.local_rank == 1);
  }
  SECTION("a single rank needs no local rank") {
    vars.set({{"PMI_RANK", "0"}, {"PMI_SIZE", "1"}});
    CHECK(discovered().local_rank == 0);
  }
}

TEST_CASE("launcher: torchrun's variables, and where NCCL's bootstrap meets", "[distributed][launcher]") {
  clean_launcher_environment vars;
  vars.set({{"RANK", "9"}, {"WORLD_SIZE", "16"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "8"},
            {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"},
            // `srun torchrun ...`: one Slurm task per node; torchrun's variables win
            {"SLURM_PROCID", "1"}, {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_LOCALID", "0"}});
  launcher_environment env = discovered();
  CHECK(env.launcher == launcher_kind::torchrun);
  CHECK(env.rank == 9);
  CHECK(env.world_size == 16);
  CHECK(env.local_rank == 1);
  CHECK(env.master_addr == "node0");
  CHECK(env.master_port == 29500);
  // Not MASTER_PORT: torchrun's agent serves its rendezvous store there for the whole job.
  CHECK(nccl_comm_id_for(env) == "node0:29501");
  env.master_addr = "fe80::1";
  CHECK(nccl_comm_id_for(env) == "[fe80::1]:29501");
  env.master_addr = "[::1]";
  CHECK(nccl_comm_id_for(env) == "[::1]:29501");

  vars.set({{"NCCL_COMM_ID", "10.0.0.1:40000"}});
  CHECK(nccl_comm_id_for(discovered()) == "10.0.0.1:40000");
  vars.set({{"NCCL_COMM_ID", "[fd00::2]:40000"}});
  CHECK(nccl_comm_id_for(discovered()) == "[fd00::2]:40000");
  vars.set({{"NCCL_COMM_ID", "node0:29500"}});
  CHECK_THROWS_WITH(nccl_comm_id_for(discovered()),
                    Catch::Contains("uses MASTER_PORT 29500, which torchrun's agent holds for its rendezvous store"));
  for (const char* bad : {"node0", "node0:", ":4000", "node0:http", "node0:70000", "fe80::1:4000", "[fe80::1]4000"}) {
    INFO("NCCL_COMM_ID=" << bad);
    vars.set({{"NCCL_COMM_ID", bad}});
    CHECK_THROWS_WITH(nccl_comm_id_for(discovered()), Catch::Contains("is not host:port or [IPv6 address]:port"));
  }
}

TEST_CASE("launcher: with torchrun's MASTER_PORT held, as its agent holds it, NCCL's address is still free",
          "[distributed][launcher]") {
  clean_launcher_environment vars;
  const listener agent_store;  // what torchrun's agent on node 0 does with MASTER_PORT
  REQUIRE(agent_store.listening());
  const std::string port = std::to_string(agent_store.port());
  vars.set({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"MASTER_ADDR", "127.0.0.1"},
            {"MASTER_PORT", port.c_str()}});
  // Rank 0 listening on MASTER_PORT itself (what the removed TCP bootstrap did) fails: EADDRINUSE.
  const listener on_master_port(agent_store.port());
  CHECK_FALSE(on_master_port.listening());
  // NCCL's root listens at nccl_comm_id_for instead: another port, which it can take (unless
  // something else on this machine happens to hold MASTER_PORT + 1 right now).
  const std::string id = nccl_comm_id_for(discovered());
  CHECK(id == "127.0.0.1:" + std::to_string(agent_store.port() + 1));
  if (agent_store.port() < 65535) {
    const listener nccl_root(agent_store.port() + 1);
    if (!nccl_root.listening()) WARN("port " << agent_store.port() + 1 << " is taken on this machine by something else");
    else CHECK(nccl_root.listening());
  }
}

TEST_CASE("launcher: srun's variables, rank 0's host from the step's node list", "[distributed][launcher]") {
  clean_launcher_environment vars;
  vars.set({{"SLURM_PROCID", "6"}, {"SLURM_NTASKS", "8"}, {"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_LOCALID", "2"},
            {"SLURM_STEP_NODELIST", "gpu[003-004,010],login1"}, {"SLURM_JOB_NODELIST", "gpu[001-010]"},
            {"SLURM_LAUNCH_NODE_IPADDR", "10.1.1.1"}});
  launcher_environment env = discovered();
  CHECK(env.launcher == launcher_kind::slurm);
  CHECK(std::string(env.launcher_name()) == "srun");
  CHECK(env.rank == 6);
  CHECK(env.world_size == 8);
  CHECK(env.local_rank == 2);
  CHECK(env.master_addr == "gpu003");  // where srun starts rank 0, not srun's own host
  CHECK(env.master_port == 0);
  CHECK_THROWS_WITH(nccl_comm_id_for(env),
                    Catch::Contains("rank 6 of 8 (srun) cannot tell where NCCL's bootstrap meets: MASTER_PORT is not "
                                    "set and neither is NCCL_COMM_ID; set NCCL_COMM_ID=host:port"));
  vars.set({{"MASTER_PORT", "29500"}});
  CHECK(nccl_comm_id_for(discovered()) == "gpu003:29501");
  vars.set({{"MASTER_ADDR", "10.1.1.7"}});
  CHECK(nccl_comm_id_for(discovered()) == "10.1.1.7:29501");

  using rlkernels::detail::first_slurm_host;
  CHECK(first_slurm_host("n1,n2") == "n1");
  CHECK(first_slurm_host("node[7]") == "node7");
  CHECK(first_slurm_host("rack[1-2]-n[07-08]") == "rack1-n07");
  CHECK(first_slurm_host("a[2,5-6]b") == "a2b");
  CHECK(first_slurm_host("") == "");
  CHECK(first_slurm_host("n[1-2") == "");
  CHECK(first_slurm_host("n]1") == "");
  vars.set({{"SLURM_STEP_NODELIST", "n[1-"}});
  ::unsetenv("MASTER_ADDR");
  CHECK_THROWS_WITH(launcher_environment::from_env(), Catch::Contains("SLURM_STEP_NODELIST='n[1-' is not a Slurm host list"));
}

TEST_CASE("launcher: missing, malformed and inconsistent variables are refused by name", "[distributed][launcher]") {
  const auto refused = [](std::initializer_list<std::pair<const char*, const char*>> variables, const char* words) {
    clean_launcher_environment vars;
    vars.set(variables);
    INFO("expected: " << words);
    CHECK_THROWS_AS(launcher_environment::from_env(), std::invalid_argument);
    CHECK_THROWS_WITH(launcher_environment::from_env(), Catch::Contains(words));
  };
  refused({{"RANK", "0"}}, "RANK is set but WORLD_SIZE is not (torchrun sets both)");
  refused({{"WORLD_SIZE", "2"}}, "WORLD_SIZE is set but RANK is not");
  refused({{"OMPI_COMM_WORLD_RANK", "0"}}, "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
  refused({{"PMI_SIZE", "2"}}, "PMI_SIZE is set but PMI_RANK is not");
  refused({{"SLURM_STEP_NUM_TASKS", "2"}}, "SLURM_STEP_NUM_TASKS is set but SLURM_PROCID is not (srun sets both)");
  refused({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}}, "RANK=2 is not below WORLD_SIZE=2");
  refused({{"SLURM_PROCID", "4"}, {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_LOCALID", "0"}},
          "SLURM_PROCID=4 is not below SLURM_STEP_NUM_TASKS=4");
  refused({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}, "RANK='-1' is not a rank");
  refused({{"RANK", "0"}, {"WORLD_SIZE", "two"}}, "WORLD_SIZE='two' is not a number of ranks");
  refused({{"RANK", "0"}, {"WORLD_SIZE", "0"}}, "WORLD_SIZE='0' is not a number of ranks");
  refused({{"RANK", "1 "}, {"WORLD_SIZE", "2"}}, "RANK='1 ' is not a rank");
  refused({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, "torchrun started 2 ranks, but LOCAL_RANK is not set");
  refused({{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "2"}}, "srun started 2 ranks, but SLURM_LOCALID is not set");
  refused({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}},
          "mpirun started 2 ranks, but OMPI_COMM_WORLD_LOCAL_RANK is not set");
  refused({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}},
          "LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2");
  refused({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}}, "LOCAL_RANK=2 is not below the world size 2");
  refused({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
           {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}},
          "OMPI_COMM_WORLD_LOCAL_RANK=3 is not below OMPI_COMM_WORLD_LOCAL_SIZE=2");
  refused({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", ""}}, "MASTER_ADDR is set but empty");
  refused({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "65536"}}, "MASTER_PORT='65536' is not a TCP port");

  clean_launcher_environment vars;
  vars.set({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"MASTER_PORT", "29500"}});
  CHECK_THROWS_WITH(nccl_comm_id_for(discovered()),
                    Catch::Contains("rank 1 of 2 (torchrun) cannot tell where NCCL's bootstrap meets: MASTER_ADDR is "
                                    "not set and neither is NCCL_COMM_ID"));
  vars.set({{"MASTER_ADDR", "node0"}, {"MASTER_PORT", "65535"}});
  CHECK_THROWS_WITH(nccl_comm_id_for(discovered()), Catch::Contains("MASTER_PORT is 65535"));
}
