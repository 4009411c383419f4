// Failure drills for data-parallel training over MPI (run by expect_failure.cmake under
// `mpiexec -n 2`): `dies` (rank 1 exits in the middle of training), `late` (rank 1 joins long
// after rank 0's timeout) and `stalls` (rank 1 stops calling the collectives for longer than the
// timeout). The job must end, not hang, with a message that names the rank and what it waited for.
#include <rlkernels/algorithms/ppo.hpp>
#include <rlkernels/distributed/mpi.hpp>
#include <rlkernels/envs/cartpole.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  using namespace rlkernels;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "dies" && mode != "late" && mode != "stalls") {
    std::fprintf(stderr, "usage: mpi_failure dies|late|stalls\n");
    return 2;
  }
  int rank = -1;
  std::unique_ptr<mpi_communicator> comm;
  try {
    if (mode == "late") {
      // Rank 1 initialises MPI but joins rlkernels' communicator only after rank 0 gave up.
      MPI_Init(&argc, &argv);
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(8));
      comm = std::make_unique<mpi_communicator>(nullptr, nullptr, 2.0);
    } else {
      comm = std::make_unique<mpi_communicator>(&argc, &argv, mode == "stalls" ? 3.0 : 20.0);
      rank = comm->rank();
    }
    ppo_config c;
    c.num_envs = 2;
    c.num_steps = 16;
    c.hidden_sizes = {8};
    c.total_timesteps = 1000000;
    ppo<cartpole<float>, serial_backend> agent(serial, c, {}, *comm);
    agent.iterate();
    if (rank == 1 && mode == "dies") {
      std::fprintf(stderr, "mpi_failure: rank 1 exits on purpose with status 7\n");
      std::_Exit(7);
    }
    if (rank == 1 && mode == "stalls") std::this_thread::sleep_for(std::chrono::seconds(10));
    for (int i = 0; i < 1000; ++i) agent.iterate();
    std::fprintf(stderr, "mpi_failure: rank %d finished, which a drill must not\n", rank);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_failure: %s\n", e.what());
    std::fflush(stderr);
    if (comm) comm->abort(3);
    MPI_Abort(MPI_COMM_WORLD, 3);
    return 3;
  }
}
