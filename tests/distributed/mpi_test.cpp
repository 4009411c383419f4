// Data-parallel training over MPI, run as `mpirun -np 2 mpi_test` (CTest does): the communicator's
// collectives; PPO with 2 ranks x N envs against one process with 2N envs and env_shards = 2,
// bit for bit (CartPole, Pendulum with both normalisers, Hopper-v5, gradient accumulation), a
// resumed 2-rank checkpoint, diverged parameters and mismatched configs reported; SAC and TD3 on
// Pendulum and DQN on CartPole likewise against one process with twice the envs, batch and
// buffer (each rank its own replay buffer), with accumulation and resumed checkpoints; the
// gather and scatter of byte strings in chunks, and data-parallel checkpoints that send each
// rank only its section and load all or nothing. Every rank
// runs every case (the collectives need both); a rank's failure fails the job.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <rlkernels/algorithms/dqn.hpp>
#include <rlkernels/algorithms/ppo.hpp>
#include <rlkernels/algorithms/sac.hpp>
#include <rlkernels/algorithms/td3.hpp>
#include <rlkernels/distributed/mpi.hpp>
#include <rlkernels/envs/cartpole.hpp>
#include <rlkernels/envs/mujoco/hopper.hpp>
#include <rlkernels/envs/pendulum.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace rlkernels;
using backend_t = serial_backend;

mpi_communicator* world = nullptr;  // set by main

/// A file name rank 0 picks and every rank knows.
std::string shared_path(const char* stem) {
  std::uint64_t id = std::uint64_t(::getpid());
  world->broadcast_raw(&id, sizeof(id), 0, {}, "file name");
  return (std::filesystem::temp_directory_path() / (std::string(stem) + "-" + std::to_string(id) + ".rlkc")).string();
}

/// The shard files beside the manifest `path` ("<path>.<16 hex digits>.rank<r>"), by rank; a
/// rank with several (an older save's left behind) appears once per file, after its first.
std::vector<std::string> shard_files(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path manifest(path);
  const std::string head = manifest.filename().string() + ".";
  std::vector<std::pair<std::string, std::string>> found;  // (rank, path)
  for (const fs::directory_entry& e : fs::directory_iterator(manifest.parent_path())) {
    const std::string name = e.path().filename().string();
    if (name.size() < head.size() + 22 || name.compare(0, head.size(), head) != 0) continue;
    const std::string rest = name.substr(head.size());  // 16 hex digits, ".rank", the rank
    if (rest.compare(16, 5, ".rank") != 0 || rest.find(".tmp.") != std::string::npos) continue;
    found.emplace_back(rest.substr(21), e.path().string());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.first.size() != b.first.size() ? a.first.size() < b.first.size() : a < b;
  });
  std::vector<std::string> out;
  for (const auto& f : found) out.push_back(f.second);
  return out;
}

template <class Agent>
std::vector<typename Agent::scalar_type> parameters(Agent& agent) {
  auto p = agent.actor().parameters_to_host();
  const auto c = agent.critic().parameters_to_host();
  p.insert(p.end(), c.begin(), c.end());
  const auto s = agent.log_std().to_host();
  p.insert(p.end(), s.begin(), s.end());
  return p;
}

/// Trains `c` (num_envs per rank) on both ranks and, on each rank alone, one process with
/// 2 * num_envs envs and env_shards = 2; the parameters, this rank's envs' observations and the
/// episode counts must be equal bit for bit after every iteration.
template <class Env>
void check_equals_one_process(ppo_config c, typename Env::Params params = {}) {
  REQUIRE(world->size() == 2);
  ppo<Env, backend_t> ranks(serial, c, params, *world);
  ppo_config whole = c;
  whole.num_envs = 2 * c.num_envs;
  whole.env_shards = 2;
  ppo<Env, backend_t> one(serial, whole, params);
  REQUIRE(ranks.num_iterations() == one.num_iterations());
  const std::size_t obs = std::size_t(Env::observation_size), n = c.num_envs;
  while (!ranks.done()) {
    const ppo_iteration_stats a = ranks.iterate();
    const ppo_iteration_stats b = one.iterate();
    CAPTURE(a.iteration);
    CHECK(a.global_step == b.global_step);
    CHECK(a.episodes == b.episodes);
    CHECK(a.policy_loss == b.policy_loss);
    CHECK(a.grad_norm == b.grad_norm);
    REQUIRE(parameters(ranks) == parameters(one));
    const auto mine = ranks.envs().observations().to_host();
    const auto all = one.envs().observations().to_host();
    const std::size_t first = std::size_t(world->rank()) * n * obs;
    CHECK(std::vector<typename Env::scalar_type>(all.begin() + first, all.begin() + first + n * obs) == mine);
  }
}

ppo_config cartpole_config() {
  ppo_config c;
  c.num_envs = 4;
  c.num_steps = 32;
  c.num_minibatches = 4;
  c.update_epochs = 2;
  c.hidden_sizes = {16, 16};
  c.learning_rate = 3e-3;
  c.total_timesteps = 2 * 4 * 32 * 4;
  c.seed = 11;
  return c;
}

// ---- off-policy trainers ----

