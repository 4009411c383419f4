// rlkernels/buffers/replay_buffer.hpp
// replay_buffer: a ring of vec_env steps (one row = N transitions) in backend memory, with uniform
// sampling keyed by (seed, draw, index), 1-step and n-step gathers that never cross an episode end
// or the write head, and replay_batch, the owning batch they fill.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/random.hpp"
#include "../core/reduce.hpp"
#include "common.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace rlkernels {

namespace detail {

/// The portable form of mulhi64 (also the reference the tests check the fast forms against).
RLK_HOST_DEVICE constexpr std::uint64_t mulhi64_portable(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t a_lo = a & 0xFFFFFFFFu, a_hi = a >> 32, b_lo = b & 0xFFFFFFFFu, b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
  const std::uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFu) + lo_hi;
  return hi_hi + (hi_lo >> 32) + (cross >> 32);
}

/// out[i] = value.
template <class Scalar>
struct fill_value_kernel {
  Scalar* out;
  Scalar value;
  RLK_HOST_DEVICE void operator()(std::size_t i) const { out[i] = value; }
};

#if !defined(__CUDA_ARCH__) && defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 uint128_t;  // __extension__: no -Wpedantic warning
#endif

/// High 64 bits of the 128-bit product a * b: __umul64hi on CUDA, a 128-bit integer where the
/// host compiler has one, four 32-bit products otherwise (all give the same bits).
RLK_INLINE std::uint64_t mulhi64(std::uint64_t a, std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#elif defined(__SIZEOF_INT128__)
  return static_cast<std::uint64_t>((static_cast<uint128_t>(a) * b) >> 64);
#else
  return mulhi64_portable(a, b);
#endif
}

/// @brief An exactly uniform integer in [0, n) for 1 <= n < 2^64 from 64-bit draws of `gen`
/// (Lemire's multiply-shift with rejection, "Fast random integer generation in an interval",
/// 2019). A draw is rejected with probability below n / 2^64, so one 64-bit word almost always
/// suffices; the result is a pure function of the generator's position.
template <class Rng>
RLK_INLINE std::uint64_t uniform_index64(Rng& gen, std::uint64_t n) {
  std::uint64_t x = gen.next_u64();
  std::uint64_t low = x * n;  // low 64 bits of the product
  if (low < n) {
    const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    while (low < threshold) {
      x = gen.next_u64();
      low = x * n;
    }
  }
  return mulhi64(x, n);
}

}  // namespace detail

/// @brief A batch of B transitions gathered from a replay buffer (owning; arrays in the memory of
/// `Backend`). Every array is indexed by the position b in [0, B) of the sample.
/// @tparam Scalar float or double (observations, rewards)
/// @tparam Action std::int32_t (discrete actions) or Scalar (continuous actions)
/// @tparam Backend serial_backend, openmp_backend or cuda_backend
template <class Scalar, class Action, class Backend>
struct replay_batch {
  static_assert(std::is_floating_point_v<Scalar>, "rlkernels::replay_batch: Scalar must be float or double");

  /// @brief Allocates a zeroed batch of `batch_size` samples (weights start at 1).
  /// @param backend where the arrays live
  /// @param batch_size B (may be 0)
  /// @param observation_size scalars per observation, >= 1
  /// @param action_width actions per transition (1 for discrete), >= 1
  /// @throw std::invalid_argument if observation_size or action_width < 1
  /// @throw out_of_memory naming the bytes needed if the batch does not fit
  replay_batch(Backend backend, std::size_t batch_size, int observation_size, int action_width)
      : indices(checked(backend, batch_size, observation_size, action_width), batch_size),
        observations(backend, batch_size * std::size_t(observation_size)),
        actions(backend, batch_size * std::size_t(action_width)), rewards(backend, batch_size),
        next_observations(backend, batch_size * std::size_t(observation_size)), terminated(backend, batch_size),
        truncated(backend, batch_size), discounts(backend, batch_size), weights(backend, batch_size),
        observation_size_(observation_size), action_width_(action_width) {
    for_each_index(backend, batch_size, detail::fill_value_kernel<Scalar>{weights.data(), Scalar(1)});
  }

