// The two orders of a data-parallel gradient's all-reduce over MPI, timed on the gradients of
// tests/distributed/mpi_test.cpp's networks and of a 256-256 one (docs/distributed.md):
// reduction_order::ordered (an all-gather of every rank's buffer, then a fold in rank order: R
// buffers received and held per rank) against reduction_order::native (MPI_Allreduce).
//
//   mpiexec -n 2 reduction_order_bench [--rounds 7]
//
// Rank 0 prints a Markdown table: floats and bytes of each gradient, the bytes each rank receives
// per call by the model of each order ((R - 1) * B for the all-gather; 2 (R - 1) / R * B for a ring
// all-reduce) and the extra memory the ordered one holds (R * B), and the median time per call of
// each order over `rounds` blocks (the orders alternate block by block, so that a busy machine
// slows both alike). Also checks that both orders give the same sums (with 2 ranks a sum is one
// addition).
#include <rlkernels/distributed/mpi.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace {

/// Parameters of a dense MLP with the given layer widths (weights and biases).
std::size_t mlp(std::initializer_list<std::size_t> widths) {
  std::size_t n = 0;
  const std::size_t* w = widths.begin();
  for (std::size_t i = 1; i < widths.size(); ++i) n += w[i - 1] * w[i] + w[i];
  return n;
}

struct gradient {
  const char* name;
  std::size_t floats;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rlkernels;
  mpi_communicator comm(argc, argv, 120.0);
  int rounds = 7;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
  }
  const gradient gradients[] = {
      {"PPO CartPole-v1, 16-16 (mpi_test)", mlp({4, 16, 16, 2}) + mlp({4, 16, 16, 1})},
      {"SAC Pendulum-v1, 16-16 (mpi_test; actor + 2 critics)", mlp({3, 16, 16, 2}) + 2 * mlp({4, 16, 16, 1})},
      {"PPO Hopper-v5, 64-64 (mpi_test)", mlp({11, 64, 64, 3}) + mlp({11, 64, 64, 1}) + 3},
      {"PPO Hopper-v5, 256-256", mlp({11, 256, 256, 3}) + mlp({11, 256, 256, 1}) + 3},
  };
  const double ranks = comm.size();
  if (comm.rank() == 0) {
    std::printf("reduction_order_bench: %d ranks (MPI), %d rounds per order\n\n", comm.size(), rounds);
    std::printf("| gradient | floats | bytes B | received per call: ordered (R-1)B | native (ring) 2(R-1)/R B | "
                "ordered's extra memory R B | ordered us/call | native us/call | ordered / native |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  }
  for (const gradient& g : gradients) {
    std::vector<float> x(g.floats), y(g.floats);
    for (std::size_t k = 0; k < g.floats; ++k) x[k] = float(k % 97) * 0.01f + float(comm.rank());
    // Both orders, the same sums.
    std::vector<float> a = x, b = x;
    all_reduce(comm, serial, make_view(a), reduce_op::sum, reduction_order::ordered, "check");
    all_reduce(comm, serial, make_view(b), reduce_op::sum, reduction_order::native, "check");
    std::uint64_t differ = a != b ? 1 : 0;
    all_reduce(comm, serial, view<std::uint64_t>(&differ, 1), reduce_op::sum, reduction_order::ordered, "differ");
    const int reps = int(std::clamp<std::size_t>(4000000 / g.floats, 20, 2000));
    std::vector<double> times[2];
    for (int round = 0; round < rounds; ++round) {
      for (int o = 0; o < 2; ++o) {
        const reduction_order order = o == 0 ? reduction_order::ordered : reduction_order::native;
        for (int k = 0; k < 3; ++k) {  // warm-up
          y = x;
          all_reduce(comm, serial, make_view(y), reduce_op::sum, order, "warm-up");
        }
        comm.barrier("block");
        const auto start = std::chrono::steady_clock::now();
        for (int k = 0; k < reps; ++k) all_reduce(comm, serial, make_view(y), reduce_op::sum, order, "gradient");
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / reps;
        // The slower rank's time (a collective ends for the job when the last rank is done).
        const std::vector<double> all = all_gather(comm, us, "time");
        times[o].push_back(*std::max_element(all.begin(), all.end()));
      }
    }
    if (comm.rank() == 0) {
      const double bytes = double(g.floats) * sizeof(float), t0 = median(times[0]), t1 = median(times[1]);
      std::printf("| %s | %zu | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f | %.2f |%s\n", g.name, g.floats, bytes,
                  (ranks - 1) * bytes, 2 * (ranks - 1) / ranks * bytes, ranks * bytes, t0, t1, t0 / t1,
                  differ ? " (the orders' sums differ)" : "");
    }
  }
  return 0;
}