template <class T>
std::vector<T> concat(std::initializer_list<std::vector<T>> parts) {
  std::vector<T> out;
  for (const std::vector<T>& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
template <class Env>
std::vector<float> parameters(sac<Env, backend_t>& a) {
  return concat<float>({a.actor().parameters_to_host(), a.critic1().parameters_to_host(),
                        a.critic2().parameters_to_host(), a.critic1_target().parameters_to_host(),
                        a.critic2_target().parameters_to_host(), {float(a.alpha())}});
}
template <class Env>
std::vector<float> parameters(td3<Env, backend_t>& a) {
  return concat<float>({a.actor().parameters_to_host(), a.actor_target().parameters_to_host(),
                        a.critic1().parameters_to_host(), a.critic2().parameters_to_host(),
                        a.critic1_target().parameters_to_host(), a.critic2_target().parameters_to_host()});
}
template <class Env>
std::vector<float> parameters(dqn<Env, backend_t>& a) {
  return concat<float>({a.q_network().parameters_to_host(), a.target_network().parameters_to_host()});
}
double first_loss(const sac_iteration_stats& s) { return s.critic_loss + s.actor_loss + s.alpha_loss; }
double first_loss(const td3_iteration_stats& s) { return s.critic_loss + s.actor_loss; }
double first_loss(const dqn_iteration_stats& s) { return s.q_loss + s.q_mean; }

/// Trains `c` (num_envs, batch_size and buffer_size per rank) on both ranks and, on each rank
/// alone, one process with twice each and env_shards = 2; the parameters, this rank's envs'
/// observations, the episodes and the losses must be equal bit for bit after every iteration.
template <class Agent, class Config>
void check_off_policy_equals_one_process(const Config& c) {
  using Env = typename Agent::env_type::env_type;
  REQUIRE(world->size() == 2);
  Agent ranks(serial, c, {}, *world);
  Config whole = c;
  whole.num_envs = 2 * c.num_envs;
  whole.batch_size = 2 * c.batch_size;
  whole.buffer_size = 2 * c.buffer_size;
  whole.env_shards = 2;
  Agent one(serial, whole);
  const std::size_t obs = std::size_t(Env::observation_size), n = c.num_envs;
  std::uint64_t updates = 0;
  while (!ranks.done()) {
    REQUIRE(!one.done());
    const auto a = ranks.iterate();
    const auto b = one.iterate();
    CAPTURE(a.iteration);
    REQUIRE(a.global_step == b.global_step);
    CHECK(a.episodes == b.episodes);
    CHECK(a.episode_return_sum == b.episode_return_sum);
    CHECK(a.gradient_steps == b.gradient_steps);
    CHECK(first_loss(a) == first_loss(b));
    updates += a.gradient_steps;
    REQUIRE(parameters(ranks) == parameters(one));
    const auto mine = ranks.envs().observations().to_host();
    const auto all = one.envs().observations().to_host();
    const std::size_t first = std::size_t(world->rank()) * n * obs;
    CHECK(std::vector<float>(all.begin() + first, all.begin() + first + n * obs) == mine);
  }
  CHECK(one.done());
  CHECK(updates > 20);  // the comparison covered training, not only the warm-up
}

sac_config sac_small() {
  sac_config c = sac_preset("Pendulum-v1");
  c.num_envs = 2;
  c.batch_size = 16;
  c.buffer_size = 200;  // wraps around during the run
  c.learning_starts = 40;
  c.total_timesteps = 2 * 2 * 80;
  c.gradient_steps = 2;
  c.policy_frequency = 2;  // two actor and temperature steps after every second critic step
  c.hidden_sizes = {16, 16};
  c.seed = 5;
  return c;
}
td3_config td3_small() {
  td3_config c = td3_preset("Pendulum-v1");
  c.num_envs = 2;
  c.batch_size = 16;
  c.buffer_size = 200;
  c.learning_starts = 40;
  c.total_timesteps = 2 * 2 * 80;
  c.gradient_steps = 2;
  c.hidden_sizes = {16, 16};
  c.seed = 6;
  return c;
}
dqn_config dqn_small() {
  dqn_config c = dqn_preset("CartPole-v1");
  c.num_envs = 2;
  c.batch_size = 16;
  c.buffer_size = 400;
  c.learning_starts = 60;
  c.train_frequency = 4;
  c.gradient_steps = 2;
  c.target_network_frequency = 10;
  c.total_timesteps = 2 * 2 * 100;
  c.n_step = 3;            // n-step gathers within each rank's env columns
  c.double_q = true;
  c.max_grad_norm = 1.0;   // clipping of the reduced gradient
  c.hidden_sizes = {16, 16};
  c.seed = 7;
  return c;
}

/// Two runs of `c` on both ranks, one saved after a few iterations and resumed in a fresh agent:
/// they end with the same parameters and envs.
template <class Agent, class Config>
void check_off_policy_resume(const Config& c, const char* stem) {
  const std::string path = shared_path(stem);
  Agent first(serial, c, {}, *world);
  for (int k = 0; k < 30; ++k) first.iterate();
  first.save_checkpoint(path);
  while (!first.done()) first.iterate();
  Agent resumed(serial, c, {}, *world);
  resumed.load_checkpoint(path);
  CHECK(resumed.iteration() == 30);
  while (!resumed.done()) resumed.iterate();
  CHECK(parameters(resumed) == parameters(first));
  CHECK(resumed.envs().observations().to_host() == first.envs().observations().to_host());
  world->barrier("checkpoint test");
  if (world->rank() == 0) {
    std::filesystem::remove(path);
    for (const std::string& f : shard_files(path)) std::filesystem::remove(f);
  }
}

/// Stands in for a GPU without one: its "device memory" is pages mapped PROT_NONE, opened only
/// inside its own operations (as a GPU's copies and kernels reach device memory) and while lent to
/// MPI (as a CUDA-aware MPI reads it). Any other host access, say the host dividing through a
/// device pointer, is a SIGSEGV: the crash a real GPU run would have, and the test fails on it.
class guarded_device_memory final : public detail::mpi_device_memory {
 public:
  guarded_device_memory() {
    bytes_ = std::size_t(::sysconf(_SC_PAGESIZE));
    base_ = ::mmap(nullptr, bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) throw std::runtime_error("mmap failed");
  }
  guarded_device_memory(const guarded_device_memory&) = delete;
  guarded_device_memory& operator=(const guarded_device_memory&) = delete;
  ~guarded_device_memory() override { ::munmap(base_, bytes_); }

  void* data() const { return base_; }
  template <class T>
  void upload(const std::vector<T>& x) {
    copy_to_device(base_, x.data(), x.size() * sizeof(T), {});
  }
  template <class T>
  std::vector<T> download(std::size_t n) {
    std::vector<T> x(n);
    copy_to_host(x.data(), base_, n * sizeof(T), {});
    return x;
  }

  void* host_staging(std::size_t bytes) override {
    staging_.resize(bytes);
    ++stagings;
    return staging_.data();
  }
  void synchronize(const memory_location&) override {}
  void copy_to_host(void* host, const void* device, std::size_t bytes, const memory_location&) override {
    open(PROT_READ);
    std::memcpy(host, device, bytes);
    close();
  }
  void copy_to_device(void* device, const void* host, std::size_t bytes, const memory_location&) override {
    open(PROT_READ | PROT_WRITE);
    std::memcpy(device, host, bytes);
    close();
  }
  void divide(void* data, std::size_t count, element_kind kind, int ranks, const memory_location&) override {
    open(PROT_READ | PROT_WRITE);
    detail::divide_host(data, count, kind, ranks);  // "the kernel"
    close();
    ++divisions;
  }
  void lend_to_mpi(void*, std::size_t, bool lend) override {
    if (lend) {
      open(PROT_READ | PROT_WRITE);
      ++lends;
    } else {
      close();
    }
  }

  int stagings = 0, divisions = 0, lends = 0;

 private:
  void open(int protection) {
    if (::mprotect(base_, bytes_, protection) != 0) throw std::runtime_error("mprotect failed");
  }
  void close() { open(PROT_NONE); }
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::vector<std::uint8_t> staging_;
};

}  // namespace

TEST_CASE("mpi communicator: device memory is reached only through the device's operations, CUDA-aware or not",
          "[distributed][device]") {
  const int r = world->rank();
  REQUIRE(world->size() == 2);
  const memory_location on_device{true, nullptr, 0};
  for (bool cuda_aware : {false, true}) {
    for (reduction_order order : {reduction_order::ordered, reduction_order::native}) {
      INFO("CUDA-aware MPI: " << cuda_aware << ", order: " << (order == reduction_order::native ? "native" : "ordered"));
      mpi_communicator comm(nullptr, nullptr, 60.0);  // MPI is up: joins and duplicates MPI_COMM_WORLD
      guarded_device_memory device;
      comm.use_device_memory_for_testing(device, cuda_aware);
      const bool direct = cuda_aware && order == reduction_order::native;

      device.upload(std::vector<double>{double(r + 1), 0.1 * (r + 1), -3.0});
      comm.all_reduce_raw(device.data(), 3, element_kind::f64, reduce_op::sum, order, on_device, "x");
      CHECK(device.download<double>(3) == std::vector<double>{3.0, 0.1 + 0.2, -6.0});

      device.upload(std::vector<float>{float(r), 1.0f, 3.0f * float(r)});
      comm.all_reduce_raw(device.data(), 3, element_kind::f32, reduce_op::mean, order, on_device, "y");
      CHECK(device.download<float>(3) == std::vector<float>{0.5f, 1.0f, 1.5f});

      device.upload(std::vector<std::uint64_t>{std::uint64_t(r) << 40, 7});
      comm.all_reduce_raw(device.data(), 2, element_kind::u64, reduce_op::mean, order, on_device, "z");
      CHECK(device.download<std::uint64_t>(2) == std::vector<std::uint64_t>{std::uint64_t(1) << 39, 7});

      // The direct path sums in "device memory" (lent to MPI) and divides there; the others stage.
      CHECK(device.lends == (direct ? 3 : 0));
      CHECK(device.divisions == (direct ? 2 : 0));
      CHECK(device.stagings == (direct ? 0 : 3));

      device.upload(std::vector<int>{r, r + 10});
      comm.broadcast_raw(device.data(), 2 * sizeof(int), 1, on_device, "b");
      CHECK(device.download<int>(2) == std::vector<int>{1, 11});
    }
  }
#if !RLK_HAS_CUDA
  // Without CUDA and without a stand-in, device memory is refused by name, not dereferenced.
  mpi_communicator plain(nullptr, nullptr, 60.0);
  double x = 1.0;
  CHECK_THROWS_WITH(plain.all_reduce_raw(&x, 1, element_kind::f64, reduce_op::mean, reduction_order::native, on_device, "x"),
                    Catch::Contains("all_reduce of 'x': device memory, but this build has no CUDA"));
#endif
}

TEST_CASE("mpi communicator: all-reduce, broadcast, all-gather and gather of bytes", "[distributed]") {
  const int r = world->rank(), n = world->size();
  REQUIRE(n == 2);
  for (reduction_order order : {reduction_order::ordered, reduction_order::native}) {
    std::vector<double> x = {double(r + 1), 0.1 * (r + 1), -3.0};
    all_reduce(*world, serial, view<double>(x.data(), x.size()), reduce_op::sum, order, "x");
    CHECK(x == std::vector<double>{3.0, 0.1 + 0.2, -6.0});
    std::vector<float> y = {float(r), 1.0f};
    all_reduce(*world, serial, view<float>(y.data(), y.size()), reduce_op::mean, order, "y");
    CHECK(y == std::vector<float>{0.5f, 1.0f});
    std::vector<std::uint64_t> z = {std::uint64_t(r) << 40, 7};
    all_reduce(*world, serial, view<std::uint64_t>(z.data(), z.size()), reduce_op::sum, order, "z");
    CHECK(z == std::vector<std::uint64_t>{std::uint64_t(1) << 40, 14});
  }
  std::vector<int> b = {r, r + 10};
  broadcast(*world, serial, view<int>(b.data(), 2), 1, "b");
  CHECK(b == std::vector<int>{1, 11});
  CHECK(all_gather(*world, 100 + r) == std::vector<int>{100, 101});
  const auto parts = world->gather_bytes(std::vector<std::uint8_t>(std::size_t(3 * r + 1), std::uint8_t(r)), 0, "parts");
  if (r == 0) {
    REQUIRE(parts.size() == 2);
    CHECK(parts[0] == std::vector<std::uint8_t>(1, 0));
    CHECK(parts[1] == std::vector<std::uint8_t>(4, 1));
  } else {
    CHECK(parts.empty());
  }
  world->barrier("test");
  CHECK_THROWS_WITH(broadcast(*world, serial, view<int>(b.data(), 2), 2, "b"), Catch::Contains("root 2 is not a rank"));
}

TEST_CASE("mpi communicator: gather_bytes and scatter_bytes send each part between root and its rank, in chunks",
          "[distributed][checkpoint]") {
  const int r = world->rank();
  REQUIRE(world->chunk_bytes() == std::size_t(1) << 30);
  CHECK_THROWS_WITH(world->set_chunk_bytes(0), Catch::Contains("0 is not in 1 .. INT_MAX"));
  // Sizes around the lowered chunk (7 bytes): empty, shorter, equal, one more, many chunks.
  const std::vector<std::size_t> sizes = {0, 1, 6, 7, 8, 13, 14, 1000};
  const auto part = [](int rank, std::size_t size) {
    std::vector<std::uint8_t> p(size);
    for (std::size_t k = 0; k < size; ++k) p[k] = std::uint8_t(31 * rank + 7 * k + size);
    return p;
  };
  for (std::size_t chunk : {std::size_t(7), std::size_t(1) << 30}) {
    world->set_chunk_bytes(chunk);
    CAPTURE(chunk);
    for (std::size_t s0 : sizes)
      for (std::size_t s1 : sizes) {
        CAPTURE(s0, s1);
        const std::size_t own = r == 0 ? s0 : s1;
        for (int root : {0, 1}) {
          const auto gathered = world->gather_bytes(part(r, own), root, "parts");
          if (r == root) {
            REQUIRE(gathered.size() == 2);
            CHECK(gathered[0] == part(0, s0));
            CHECK(gathered[1] == part(1, s1));
          } else {
            CHECK(gathered.empty());
          }
          const std::vector<std::uint8_t> p0 = part(0, s0), p1 = part(1, s1);
          std::vector<view<const std::uint8_t>> parts;
          if (r == root) parts = {make_view(p0), make_view(p1)};
          CHECK(world->scatter_bytes(parts, root, "parts") == (r == 0 ? p0 : p1));
          // The base class's default (broadcasts), for communicators without their own.
          CHECK(world->communicator::scatter_bytes(parts, root, "parts") == (r == 0 ? p0 : p1));
        }
      }
  }
  world->set_chunk_bytes(std::size_t(1) << 30);
  // Root with a wrong number of parts: every rank refuses.
  const std::vector<std::uint8_t> one(3, 1);
  std::vector<view<const std::uint8_t>> wrong;
  if (r == 0) wrong = {make_view(one)};
  CHECK_THROWS_WITH(world->scatter_bytes(wrong, 0, "wrong"), Catch::Contains("scatter_bytes of 'wrong'"));
  CHECK_THROWS_WITH(world->communicator::scatter_bytes(wrong, 0, "wrong"), Catch::Contains("scatter_bytes of 'wrong'"));
  // One process: its one part back.
  single_process_communicator alone;
  const std::vector<std::uint8_t> three = {1, 2, 3};
  CHECK(alone.scatter_bytes({make_view(three)}, 0, "alone") == three);
  CHECK_THROWS_WITH(alone.scatter_bytes({}, 0, "alone"), Catch::Contains("0 parts for 1 rank"));
  world->barrier("scatter test");
}

namespace {

/// A stand-in for a trainer's state: `weights` the same on every rank (shared), `buffer` and
/// `cursor` each rank's own (local), rank r's buffer of 40000 * (1 - r) + 100 bytes (rank 0's
/// much larger than rank 1's, as when one rank's replay buffer is full).
struct toy_state {
  std::vector<float> weights;
  std::vector<std::uint8_t> buffer;
  std::uint64_t cursor = 0;
  explicit toy_state(int rank, std::uint8_t salt = 0)
      : weights(300), buffer(std::size_t(40000 * (1 - rank) + 100)), cursor(std::uint64_t(5 + rank + salt)) {
    for (std::size_t k = 0; k < weights.size(); ++k) weights[k] = 0.25f * float(k) + float(salt);
    for (std::size_t k = 0; k < buffer.size(); ++k) buffer[k] = std::uint8_t(k * 13 + std::size_t(rank) * 101 + salt);
  }
  auto shared() {
    return [this](checkpoint& c) { c.bind("weights", serial, make_view(weights)); };
  }
  /// `refuse`: the cursor's check refuses every value (a section this rank cannot take).
  auto local(bool refuse = false) {
    return [this, refuse](checkpoint& c) {
      c.bind("buffer", serial, make_view(buffer));
      c.bind_value("cursor", cursor, [refuse](std::uint64_t x) {
        return refuse ? "cursor " + std::to_string(x) + " refused by this test" : std::string();
      });
    };
  }
  bool operator==(const toy_state& o) const { return weights == o.weights && buffer == o.buffer && cursor == o.cursor; }
};

}  // namespace

TEST_CASE("distributed checkpoint: rank 0 gathers the sections, each rank receives only its own, all or nothing",
          "[distributed][checkpoint]") {
  const int r = world->rank();
  const std::string path = shared_path("rlk-mpi-test-sections");
  for (std::size_t chunk : {std::size_t(1) << 30, std::size_t(4093)}) {
    CAPTURE(chunk);
    world->set_chunk_bytes(chunk);
    toy_state saved(r);
    detail::save_distributed_checkpoint(*world, saved.shared(), saved.local(), path, nullptr, 1, "test");
    // Rank 0 wrote the manifest (the shared state, world_size, the shard table, no rank's
    // section); each rank's shard holds its own state as a one-process checkpoint of it (after
    // the barrier: each rank removes its older shards itself once the manifest is committed).
    world->barrier("saved");
    if (r == 0) {
      const std::vector<std::uint8_t> file = checkpoint::read_bytes(path);
      const auto split = checkpoint::split_from_memory(file.data(), file.size(),
                                                       [](const std::string& n) { return n != "shards"; });
      REQUIRE(split.payloads.size() == 1);
      const auto shards = shard_files(path);
      REQUIRE(shards.size() == 2);
      for (int q = 0; q < 2; ++q) {
        toy_state expected(q);
        checkpoint c;
        expected.local()(c);
        CHECK(checkpoint::read_bytes(shards[std::size_t(q)]) == c.save_to_memory());
      }
    }
    // Load into changed state: restored; rank 1 received the shared state and its own section,
    // not rank 0's 40 kB buffer (the earlier code broadcast the whole file to every rank).
    toy_state state(r, 9);
    const std::uint64_t before = world->stats().bytes;
    detail::load_distributed_checkpoint(*world, state.shared(), state.local(), path, "test");
    const std::uint64_t received = world->stats().bytes - before;
    CHECK(state == saved);
    if (r == 1) CHECK(received < 10000);
    // Rank 1 refuses its section: no rank loads anything, each says why.
    toy_state untouched(r, 3);
    const toy_state copy = untouched;
    if (r == 1) {
      CHECK_THROWS_WITH(detail::load_distributed_checkpoint(*world, untouched.shared(), untouched.local(true), path, "test"),
                        Catch::Contains("refused by this test"));
    } else {
      CHECK_THROWS_WITH(detail::load_distributed_checkpoint(*world, untouched.shared(), untouched.local(), path, "test"),
                        Catch::Contains("rank(s) 1 refused the checkpoint"));
    }
    CHECK(untouched == copy);
    // Rank 0 refuses the shared state (another size bound): rank 1 loads nothing either.
    toy_state other(r, 4);
    const toy_state other_copy = other;
    if (r == 0) {
      CHECK_THROWS_WITH(detail::load_distributed_checkpoint(
                            *world, [&](checkpoint& c) { c.bind("weights", serial, view<float>(other.weights.data(), 299)); },
                            other.local(), path, "test"),
                        Catch::Contains("section 'weights' holds 300"));
    } else {
      CHECK_THROWS_WITH(detail::load_distributed_checkpoint(*world, other.shared(), other.local(), path, "test"),
                        Catch::Contains("rank(s) 0 refused the checkpoint"));
    }
    CHECK(other == other_copy);
  }
  world->set_chunk_bytes(std::size_t(1) << 30);
  // A file assembled as the earlier code wrote it (the format is unchanged) loads; a file of
  // another rank count or of one process is refused on every rank.
  if (r == 0) {
    for (int ranks : {2, 3}) {
      checkpoint c;
      toy_state shared(0);
      shared.shared()(c);
      c.bind_constant("world_size", std::to_string(ranks));
      std::vector<std::vector<std::uint8_t>> images;
      for (int q = 0; q < ranks; ++q) {
        toy_state s(q % 2);
        checkpoint l;
        s.local()(l);
        images.push_back(l.save_to_memory());
      }
      for (int q = 0; q < ranks; ++q)
        c.bind("rank/" + std::to_string(q), serial, make_view(images[std::size_t(q)]));
      c.save(path + (ranks == 2 ? "" : ".3"));
    }
  }
  world->barrier("checkpoint files");
  toy_state state(r, 5);
  detail::load_distributed_checkpoint(*world, state.shared(), state.local(), path, "test");
  CHECK(state == toy_state(r));
  toy_state kept(r, 6);
  const toy_state kept_copy = kept;
  CHECK_THROWS_WITH(detail::load_distributed_checkpoint(*world, kept.shared(), kept.local(), path + ".3", "test"),
                    r == 0 ? Catch::Contains("holds the sections of 3 ranks") : Catch::Contains("rank 0 could not read"));
  CHECK(kept == kept_copy);
  world->barrier("checkpoint test");
  if (r == 0) {
    std::filesystem::remove(path);
    std::filesystem::remove(path + ".3");
    for (const std::string& f : shard_files(path)) std::filesystem::remove(f);
  }
}

namespace {

/// The world communicator, counting the bytes this rank receives from the others (what a
/// collective brings into this rank's memory from another rank).
class receive_counter final : public communicator {
 public:
  explicit receive_counter(mpi_communicator& inner) : inner_(inner) {}
  std::uint64_t received = 0;
  int rank() const noexcept override { return inner_.rank(); }
  int size() const noexcept override { return inner_.size(); }
  std::string name() const override { return inner_.name(); }
  double timeout_seconds() const noexcept override { return inner_.timeout_seconds(); }
  void all_reduce_raw(void* data, std::size_t count, element_kind kind, reduce_op op, reduction_order order,
                      memory_location where, const char* what) override {
    received += count * detail::element_bytes(kind) * std::size_t(size() - 1);
    inner_.all_reduce_raw(data, count, kind, op, order, where, what);
  }
  void broadcast_raw(void* data, std::size_t bytes, int root, memory_location where, const char* what) override {
    if (rank() != root) received += bytes;
    inner_.broadcast_raw(data, bytes, root, where, what);
  }
  void all_gather_raw(const void* data, std::size_t bytes, void* out, const char* what) override {
    received += bytes * std::size_t(size() - 1);
    inner_.all_gather_raw(data, bytes, out, what);
  }
  std::vector<std::vector<std::uint8_t>> gather_bytes(const std::vector<std::uint8_t>& bytes, int root,
                                                      const char* what) override {
    auto parts = inner_.gather_bytes(bytes, root, what);
    for (std::size_t q = 0; q < parts.size(); ++q)
      if (int(q) != rank()) received += parts[q].size();
    return parts;
  }
  std::vector<std::uint8_t> scatter_bytes(const std::vector<view<const std::uint8_t>>& parts, int root,
                                          const char* what) override {
    auto mine = inner_.scatter_bytes(parts, root, what);
    if (rank() != root) received += mine.size();
    return mine;
  }
  void barrier(const char* what) override { inner_.barrier(what); }
  [[noreturn]] void abort(int code) noexcept override { inner_.abort(code); }

 private:
  mpi_communicator& inner_;
};

/// Shared weights and a rank's own buffer: rank 1's of 1 MiB (its replay buffer, say), rank 0's
/// of 100 bytes.
struct big_state {
  std::vector<float> weights = std::vector<float>(64);
  std::vector<std::uint8_t> buffer;
  big_state(int rank, std::uint8_t salt) : buffer(rank == 1 ? std::size_t(1) << 20 : 100) {
    for (std::size_t k = 0; k < weights.size(); ++k) weights[k] = float(k) + float(salt);
    for (std::size_t k = 0; k < buffer.size(); ++k) buffer[k] = std::uint8_t(k * 7 + std::size_t(rank) * 31 + salt);
  }
  auto shared() {
    return [this](checkpoint& c) { c.bind("weights", serial, make_view(weights)); };
  }
  auto local() {
    return [this](checkpoint& c) { c.bind("buffer", serial, make_view(buffer)); };
  }
  bool operator==(const big_state& o) const { return weights == o.weights && buffer == o.buffer; }
};

}  // namespace

TEST_CASE("distributed checkpoint: every rank writes its own shard, rank 0 commits the manifest last, no rank "
          "receives another's state", "[distributed][checkpoint]") {
  const int r = world->rank();
  receive_counter counted(*world);
  const std::string path = shared_path("rlk-mpi-test-shards");
  namespace fs = std::filesystem;
  const auto save = [&](big_state& s, const std::string& to) {
    detail::save_distributed_checkpoint(counted, s.shared(), s.local(), to, nullptr, 1, "test");
  };
  const auto load = [&](big_state& s, const std::string& from) {
    detail::load_distributed_checkpoint(counted, s.shared(), s.local(), from, "test");
  };

  // The save: rank 0 receives a few bytes (the shards' sizes and checksums), not rank 1's 1 MiB.
  big_state saved(r, 1);
  counted.received = 0;
  save(saved, path);
  CAPTURE(counted.received);
  CHECK(counted.received < 4096);
  world->barrier("saved");
  if (r == 0) {
    // The manifest and one shard per rank; the manifest holds no rank's state.
    REQUIRE(fs::exists(path));
    CHECK(fs::file_size(path) < 4096);
    const std::vector<std::string> shards = shard_files(path);
    REQUIRE(shards.size() == 2);
    CHECK(shards[0].substr(shards[0].size() - 6) == ".rank0");
    CHECK(shards[1].substr(shards[1].size() - 6) == ".rank1");
    CHECK(fs::file_size(shards[1]) > (std::size_t(1) << 20));
  }

  // The load: every rank reads its own shard; rank 1 receives the shared state and its shard's
  // entry, not its 1 MiB over the communicator.
  big_state state(r, 2);
  counted.received = 0;
  load(state, path);
  CHECK(state == saved);
  CHECK(counted.received < 4096);

  // Saved again to the same path: the new save's shards replace the old ones once its manifest
  // is committed (one shard per rank remains).
  big_state second(r, 3);
  save(second, path);
  world->barrier("saved again");
  if (r == 0) CHECK(shard_files(path).size() == 2);
  load(state, path);
  CHECK(state == second);
  // The manifest under another name (copied, renamed) still finds its shards: it names them.
  if (r == 0) fs::copy_file(path, path + "-copy");
  world->barrier("manifest copied");
  big_state from_copy(r, 8);
  load(from_copy, path + "-copy");
  CHECK(from_copy == second);
  world->barrier("copy loaded");
  if (r == 0) fs::remove(path + "-copy");

  // A save that fails before its manifest (rank 0's shared state throws after every shard was
  // written): every rank throws, the previous checkpoint stays whole and loads.
  big_state third(r, 4);
  const auto failing_shared = [&](checkpoint&) { throw std::runtime_error("the manifest fails in this test"); };
  if (r == 0) {
    CHECK_THROWS_WITH(detail::save_distributed_checkpoint(counted, failing_shared, third.local(), path, nullptr, 2, "test"),
                      Catch::Contains("the manifest fails in this test"));
  } else {
    CHECK_THROWS_WITH(detail::save_distributed_checkpoint(counted, third.shared(), third.local(), path, nullptr, 2, "test"),
                      Catch::Contains("rank 0 could not write the checkpoint's manifest"));
  }
  world->barrier("failed save");
  if (r == 0) CHECK(shard_files(path).size() == 2);
  big_state after_failure(r, 5);
  load(after_failure, path);
  CHECK(after_failure == second);

  // A shard of another save (rank 1's replaced by rank 0's file): refused on every rank, nothing loaded.
  const std::vector<std::string> shards = r == 0 ? shard_files(path) : std::vector<std::string>();
  if (r == 0) {
    fs::copy_file(shards[1], shards[1] + ".kept");
    fs::copy_file(shards[0], shards[1], fs::copy_options::overwrite_existing);
  }
  world->barrier("shard replaced");
  big_state untouched(r, 6);
  const big_state copy = untouched;
  CHECK_THROWS_WITH(load(untouched, path), r == 1 ? Catch::Contains("does not belong to the checkpoint")
                                                  : Catch::Contains("rank(s) 1 refused the checkpoint"));
  CHECK(untouched == copy);

  // A missing shard (a crash before rank 1's shard was written, or a lost file): refused on every
  // rank with a message naming the shard, nothing loaded.
  if (r == 0) fs::remove(shards[1]);
  world->barrier("shard removed");
  CHECK_THROWS_WITH(load(untouched, path), r == 1 ? Catch::Contains("the shard of rank 1 of the checkpoint")
                                                  : Catch::Contains("rank(s) 1 refused the checkpoint"));
  CHECK(untouched == copy);
  if (r == 0) fs::rename(shards[1] + ".kept", shards[1]);
  world->barrier("shard restored");
  load(untouched, path);
  CHECK(untouched == second);

  // No manifest (a crash before rank 0 committed it): there is no checkpoint, on any rank.
  if (r == 0) fs::remove(path);
  world->barrier("manifest removed");
  CHECK_THROWS_WITH(load(untouched, path), r == 0 ? Catch::Contains("cannot open") : Catch::Contains("rank 0 could not read"));

  // A rotating directory (checkpoint_keep = 2): rotation removes a checkpoint's shards with its
  // manifest; shards no manifest names (the interrupted save's) go too.
  const std::string dir_name = path + ".dir";
  std::optional<checkpoint_directory> dir;
  if (r == 0) dir.emplace(dir_name, "toy", 2);
  for (std::uint64_t step : {10, 20, 30}) {
    big_state s(r, std::uint8_t(step));
    detail::save_distributed_checkpoint(counted, s.shared(), s.local(), "", dir ? &*dir : nullptr, step, "test");
  }
  world->barrier("rotation");
  if (r == 0) {
    const std::vector<std::string> kept = dir->list();
    REQUIRE(kept.size() == 2);
    std::size_t shards = 0;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_name))
      shards += e.path().filename().string().find(".rank") != std::string::npos;
    CHECK(shards == 4);  // the 2 checkpoints' shards, no others
    CHECK(shard_files(kept[0]).size() == 2);
    CHECK(shard_files(kept[1]).size() == 2);
  }
  world->barrier("rotation checked");
  big_state latest(r, 7);
  load(latest, dir_name + "/toy-000000000030.rlkc");
  CHECK(latest == big_state(r, 30));
  // A run resumed from step 20 saves step 30 again: the directory keeps the abandoned run's
  // checkpoint of step 30 and names the new one otherwise; each loads with its own shards.
  std::optional<checkpoint_directory> resumed;
  if (r == 0) {
    resumed.emplace(dir_name, "toy", 2);
    resumed->resumed_from(dir_name + "/toy-000000000020.rlkc");
  }
  big_state again(r, 31);
  const std::string written = detail::broadcast_text(
      *world,
      detail::save_distributed_checkpoint(counted, again.shared(), again.local(), "", resumed ? &*resumed : nullptr, 30,
                                          "test"),
      "written");
  CHECK(written != dir_name + "/toy-000000000030.rlkc");
  world->barrier("saved again in the directory");
  big_state abandoned(r, 7), continued(r, 7);
  load(abandoned, dir_name + "/toy-000000000030.rlkc");
  CHECK(abandoned == big_state(r, 30));
  load(continued, written);
  CHECK(continued == again);
  world->barrier("checkpoint test");
  if (r == 0) {
    for (const std::string& f : shard_files(path)) fs::remove(f);
    fs::remove_all(dir_name);
  }
}