  /// Bytes of backend memory a batch of this shape allocates.
  static std::size_t bytes_required(std::size_t batch_size, int observation_size, int action_width) {
    const std::size_t obs = observation_size > 0 ? std::size_t(observation_size) : 0;
    const std::size_t width = action_width > 0 ? std::size_t(action_width) : 0;
    const std::size_t per_sample = sizeof(std::uint64_t) + 2 * obs * sizeof(Scalar) + width * sizeof(Action) +
                                   3 * sizeof(Scalar) + 2 * sizeof(std::uint8_t);
    return batch_size > std::size_t(-1) / per_sample ? std::size_t(-1) : batch_size * per_sample;
  }

  /// Number of samples B.
  std::size_t size() const noexcept { return indices.size(); }
  /// Scalars per observation (the row length of observations and next_observations).
  int observation_size() const noexcept { return observation_size_; }
  /// Actions per sample (the row length of actions).
  int action_width() const noexcept { return action_width_; }

  buffer<std::uint64_t, Backend> indices;       ///< [B] slot of each sample in the replay buffer (row * N + env)
  buffer<Scalar, Backend> observations;         ///< [B, observation_size] s_t
  buffer<Action, Backend> actions;              ///< [B, action_width] a_t
  buffer<Scalar, Backend> rewards;              ///< [B] r_t, or the discounted n-step sum
  buffer<Scalar, Backend> next_observations;    ///< [B, observation_size] s' of the last summed step
  buffer<std::uint8_t, Backend> terminated;     ///< [B] uint8 0/1: the last summed step terminated
  buffer<std::uint8_t, Backend> truncated;      ///< [B] uint8 0/1: the last summed step was truncated
  buffer<Scalar, Backend> discounts;            ///< [B] gamma^m of the m summed steps (1-step: gamma)
  buffer<Scalar, Backend> weights;              ///< [B] importance weights (1 for uniform sampling)

private:
  static Backend checked(Backend backend, std::size_t batch_size, int observation_size, int action_width) {
    RLK_EXPECTS(observation_size >= 1, std::invalid_argument,
                "rlkernels::replay_batch: observation_size must be >= 1, got ", observation_size);
    RLK_EXPECTS(action_width >= 1, std::invalid_argument, "rlkernels::replay_batch: action_width must be >= 1, got ",
                action_width);
    detail::expect_fits(backend, bytes_required(batch_size, observation_size, action_width),
                        detail::concat("rlkernels::replay_batch: ", batch_size, " samples"));
    return backend;
  }

  int observation_size_;
  int action_width_;
};

namespace detail {

/// Pointers to a replay buffer's ring (backend memory), as the kernels see them.
template <class Scalar, class Action>
struct replay_arrays {
  const Scalar* observations;       // [C * N, obs]
  const Action* actions;            // [C * N, w]
  const Scalar* rewards;            // [C * N]
  const Scalar* next_observations;  // [C * N, obs]
  const std::uint8_t* terminated;   // [C * N]
  const std::uint8_t* truncated;    // [C * N]
  std::size_t capacity_steps;       // C
  std::size_t num_envs;             // N
  std::size_t head_row;             // next row to write; the row before it (mod C) is the newest
  int observation_size;
  int action_width;
};

/// indices[k] = a uniform slot in [0, size) drawn from rng(seed, draw, block k).
struct uniform_indices_kernel {
  std::uint64_t seed;
  std::uint64_t draw;
  std::uint64_t size;
  std::uint64_t* indices;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    rng gen(seed, draw, k);
    indices[k] = uniform_index64(gen, size);
  }
};

/// indices[k] = a uniform slot among the transitions of env columns [first, first + cols) of a
/// ring of N columns and `rows` stored rows, drawn from rng(seed, draw, block k): u uniform in
/// [0, rows * cols), then row u / cols, column first + u % cols (with cols = N: the slot u).
struct column_indices_kernel {
  std::uint64_t seed;
  std::uint64_t draw;
  std::uint64_t rows, cols, first, num_envs;
  std::uint64_t* indices;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    rng gen(seed, draw, k);
    const std::uint64_t u = uniform_index64(gen, rows * cols);
    indices[k] = (u / cols) * num_envs + first + u % cols;
  }
};

