// The memory a data-parallel checkpoint costs each rank (docs/distributed.md): SAC on
// Pendulum-v1, one env and a replay buffer of --buffer-size transitions per rank (1,000,000 by
// default), filled for --steps env steps (no gradient step: learning_starts is past them), then
// one save_checkpoint, the replay buffers included (checkpoint_buffers, the default).
//
//   mpiexec -n 4 checkpoint_memory_bench [--buffer-size N] [--steps S] [--dir DIR]
//
// Each rank reads its peak resident memory (VmHWM in /proc/self/status) before and after the
// save; rank 0 prints them per rank with the files written, and removes them.
#include <rlkernels/algorithms/sac.hpp>
#include <rlkernels/distributed/mpi.hpp>
#include <rlkernels/envs/pendulum.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

/// A field of /proc/self/status in kB ("VmHWM", "VmRSS"); 0 where not found.
std::uint64_t status_kb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, key.size() + 1, key + ":") == 0) return std::strtoull(line.c_str() + key.size() + 1, nullptr, 10);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rlkernels;
  mpi_communicator comm(argc, argv, 600.0);
  std::size_t buffer_size = 1000000, steps = 20000;
  std::string dir = std::filesystem::temp_directory_path().string();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--buffer-size") buffer_size = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--steps") steps = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--dir") dir = argv[i + 1];
  }
  sac_config c = sac_preset("Pendulum-v1");
  c.num_envs = 1;
  c.buffer_size = buffer_size;
  c.learning_starts = std::uint64_t(comm.size()) * (steps + 1);  // env steps of all ranks: no training
  c.total_timesteps = std::uint64_t(comm.size()) * (steps + 2);
  sac<pendulum<float>, serial_backend> agent(serial, c, {}, comm);
  for (std::size_t s = 0; s < steps; ++s) agent.iterate();
  std::uint64_t id = std::uint64_t(::getpid());
  comm.broadcast_raw(&id, sizeof(id), 0, {}, "file name");
  const std::string path = (std::filesystem::path(dir) / ("rlk-checkpoint-memory-" + std::to_string(id) + ".rlkc")).string();

  const std::uint64_t rss = status_kb("VmRSS"), before = status_kb("VmHWM");
  agent.save_checkpoint(path);
  const std::uint64_t after = status_kb("VmHWM");
  const std::vector<std::uint64_t> all_rss = all_gather(comm, rss, "rss");
  const std::vector<std::uint64_t> all_before = all_gather(comm, before, "hwm before");
  const std::vector<std::uint64_t> all_after = all_gather(comm, after, "hwm after");
  comm.barrier("saved");
  if (comm.rank() == 0) {
    std::printf("SAC Pendulum-v1, %d ranks, buffer_size %zu per rank (%zu transitions in it), one save_checkpoint\n",
                comm.size(), buffer_size, steps);
    std::printf("| rank | VmRSS before (MiB) | peak before (MiB) | peak after the save (MiB) | the save added (MiB) |\n");
    std::printf("| --- | ---: | ---: | ---: | ---: |\n");
    for (int r = 0; r < comm.size(); ++r)
      std::printf("| %d | %.1f | %.1f | %.1f | %.1f |\n", r, all_rss[r] / 1024.0, all_before[r] / 1024.0,
                  all_after[r] / 1024.0, (double(all_after[r]) - double(all_before[r])) / 1024.0);
    std::uintmax_t total = 0;
    const std::string head = std::filesystem::path(path).filename().string();
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
      if (e.path().filename().string().compare(0, head.size(), head) == 0) files.push_back(e.path());
    for (const auto& f : files) {
      const std::uintmax_t bytes = std::filesystem::file_size(f);
      std::printf("file %s: %.1f MiB\n", f.filename().c_str(), double(bytes) / 1048576.0);
      total += bytes;
    }
    std::printf("files: %zu, %.1f MiB in all\n", files.size(), double(total) / 1048576.0);
    for (const auto& f : files) std::filesystem::remove(f);
  }
  comm.barrier("done");
  return 0;
}