TEST_CASE("mpi communicator: gather and scatter of more than 2 GiB (MPI's int counts)", "[.large]") {
  // Not run by CTest (about 7 GB of memory): mpiexec -n 2 mpi_test "[.large]".
  const int r = world->rank();
  const std::size_t big = (std::size_t(1) << 31) + 12345;
  std::vector<std::uint8_t> mine(r == 1 ? big : 10);
  for (std::size_t k = 0; k < mine.size(); k += 4096) mine[k] = std::uint8_t(k >> 12);
  mine.back() = 77;
  auto parts = world->gather_bytes(mine, 0, "big");
  if (r == 0) {
    REQUIRE(parts[1].size() == big);
    CHECK(parts[1].back() == 77);
    CHECK(parts[1][big / 2 / 4096 * 4096] == std::uint8_t((big / 2 / 4096 * 4096) >> 12));
  }
  mine = {};
  std::vector<view<const std::uint8_t>> views;
  if (r == 0) views = {make_view(parts[0]), make_view(parts[1])};
  const std::vector<std::uint8_t> back = world->scatter_bytes(views, 0, "big");
  CHECK(back.size() == (r == 1 ? big : 10));
  CHECK(back.back() == 77);
}

TEST_CASE("ppo: 2 ranks x 4 envs train CartPole-v1 as 1 process x 8 envs with env_shards = 2, bit for bit",
          "[distributed][ppo]") {
  check_equals_one_process<cartpole<float>>(cartpole_config());
}