/// Gathers sample b: observation and action of its slot, then up to n rewards forward in the same
/// env column, stopping after a done step, after n steps, or before the write head.
template <class Scalar, class Action>
struct gather_kernel {
  replay_arrays<Scalar, Action> a;
  const std::uint64_t* indices;
  int n;
  Scalar gamma;
  bool write_discounts;
  std::uint64_t* out_indices;
  Scalar* observations;
  Action* actions;
  Scalar* rewards;
  Scalar* next_observations;
  std::uint8_t* terminated;
  std::uint8_t* truncated;
  Scalar* discounts;

  RLK_HOST_DEVICE void operator()(std::size_t b) const {
    const std::uint64_t slot = indices[b];
    const std::size_t N = a.num_envs;
    const std::size_t env = std::size_t(slot % N);
    std::size_t row = std::size_t(slot / N);
    const std::size_t obs = std::size_t(a.observation_size), width = std::size_t(a.action_width);
    for (std::size_t k = 0; k < obs; ++k) observations[b * obs + k] = a.observations[std::size_t(slot) * obs + k];
    for (std::size_t k = 0; k < width; ++k) actions[b * width + k] = a.actions[std::size_t(slot) * width + k];

    Scalar sum = 0, discount = 1;
    std::size_t last = std::size_t(slot);
    for (int m = 0;;) {
      const std::size_t s = row * N + env;
      sum += discount * a.rewards[s];
      discount *= gamma;
      last = s;
      ++m;
      if (a.terminated[s] || a.truncated[s] || m >= n) break;
      const std::size_t next_row = row + 1 == a.capacity_steps ? 0 : row + 1;
      if (next_row == a.head_row) break;  // row was the newest: it has no successor yet
      row = next_row;
    }
    out_indices[b] = slot;
    rewards[b] = sum;
    for (std::size_t k = 0; k < obs; ++k) next_observations[b * obs + k] = a.next_observations[last * obs + k];
    terminated[b] = a.terminated[last];
    truncated[b] = a.truncated[last];
    if (write_discounts) discounts[b] = discount;
  }
};

/// indices[i], as a reduction term.
struct index_term {
  const std::uint64_t* indices;
  RLK_HOST_DEVICE std::uint64_t operator()(std::size_t i) const { return indices[i]; }
};

/// The larger of two indices (an exact, order-free reduction).
struct max_index_combine {
  RLK_HOST_DEVICE std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const { return a > b ? a : b; }
};

/// Largest element of an array of indices in backend memory (0 if empty), returned to the host:
/// a deterministic_sum, one host wait on every backend (counted as a reduction).
template <class Backend>
std::uint64_t max_index(const Backend& backend, const std::uint64_t* data, std::size_t n) {
  if (n == 0) return 0;
  return deterministic_sum(backend, n, index_term{data}, std::uint64_t(0), max_index_combine{});
}

}  // namespace detail

/// @brief A replay buffer of vec_env transitions: a ring of `capacity_steps` rows, each row one
/// step of N envs, in the memory of `Backend`. The transition of env i in row r lives in slot
/// r * N + i.
///
/// Arrays (C = capacity_steps, all in backend memory, slot-major):
/// - observations [C * N, observation_size] Scalar: s_t, the observation acted on
/// - actions [C * N, action_width] Action: a_t
/// - rewards [C * N] Scalar: r_t
/// - next_observations [C * N, observation_size] Scalar: s' = vec_env::final_observations() (the
///   observation before any auto-reset, so it is the true successor even where the episode ended)
/// - terminated, truncated [C * N] uint8 0/1
///
/// `add` writes row `head_row()` and advances the head; once C rows were added the oldest row is
/// overwritten. Rows are ordered by age: the oldest is row 0 until the ring wraps, then the head
/// row; the newest is the row before the head. Sampling draws uniformly from the `size()` stored
/// slots, which are always slots [0, size()).
///
/// @tparam Scalar float or double
/// @tparam Action std::int32_t (discrete actions) or Scalar (continuous actions)
/// @tparam Backend serial_backend, openmp_backend or cuda_backend
template <class Scalar, class Action, class Backend>
class replay_buffer {
  static_assert(std::is_floating_point_v<Scalar>, "rlkernels::replay_buffer: Scalar must be float or double");
  static_assert(std::is_same_v<Action, std::int32_t> || std::is_same_v<Action, Scalar>,
                "rlkernels::replay_buffer: Action must be std::int32_t (discrete) or Scalar (continuous)");
  static_assert(is_backend_v<Backend>,
                "rlkernels::replay_buffer: Backend must be serial_backend, openmp_backend or cuda_backend");

public:
  using scalar_type = Scalar;                          ///< observation and reward type
  using action_type = Action;                          ///< action type
  using backend_type = Backend;                        ///< where the ring lives
  using batch_type = replay_batch<Scalar, Action, Backend>;  ///< the batch sample() fills