TEST_CASE("ppo: gradient accumulation on 2 ranks equals 1 process with the same shards and accumulation",
          "[distributed][ppo][accumulation]") {
  ppo_config c = cartpole_config();
  c.gradient_accumulation_steps = 4;
  check_equals_one_process<cartpole<float>>(c);
}

TEST_CASE("ppo: 2 ranks equal 1 process on Pendulum-v1 with both normalisers and an early KL stop",
          "[distributed][ppo]") {
  ppo_config c = cartpole_config();
  c.num_envs = 2;
  c.num_steps = 64;
  c.normalize_observations = true;
  c.normalize_rewards = true;
  c.target_kl = 0.002;
  c.total_timesteps = 2 * 2 * 64 * 3;
  check_equals_one_process<pendulum<float>>(c);
}

TEST_CASE("ppo: 2 ranks equal 1 process on Hopper-v5 (MuJoCo) with the continuous preset's normalisers",
          "[distributed][ppo][mujoco]") {
  ppo_config c = ppo_config::cleanrl_continuous();
  c.num_envs = 2;
  c.num_steps = 64;
  c.num_minibatches = 4;
  c.update_epochs = 2;
  c.total_timesteps = 2 * 2 * 64 * 2;
  check_equals_one_process<hopper<float>>(c);
}

TEST_CASE("ppo: the native reduction (MPI_Allreduce) trains in step on every rank", "[distributed][ppo]") {
  // With 2 ranks a sum is one addition, the same bits in either order: native equals ordered.
  // What this checks is the path itself: every rank ends with the same parameters (checked every
  // iteration), and the config records the choice.
  ppo_config c = cartpole_config();
  c.parameter_check_every = 1;
  ppo_config native = c;
  native.gradient_reduction = reduction_order::native;
  CHECK(native.hyperparameters().find("gradient_reduction=native") != std::string::npos);
  ppo<cartpole<float>, backend_t> a(serial, c, {}, *world), b(serial, native, {}, *world);
  while (!a.done()) {
    a.iterate();
    b.iterate();
  }
  CHECK(parameters(a) == parameters(b));
}

TEST_CASE("ppo: a run resumed from a 2-rank checkpoint continues bit for bit", "[distributed][ppo][checkpoint]") {
  ppo_config c = cartpole_config();
  c.total_timesteps = 2 * 4 * 32 * 4;
  const std::string path = shared_path("rlk-mpi-test-resume");
  ppo<cartpole<float>, backend_t> first(serial, c, {}, *world);
  first.iterate();
  first.iterate();
  first.save_checkpoint(path);
  while (!first.done()) first.iterate();
  ppo<cartpole<float>, backend_t> resumed(serial, c, {}, *world);
  resumed.load_checkpoint(path);
  CHECK(resumed.iteration() == 2);
  while (!resumed.done()) resumed.iterate();
  CHECK(parameters(resumed) == parameters(first));
  CHECK(resumed.envs().observations().to_host() == first.envs().observations().to_host());
  // One process cannot take a 2-rank checkpoint: refused, naming what does not fit.
  ppo<cartpole<float>, backend_t> alone(serial, c);
  if (world->rank() == 0) CHECK_THROWS_WITH(alone.load_checkpoint(path), Catch::Contains("missing section 'env/layout'"));
  world->barrier("checkpoint test");
  if (world->rank() == 0) {
    std::filesystem::remove(path);
    for (const std::string& f : shard_files(path)) std::filesystem::remove(f);
  }
}