  /// @brief Allocates an empty ring of `capacity_steps` rows of `num_envs` transitions.
  /// @param backend where the ring lives
  /// @param capacity_steps C, rows kept (>= 1)
  /// @param num_envs N, transitions per row (>= 1)
  /// @param observation_size scalars per observation (>= 1)
  /// @param action_width actions per transition (1 for discrete actions), >= 1
  /// @throw std::invalid_argument if any size is 0 (or negative)
  /// @throw out_of_memory naming the bytes needed, before allocating anything, if the ring does
  ///        not fit in the backend's memory
  replay_buffer(Backend backend, std::size_t capacity_steps, std::size_t num_envs, int observation_size,
                int action_width)
      : backend_(checked(backend, capacity_steps, num_envs, observation_size, action_width)),
        capacity_steps_(capacity_steps), num_envs_(num_envs), observation_size_(observation_size),
        action_width_(action_width), observations_(backend, capacity_steps * num_envs * std::size_t(observation_size)),
        actions_(backend, capacity_steps * num_envs * std::size_t(action_width)),
        rewards_(backend, capacity_steps * num_envs),
        next_observations_(backend, capacity_steps * num_envs * std::size_t(observation_size)),
        terminated_(backend, capacity_steps * num_envs), truncated_(backend, capacity_steps * num_envs) {}

  /// @brief Bytes of backend memory a ring of this shape allocates (saturates at SIZE_MAX).
  static std::size_t bytes_required(std::size_t capacity_steps, std::size_t num_envs, int observation_size,
                                    int action_width) {
    const std::size_t obs = observation_size > 0 ? std::size_t(observation_size) : 0;
    const std::size_t width = action_width > 0 ? std::size_t(action_width) : 0;
    const std::size_t per_slot = 2 * obs * sizeof(Scalar) + width * sizeof(Action) + sizeof(Scalar) + 2;
    const std::size_t max = std::size_t(-1);
    if (num_envs != 0 && capacity_steps > max / num_envs) return max;
    const std::size_t slots = capacity_steps * num_envs;
    return slots > max / per_slot ? max : slots * per_slot;
  }

  /// @brief Appends one vec_env step of N transitions: writes row head_row() and advances the head
  /// (overwriting the oldest row once the ring is full). Asynchronous on CUDA.
  /// @param observations [N, observation_size] s_t, the observations the actions were chosen on
  /// @param actions [N, action_width] a_t
  /// @param rewards [N] r_t
  /// @param next_observations [N, observation_size] s' (vec_env::final_observations(), not
  ///        observations(): after an auto-reset the latter is the next episode's first observation)
  /// @param terminated [N] uint8 0/1
  /// @param truncated [N] uint8 0/1
  /// @throw std::invalid_argument if a view has the wrong size or is null; nothing is written then
  void add(view<const Scalar> observations, view<const Action> actions, view<const Scalar> rewards,
           view<const Scalar> next_observations, view<const std::uint8_t> terminated,
           view<const std::uint8_t> truncated) {
    const std::size_t n = num_envs_, obs = n * std::size_t(observation_size_), width = n * std::size_t(action_width_);
    check_input(observations.size(), obs, observations.data(), "observations", 0);
    check_input(actions.size(), width, actions.data(), "actions", 1);
    check_input(rewards.size(), n, rewards.data(), "rewards", 2);
    check_input(next_observations.size(), obs, next_observations.data(), "next_observations", 3);
    check_input(terminated.size(), n, terminated.data(), "terminated", 4);
    check_input(truncated.size(), n, truncated.data(), "truncated", 5);
    const std::size_t row = head_row_;
    copy(backend_, observations, observations_.view().subview(row * obs, obs));
    copy(backend_, actions, actions_.view().subview(row * width, width));
    copy(backend_, rewards, rewards_.view().subview(row * n, n));
    copy(backend_, next_observations, next_observations_.view().subview(row * obs, obs));
    copy(backend_, terminated, terminated_.view().subview(row * n, n));
    copy(backend_, truncated, truncated_.view().subview(row * n, n));
    head_row_ = row + 1 == capacity_steps_ ? 0 : row + 1;
    ++rows_added_;
  }