TEST_CASE("ppo: automatic data-parallel checkpoints rotate manifest and shards together; the latest resumes bit "
          "for bit", "[distributed][ppo][checkpoint]") {
  namespace fs = std::filesystem;
  const std::string dir = shared_path("rlk-mpi-test-auto") + ".dir";
  ppo_config c = cartpole_config();
  c.checkpoint_dir = dir;
  c.checkpoint_every = 1;
  c.checkpoint_keep = 2;
  ppo<cartpole<float>, backend_t> first(serial, c, {}, *world);
  while (!first.done()) first.iterate();
  world->barrier("trained");
  std::string resume_from;
  if (world->rank() == 0) {
    const std::vector<std::string> kept = checkpoint_directory(dir, "ppo", 2).list();
    REQUIRE(kept.size() == 2);  // iterations 3 and 4 of 4
    std::size_t shards = 0;
    for (const fs::directory_entry& e : fs::directory_iterator(dir))
      shards += e.path().filename().string().find(".rank") != std::string::npos;
    CHECK(shards == 4);  // the kept checkpoints' shards, none of the rotated ones
    for (const std::string& k : kept) CHECK(shard_files(k).size() == 2);
    resume_from = kept[0];
  }
  resume_from = detail::broadcast_text(*world, resume_from, "checkpoint to resume");
  ppo<cartpole<float>, backend_t> resumed(serial, c, {}, *world);
  resumed.load_checkpoint(resume_from);
  CHECK(resumed.iteration() == 3);
  while (!resumed.done()) resumed.iterate();
  CHECK(parameters(resumed) == parameters(first));
  CHECK(resumed.envs().observations().to_host() == first.envs().observations().to_host());
  world->barrier("checkpoint test");
  if (world->rank() == 0) fs::remove_all(dir);
}

TEST_CASE("ppo: a rank whose parameters differ from rank 0's is reported by every rank", "[distributed][ppo]") {
  ppo_config c = cartpole_config();
  c.parameter_check_every = 1;
  ppo<cartpole<float>, backend_t> agent(serial, c, {}, *world);
  agent.iterate();  // equal: no report
  if (world->rank() == 1) {
    std::vector<float> p = agent.critic().parameters_to_host();
    p[0] += 1.0f;  // as a rank that computed something else would
    agent.critic().set_parameters(p);
  }
  CHECK_THROWS_WITH(agent.iterate(), Catch::Contains("the parameters of rank(s) 1 differ from rank 0's"));
}

TEST_CASE("ppo: ranks given different configs are refused at construction", "[distributed][ppo]") {
  ppo_config c = cartpole_config();
  if (world->rank() == 1) c.learning_rate *= 2;
  CHECK_THROWS_WITH((ppo<cartpole<float>, backend_t>(serial, c, {}, *world)),
                    Catch::Contains("rank 1's config differs from rank 0's"));
  ppo_config sharded = cartpole_config();
  sharded.env_shards = 2;
  CHECK_THROWS_WITH((ppo<cartpole<float>, backend_t>(serial, sharded, {}, *world)),
                    Catch::Contains("every rank is one shard"));
}