  /// @brief Appends the step a vec_env just took: rewards, final_observations, terminated and
  /// truncated are read from `env` (anything with those four accessors returning buffers or views
  /// in this backend's memory).
  /// @param observations_before_step [N, observation_size] the observations the actions were
  ///        chosen on (copy env.observations() aside before stepping)
  /// @param actions [N, action_width] the actions passed to the step
  /// @param env the vectorised environment after its step
  /// @throw std::invalid_argument as add() above
  template <class VecEnv>
  void add(view<const Scalar> observations_before_step, view<const Action> actions, const VecEnv& env) {
    add(observations_before_step, actions, detail::const_view_of<Scalar>(env.rewards()),
        detail::const_view_of<Scalar>(env.final_observations()),
        detail::const_view_of<std::uint8_t>(env.terminated()), detail::const_view_of<std::uint8_t>(env.truncated()));
  }

  /// Transitions stored: min(rows_added(), capacity_steps) * num_envs.
  std::size_t size() const noexcept { return rows_stored() * num_envs_; }
  /// Transitions the ring holds when full: capacity_steps * num_envs.
  std::size_t capacity() const noexcept { return capacity_steps_ * num_envs_; }
  /// Rows the ring holds when full (C).
  std::size_t capacity_steps() const noexcept { return capacity_steps_; }
  /// Rows stored: min(rows_added(), capacity_steps).
  std::size_t rows_stored() const noexcept {
    return rows_added_ < capacity_steps_ ? std::size_t(rows_added_) : capacity_steps_;
  }
  /// The row the next add() writes.
  std::size_t head_row() const noexcept { return head_row_; }
  /// Transitions per row (N).
  std::size_t num_envs() const noexcept { return num_envs_; }
  /// Scalars per observation.
  int observation_size() const noexcept { return observation_size_; }
  /// Actions per transition.
  int action_width() const noexcept { return action_width_; }
  /// Rows ever added (not capped at the capacity).
  std::uint64_t rows_added() const noexcept { return rows_added_; }
  /// The backend the ring lives on.
  const Backend& backend() const noexcept { return backend_; }

  /// [C * N, observation_size] stored observations (slot-major; only slots [0, size()) are written).
  const buffer<Scalar, Backend>& observations() const noexcept { return observations_; }
  /// [C * N, action_width] stored actions.
  const buffer<Action, Backend>& actions() const noexcept { return actions_; }
  /// [C * N] stored rewards.
  const buffer<Scalar, Backend>& rewards() const noexcept { return rewards_; }
  /// [C * N, observation_size] stored next observations (final observations).
  const buffer<Scalar, Backend>& next_observations() const noexcept { return next_observations_; }
  /// [C * N] uint8 stored terminated flags.
  const buffer<std::uint8_t, Backend>& terminated() const noexcept { return terminated_; }
  /// [C * N] uint8 stored truncated flags.
  const buffer<std::uint8_t, Backend>& truncated() const noexcept { return truncated_; }

  /// @brief Draws indices.size() slots uniformly (with replacement) from the stored slots [0,
  /// size()). indices[k] is a pure function of (seed, draw, k, size()): rng(seed, draw, k) feeds
  /// an exactly uniform 64-bit multiply-shift draw, so every backend and thread count gives the
  /// same indices. Use a new `draw` (e.g. the training step) for every batch.
  /// @param seed key of the sampler
  /// @param draw counter of the batch (the rng stream)
  /// @param indices [B] output in backend memory
  /// @throw std::invalid_argument if the buffer is empty or indices is null (B > 0)
  void sample_indices(std::uint64_t seed, std::uint64_t draw, view<std::uint64_t> indices) const {
    RLK_EXPECTS(size() > 0, std::invalid_argument, "rlkernels::replay_buffer::sample_indices: the buffer is empty");
    RLK_EXPECTS(indices.data() != nullptr || indices.size() == 0, std::invalid_argument,
                "rlkernels::replay_buffer::sample_indices: indices is a null view");
    for_each_index(backend_, indices.size(),
                   detail::uniform_indices_kernel{seed, draw, std::uint64_t(size()), indices.data()});
  }