TEST_CASE("sac: 2 ranks x 2 envs train Pendulum-v1 as 1 process x 4 envs with env_shards = 2, bit for bit",
          "[distributed][sac]") {
  check_off_policy_equals_one_process<sac<pendulum<float>, backend_t>>(sac_small());
}

TEST_CASE("sac: gradient accumulation on 2 ranks equals 1 process with the same shards and accumulation",
          "[distributed][sac][accumulation]") {
  sac_config c = sac_small();
  c.gradient_accumulation_steps = 4;
  check_off_policy_equals_one_process<sac<pendulum<float>, backend_t>>(c);
}

TEST_CASE("td3: 2 ranks x 2 envs train Pendulum-v1 as 1 process x 4 envs with env_shards = 2, bit for bit",
          "[distributed][td3]") {
  check_off_policy_equals_one_process<td3<pendulum<float>, backend_t>>(td3_small());
  td3_config c = td3_small();
  c.gradient_accumulation_steps = 2;
  check_off_policy_equals_one_process<td3<pendulum<float>, backend_t>>(c);
}

TEST_CASE("dqn: 2 ranks x 2 envs train CartPole-v1 as 1 process x 4 envs with env_shards = 2, bit for bit",
          "[distributed][dqn]") {
  check_off_policy_equals_one_process<dqn<cartpole<float>, backend_t>>(dqn_small());
  dqn_config c = dqn_small();
  c.gradient_accumulation_steps = 2;
  check_off_policy_equals_one_process<dqn<cartpole<float>, backend_t>>(c);
}

TEST_CASE("sac, td3, dqn: runs resumed from 2-rank checkpoints (with the ranks' replay buffers) continue bit for bit",
          "[distributed][checkpoint]") {
  check_off_policy_resume<sac<pendulum<float>, backend_t>>(sac_small(), "rlk-mpi-test-sac");
  world->set_chunk_bytes(1021);  // every message in small chunks (the shards themselves are not sent)
  check_off_policy_resume<td3<pendulum<float>, backend_t>>(td3_small(), "rlk-mpi-test-td3");
  world->set_chunk_bytes(std::size_t(1) << 30);
  check_off_policy_resume<dqn<cartpole<float>, backend_t>>(dqn_small(), "rlk-mpi-test-dqn");
}

TEST_CASE("sac, dqn: diverged ranks are reported, and what cannot be data-parallel is refused", "[distributed]") {
  sac_config c = sac_small();
  c.parameter_check_every = 1;
  sac<pendulum<float>, backend_t> agent(serial, c, {}, *world);
  agent.iterate();
  if (world->rank() == 1) {
    std::vector<float> p = agent.critic2_target().parameters_to_host();
    p[3] -= 0.5f;
    agent.critic2_target().set_parameters(p);
  }
  CHECK_THROWS_WITH(agent.iterate(), Catch::Contains("the parameters of rank(s) 1 differ from rank 0's"));
  dqn_config d = dqn_small();
  if (world->rank() == 0) d.gamma = 0.98;
  CHECK_THROWS_WITH((dqn<cartpole<float>, backend_t>(serial, d, {}, *world)),
                    Catch::Contains("rank 1's config differs from rank 0's"));
  dqn_config per = dqn_small();
  per.prioritized = true;
  CHECK_THROWS_WITH((dqn<cartpole<float>, backend_t>(serial, per, {}, *world)),
                    Catch::Contains("prioritized replay is not data-parallel"));
  td3_config sharded = td3_small();
  sharded.env_shards = 2;
  CHECK_THROWS_WITH((td3<pendulum<float>, backend_t>(serial, sharded, {}, *world)),
                    Catch::Contains("every rank is one shard"));
}

int main(int argc, char** argv) {
  mpi_communicator comm(argc, argv, 120.0);
  world = &comm;
  Catch::Session session;
  if (comm.rank() != 0) session.configData().reporterName = "compact";  // rank 0 reports in full
  int rc = session.run(argc, argv);
  std::uint64_t failed = rc != 0 ? 1 : 0;
  all_reduce(comm, serial, view<std::uint64_t>(&failed, 1), reduce_op::sum, reduction_order::ordered, "results");
  if (comm.rank() == 0) std::printf("mpi_test: %d of %d ranks failed\n", int(failed), comm.size());
  return failed ? 1 : 0;
}