  /// @brief sample_indices() in shards, as data-parallel ranks sample their own buffers: the N env
  /// columns form S = seeds.size() equal shards and the B indices S equal parts; part s draws
  /// its B / S slots uniformly from the transitions of shard s's columns only, index k of the
  /// part from rng(seeds[s], draw, k). With one seed this is sample_indices(seeds[0], draw,
  /// indices). So one buffer of R * N columns sampled with R seeds draws, part by part, exactly
  /// the transitions that R buffers of N columns (rank r's holding columns rN .. rN + N - 1)
  /// draw with one seed each, seeds[r] on rank r.
  /// @throw std::invalid_argument if the buffer is empty, seeds is empty, S does not divide N or
  ///        B, or indices is null (B > 0)
  void sample_indices_sharded(const std::vector<std::uint64_t>& seeds, std::uint64_t draw,
                              view<std::uint64_t> indices) const {
    constexpr const char* who = "rlkernels::replay_buffer::sample_indices_sharded";
    RLK_EXPECTS(size() > 0, std::invalid_argument, who, ": the buffer is empty");
    RLK_EXPECTS(indices.data() != nullptr || indices.size() == 0, std::invalid_argument, who,
                ": indices is a null view");
    const std::size_t shards = seeds.size();
    RLK_EXPECTS(shards >= 1 && num_envs_ % shards == 0 && indices.size() % shards == 0, std::invalid_argument, who,
                ": ", shards, " shards must divide num_envs (", num_envs_, ") and the batch (", indices.size(), ")");
    const std::size_t cols = num_envs_ / shards, per = indices.size() / shards;
    for (std::size_t s = 0; s < shards; ++s)
      for_each_index(backend_, per,
                     detail::column_indices_kernel{seeds[s], draw, std::uint64_t(rows_stored()), std::uint64_t(cols),
                                                   std::uint64_t(s * cols), std::uint64_t(num_envs_),
                                                   indices.data() + s * per});
  }

  /// @brief sample() with sample_indices_sharded()'s indices.
  /// @throw std::invalid_argument as sample() and sample_indices_sharded(); the batch is then unchanged
  void sample_sharded(const std::vector<std::uint64_t>& seeds, std::uint64_t draw, batch_type& batch, int n = 1,
                      Scalar gamma = Scalar(0.99)) const {
    check_n_step(n, gamma, "sample_sharded");
    check_gather(batch.indices.cview(), batch, "sample_sharded");
    sample_indices_sharded(seeds, draw, batch.indices.view());
    launch_gather(batch.indices.cview(), n, gamma, true, batch);
    for_each_index(backend_, batch.size(), detail::fill_value_kernel<Scalar>{batch.weights.data(), Scalar(1)});
  }

  /// @brief Copies the transitions at `indices` into `batch` (indices, observations, actions,
  /// rewards, next_observations, terminated, truncated; discounts and weights are left as they
  /// are: gather_n_step(indices, 1, gamma, batch) also sets discounts = gamma).
  /// @param indices [B] slots in [0, size()), in backend memory (may be batch.indices itself)
  /// @param batch output of B samples with this buffer's observation_size and action_width
  /// @throw std::invalid_argument on a size or shape mismatch, a null view, an empty buffer or an
  ///        index >= size() (checked with a reduction returned to the host: one host wait, counted); the batch
  ///        is then unchanged
  void gather(view<const std::uint64_t> indices, batch_type& batch) const {
    check_gather(indices, batch, "gather");
    check_indices(indices, "gather");
    gather_unchecked(indices, batch);
  }

  /// @brief gather() without the index range check (sizes are still checked), for indices that
  /// come from a sampler of this buffer; an index >= size() is undefined behaviour.
  void gather_unchecked(view<const std::uint64_t> indices, batch_type& batch) const {
    check_gather(indices, batch, "gather");
    launch_gather(indices, 1, Scalar(1), false, batch);
  }

  /// @brief n-step gather: for each index, sums up to n rewards forward in the same env column,
  /// stopping after a done step (terminated or truncated), after n steps, or after the newest row
  /// (never reading a row not yet written or already overwritten). With m the steps summed:
  /// rewards = sum_{k<m} gamma^k r_{t+k}; next_observations, terminated and truncated are those
  /// of step t+m-1; discounts = gamma^m. The target is then
  /// rewards + discounts * (1 - terminated) * V(next_observations).
  /// @param indices [B] slots in [0, size()) in backend memory (may be batch.indices itself)
  /// @param n the most steps summed, >= 1
  /// @param gamma discount in [0, 1]
  /// @param batch output of B samples (weights are left as they are)
  /// @throw std::invalid_argument as gather(), or if n < 1 or gamma is outside [0, 1] (or NaN)
  void gather_n_step(view<const std::uint64_t> indices, int n, Scalar gamma, batch_type& batch) const {
    check_n_step(n, gamma, "gather_n_step");
    check_gather(indices, batch, "gather_n_step");
    check_indices(indices, "gather_n_step");
    launch_gather(indices, n, gamma, true, batch);
  }

  /// @brief gather_n_step() without the index range check (see gather_unchecked()).
  void gather_n_step_unchecked(view<const std::uint64_t> indices, int n, Scalar gamma, batch_type& batch) const {
    check_n_step(n, gamma, "gather_n_step");
    check_gather(indices, batch, "gather_n_step");
    launch_gather(indices, n, gamma, true, batch);
  }

  /// @brief Samples batch.size() slots uniformly (see sample_indices()) into batch.indices, gathers
  /// their n-step transitions (see gather_n_step(); n = 1 gives plain transitions with discounts =
  /// gamma) and sets weights to 1.
  /// @throw std::invalid_argument if the buffer is empty, the batch's shape differs, n < 1 or gamma
  ///        is outside [0, 1]; the batch is then unchanged
  void sample(std::uint64_t seed, std::uint64_t draw, batch_type& batch, int n = 1, Scalar gamma = Scalar(0.99)) const {
    check_n_step(n, gamma, "sample");
    check_gather(batch.indices.cview(), batch, "sample");
    sample_indices(seed, draw, batch.indices.view());
    launch_gather(batch.indices.cview(), n, gamma, true, batch);
    for_each_index(backend_, batch.size(), detail::fill_value_kernel<Scalar>{batch.weights.data(), Scalar(1)});
  }

  /// @brief Binds the ring to a checkpoint (rlkernels::checkpoint or anything with its bind /
  /// bind_value / bind_constant): `prefix` + "head_row" (checked < capacity_steps on load),
  /// "rows_added" and the arrays "observations", "actions", "rewards", "next_observations",
  /// "terminated" and "truncated"; the constant `prefix` + "layout" (capacity_steps, num_envs,
  /// observation_size, action_width) must match.
  template <class Checkpoint>
  void bind_checkpoint(Checkpoint& c, const std::string& prefix) {
    c.bind_constant(prefix + "layout", "capacity_steps=" + std::to_string(capacity_steps_) + "\nnum_envs=" +
                                           std::to_string(num_envs_) + "\nobservation_size=" +
                                           std::to_string(observation_size_) + "\naction_width=" +
                                           std::to_string(action_width_) + "\n");
    const std::size_t rows = capacity_steps_;
    c.bind_value(prefix + "head_row", head_row_, [rows](const std::size_t& row) {
      return row < rows ? std::string() : "head row " + std::to_string(row) + " >= capacity_steps " + std::to_string(rows);
    });
    c.bind_value(prefix + "rows_added", rows_added_);
    c.bind(prefix + "observations", backend_, observations_.view());
    c.bind(prefix + "actions", backend_, actions_.view());
    c.bind(prefix + "rewards", backend_, rewards_.view());
    c.bind(prefix + "next_observations", backend_, next_observations_.view());
    c.bind(prefix + "terminated", backend_, terminated_.view());
    c.bind(prefix + "truncated", backend_, truncated_.view());
  }

private:
  static Backend checked(Backend backend, std::size_t capacity_steps, std::size_t num_envs, int observation_size,
                         int action_width) {
    detail::check_storage_shape(backend, "rlkernels::replay_buffer", "capacity_steps", capacity_steps, num_envs,
                                observation_size, action_width,
                                bytes_required(capacity_steps, num_envs, observation_size, action_width));
    return backend;
  }

  /// Checks one input of add (argument number `arg`): size, not null, and in the backend's
  /// memory. The memory check (cudaPointerGetAttributes on CUDA) runs once per pointer: the last
  /// pointer accepted for each argument is remembered, and the same pointer again (an env's
  /// arrays, a trainer's staging buffer: the same every step) is not asked about again.
  void check_input(std::size_t size, std::size_t want, const void* data, const char* name, int arg) {
    RLK_EXPECTS(size == want, std::invalid_argument, "rlkernels::replay_buffer::add: ", name, " has ", size,
                " elements, expected ", want, " (num_envs ", num_envs_, ")");
    RLK_EXPECTS(data != nullptr, std::invalid_argument, "rlkernels::replay_buffer::add: ", name, " is a null view");
    if (data == accepted_[arg]) return;
    detail::expect_backend_memory(backend_, data, "rlkernels::replay_buffer::add", name);
    accepted_[arg] = data;
  }

  static void check_n_step(int n, Scalar gamma, const char* fn) {
    RLK_EXPECTS(n >= 1, std::invalid_argument, "rlkernels::replay_buffer::", fn, ": n must be >= 1, got ", n);
    RLK_EXPECTS(gamma >= Scalar(0) && gamma <= Scalar(1), std::invalid_argument, "rlkernels::replay_buffer::", fn,
                ": gamma must be in [0, 1], got ", gamma);
  }

  void check_gather(view<const std::uint64_t> indices, const batch_type& batch, const char* fn) const {
    RLK_EXPECTS(size() > 0, std::invalid_argument, "rlkernels::replay_buffer::", fn, ": the buffer is empty");
    RLK_EXPECTS(batch.observation_size() == observation_size_ && batch.action_width() == action_width_,
                std::invalid_argument, "rlkernels::replay_buffer::", fn, ": the batch has observation_size ",
                batch.observation_size(), " and action_width ", batch.action_width(), ", the buffer ",
                observation_size_, " and ", action_width_);
    RLK_EXPECTS(indices.size() == batch.size(), std::invalid_argument, "rlkernels::replay_buffer::", fn,
                ": indices has ", indices.size(), " elements, the batch ", batch.size());
    RLK_EXPECTS(indices.data() != nullptr || indices.size() == 0, std::invalid_argument,
                "rlkernels::replay_buffer::", fn, ": indices is a null view");
  }

  void check_indices(view<const std::uint64_t> indices, const char* fn) const {
    const std::uint64_t largest = detail::max_index(backend_, indices.data(), indices.size());
    RLK_EXPECTS(indices.size() == 0 || largest < size(), std::invalid_argument, "rlkernels::replay_buffer::", fn,
                ": index ", largest, " is out of range [0, ", size(), ")");
  }

  void launch_gather(view<const std::uint64_t> indices, int n, Scalar gamma, bool write_discounts,
                     batch_type& batch) const {
    const detail::replay_arrays<Scalar, Action> arrays{
        observations_.data(), actions_.data(), rewards_.data(), next_observations_.data(), terminated_.data(),
        truncated_.data(), capacity_steps_, num_envs_, head_row_, observation_size_, action_width_};
    for_each_index(backend_, indices.size(),
                   detail::gather_kernel<Scalar, Action>{
                       arrays, indices.data(), n, gamma, write_discounts, batch.indices.data(),
                       batch.observations.data(), batch.actions.data(), batch.rewards.data(),
                       batch.next_observations.data(), batch.terminated.data(), batch.truncated.data(),
                       batch.discounts.data()});
  }

  Backend backend_;
  std::size_t capacity_steps_;
  std::size_t num_envs_;
  int observation_size_;
  int action_width_;
  std::size_t head_row_ = 0;
  std::uint64_t rows_added_ = 0;
  buffer<Scalar, Backend> observations_;
  buffer<Action, Backend> actions_;
  buffer<Scalar, Backend> rewards_;
  buffer<Scalar, Backend> next_observations_;
  buffer<std::uint8_t, Backend> terminated_;
  buffer<std::uint8_t, Backend> truncated_;
  const void* accepted_[6] = {};  // per input of add: the last pointer the memory check accepted
};

}  // namespace rlkernels
