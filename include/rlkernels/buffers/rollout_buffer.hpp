// rlkernels/buffers/rollout_buffer.hpp
// rollout_buffer: the time-major [T, N] storage of an on-policy rollout (PPO/A2C), filled step by
// step from a vec_env without host round trips, with GAE, a device-side shuffle keyed by
// (seed, epoch) and minibatch gathers; rollout_minibatch is the owning minibatch it fills.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/random.hpp"
#include "common.hpp"
#include "../estimators/gae.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if RLK_HAS_CUDA
#include <cub/device/device_radix_sort.cuh>
#endif

namespace rlkernels {

namespace detail {

/// keys[i] = 64 random bits of rng(seed, epoch, block i); permutation[i] = i.
struct shuffle_keys_kernel {
  std::uint64_t seed;
  std::uint64_t epoch;
  std::uint64_t* keys;
  std::uint64_t* permutation;
  RLK_HOST_DEVICE void operator()(std::size_t i) const {
    rng gen(seed, epoch, i);
    keys[i] = gen.next_u64();
    permutation[i] = i;
  }
};

/// The minibatch order of a rollout shuffled shard by shard (rollout_buffer::shuffle_sharded):
/// position q of the permutation is row j of shard s's part of minibatch k, and shard s's local
/// element e = t * n + i (n envs per shard) is the rollout's element t * N + s * n + i.
struct interleave_shards_kernel {
  const std::uint64_t* local;  // [S, T * n]: each shard's own permutation of its T * n elements
  std::uint64_t* permutation;  // [T * N]
  std::size_t minibatch, per_shard_minibatch, shard_envs, shard_elements, num_envs;
  RLK_HOST_DEVICE void operator()(std::size_t q) const {
    const std::size_t k = q / minibatch, r = q % minibatch;
    const std::size_t s = r / per_shard_minibatch, j = r % per_shard_minibatch;
    const std::uint64_t e = local[s * shard_elements + k * per_shard_minibatch + j];
    const std::uint64_t t = e / shard_envs, i = e % shard_envs;
    permutation[q] = t * num_envs + s * shard_envs + i;
  }
};

/// permutation[i] = i.
struct iota_kernel {
  std::uint64_t* out;
  RLK_HOST_DEVICE void operator()(std::size_t i) const { out[i] = i; }
};

/// Orders (key, value) pairs by key alone.
struct key_less {
  bool operator()(const std::pair<std::uint64_t, std::uint64_t>& a,
                  const std::pair<std::uint64_t, std::uint64_t>& b) const {
    return a.first < b.first;
  }
};

/// Sorts `values` by `keys` with a stable sort (ties, which need two equal 64-bit keys, keep the
/// order of `values`), so the result is the same on every backend: CUB's radix sort on the CUDA
/// stream, its scratch (the other half of each array and CUB's temporary storage) allocated and
/// freed in stream order, so the host never waits (Thrust's sort would cudaMalloc and cudaFree,
/// and cudaFree waits for the device); std::stable_sort of (key, value) pairs on the host. Not
/// Thrust's CPP system there: its sequential sorts bind a reference through a null
/// execution-policy pointer in their temporary buffers, which UBSan reports.
template <class Backend>
void stable_sort_by_key(const Backend& backend, std::uint64_t* keys, std::uint64_t* values, std::size_t n) {
#if RLK_HAS_CUDA
  if constexpr (std::is_same_v<Backend, cuda_backend>) {
    if (n == 0) return;
    const device_guard guard(backend.device);  // CUB and the copies run on the backend's device
    using ops = memory_ops<cuda_backend>;
    const std::size_t bytes = n * sizeof(std::uint64_t);
    auto* other = static_cast<std::uint64_t*>(ops::allocate(backend, 2 * bytes));
    cub::DoubleBuffer<std::uint64_t> k(keys, other), v(values, other + n);
    std::size_t temp_bytes = 0;
    cudaError_t status = cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, k, v, n, 0, 64, backend.stream);
    void* temp = nullptr;
    if (status == cudaSuccess) {
      try {
        temp = ops::allocate(backend, temp_bytes > 0 ? temp_bytes : 1);
      } catch (...) {
        ops::deallocate(backend, other);
        throw;
      }
      status = cub::DeviceRadixSort::SortPairs(temp, temp_bytes, k, v, n, 0, 64, backend.stream);
      ops::deallocate(backend, temp);
    }
    // The sorted halves may sit in the scratch (an odd number of passes): copy them back.
    if (status == cudaSuccess && k.Current() != keys)
      status = cudaMemcpyAsync(keys, k.Current(), bytes, cudaMemcpyDeviceToDevice, backend.stream);
    if (status == cudaSuccess && v.Current() != values)
      status = cudaMemcpyAsync(values, v.Current(), bytes, cudaMemcpyDeviceToDevice, backend.stream);
    ops::deallocate(backend, other);
    if (status != cudaSuccess) throw_cuda_error(status, "cub::DeviceRadixSort::SortPairs", __FILE__, __LINE__);
  } else
#endif
  {
    (void)backend;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs(n);
    for (std::size_t i = 0; i < n; ++i) pairs[i] = {keys[i], values[i]};
    std::stable_sort(pairs.begin(), pairs.end(), key_less{});
    for (std::size_t i = 0; i < n; ++i) {
      keys[i] = pairs[i].first;
      values[i] = pairs[i].second;
    }
  }
}

/// Copies the elements permutation[first + j] of a [T * N] rollout into row j of a minibatch.
template <class Scalar, class Action>
struct minibatch_gather_kernel {
  const std::uint64_t* permutation;  // [T * N], read from `first`
  std::size_t first;
  int observation_size;
  int action_width;
  const Scalar* observations;  // [T * N, obs]
  const Action* actions;       // [T * N, w]
  const Scalar* log_probs;     // [T * N]
  const Scalar* values;
  const Scalar* advantages;
  const Scalar* returns;
  std::uint64_t* out_indices;  // [M]
  Scalar* out_observations;    // [M, obs]
  Action* out_actions;         // [M, w]
  Scalar* out_log_probs;       // [M]
  Scalar* out_values;
  Scalar* out_advantages;
  Scalar* out_returns;

  RLK_HOST_DEVICE void operator()(std::size_t j) const {
    const std::size_t src = std::size_t(permutation[first + j]);
    const std::size_t obs = std::size_t(observation_size), width = std::size_t(action_width);
    for (std::size_t k = 0; k < obs; ++k) out_observations[j * obs + k] = observations[src * obs + k];
    for (std::size_t k = 0; k < width; ++k) out_actions[j * width + k] = actions[src * width + k];
    out_indices[j] = src;
    out_log_probs[j] = log_probs[src];
    out_values[j] = values[src];
    out_advantages[j] = advantages[src];
    out_returns[j] = returns[src];
  }
};

}  // namespace detail

/// @brief One minibatch of M rollout elements (owning; arrays in the memory of `Backend`), filled
/// by rollout_buffer::gather_minibatch. Row j is rollout element indices[j] = t * N + i.
/// @tparam Scalar float or double
/// @tparam Action std::int32_t (discrete actions) or Scalar (continuous actions)
/// @tparam Backend serial_backend, openmp_backend or cuda_backend
template <class Scalar, class Action, class Backend>
struct rollout_minibatch {
  static_assert(std::is_floating_point_v<Scalar>, "rlkernels::rollout_minibatch: Scalar must be float or double");

  /// @brief Allocates a zeroed minibatch of `minibatch_size` elements.
  /// @param backend where the arrays live
  /// @param minibatch_size M (may be 0)
  /// @param observation_size scalars per observation, >= 1
  /// @param action_width actions per element (1 for discrete), >= 1
  /// @throw std::invalid_argument if observation_size or action_width < 1
  /// @throw out_of_memory naming the bytes needed if it does not fit
  rollout_minibatch(Backend backend, std::size_t minibatch_size, int observation_size, int action_width)
      : indices(checked(backend, minibatch_size, observation_size, action_width), minibatch_size),
        observations(backend, minibatch_size * std::size_t(observation_size)),
        actions(backend, minibatch_size * std::size_t(action_width)), log_probs(backend, minibatch_size),
        values(backend, minibatch_size), advantages(backend, minibatch_size), returns(backend, minibatch_size),
        observation_size_(observation_size), action_width_(action_width) {}

  /// Bytes of backend memory a minibatch of this shape allocates (saturates at SIZE_MAX).
  static std::size_t bytes_required(std::size_t minibatch_size, int observation_size, int action_width) {
    const std::size_t obs = observation_size > 0 ? std::size_t(observation_size) : 0;
    const std::size_t width = action_width > 0 ? std::size_t(action_width) : 0;
    const std::size_t per_row = sizeof(std::uint64_t) + obs * sizeof(Scalar) + width * sizeof(Action) + 4 * sizeof(Scalar);
    return minibatch_size > std::size_t(-1) / per_row ? std::size_t(-1) : minibatch_size * per_row;
  }

  /// Number of elements M.
  std::size_t size() const noexcept { return indices.size(); }
  /// Scalars per observation.
  int observation_size() const noexcept { return observation_size_; }
  /// Actions per element.
  int action_width() const noexcept { return action_width_; }

  buffer<std::uint64_t, Backend> indices;  ///< [M] rollout element t * N + i of each row
  buffer<Scalar, Backend> observations;    ///< [M, observation_size]
  buffer<Action, Backend> actions;         ///< [M, action_width]
  buffer<Scalar, Backend> log_probs;       ///< [M] log pi_old(a | s) at collection
  buffer<Scalar, Backend> values;          ///< [M] V_old(s) at collection
  buffer<Scalar, Backend> advantages;      ///< [M]
  buffer<Scalar, Backend> returns;         ///< [M] advantages + values (value targets)

private:
  static Backend checked(Backend backend, std::size_t minibatch_size, int observation_size, int action_width) {
    RLK_EXPECTS(observation_size >= 1, std::invalid_argument,
                "rlkernels::rollout_minibatch: observation_size must be >= 1, got ", observation_size);
    RLK_EXPECTS(action_width >= 1, std::invalid_argument,
                "rlkernels::rollout_minibatch: action_width must be >= 1, got ", action_width);
    detail::expect_fits(backend, bytes_required(minibatch_size, observation_size, action_width),
                        detail::concat("rlkernels::rollout_minibatch: ", minibatch_size, " elements"));
    return backend;
  }

  int observation_size_;
  int action_width_;
};

/// @brief Storage of an on-policy rollout of T steps of N envs, time-major (element [t, i] at
/// t * N + i), in the memory of `Backend`.
///
/// Arrays (T = num_steps, N = num_envs):
/// - observations [T, N, observation_size] Scalar: s_t, the observation acted on at step t
/// - actions [T, N, action_width] Action: a_t
/// - log_probs [T, N] Scalar: log pi(a_t | s_t) at collection
/// - values [T, N] Scalar: V(s_t)
/// - rewards [T, N] Scalar: r_t
/// - terminated, truncated [T, N] uint8 0/1: the flags of step t
/// - bootstrap_values [T, N] Scalar: V(final observation of step t), read where truncated
/// - last_values [N] Scalar: V(observations after step T - 1)
/// - advantages, returns [T, N] Scalar: outputs of compute_advantages()
/// - permutation [T * N] uint64: the element order of the minibatches (identity until shuffle())
///
/// Fill row t from a vec_env in backend memory: store_observations(t, env) before the step, write
/// the policy's actions/log_probs/values into the views *_at(t), step the env with actions_at(t),
/// then store_outcome(t, env) and write V(env.final_observations()) into bootstrap_values_at(t);
/// after the last step write V(env.observations()) into last_values_view().
///
/// @tparam Scalar float or double
/// @tparam Action std::int32_t (discrete actions) or Scalar (continuous actions)
/// @tparam Backend serial_backend, openmp_backend or cuda_backend
template <class Scalar, class Action, class Backend>
class rollout_buffer {
  static_assert(std::is_floating_point_v<Scalar>, "rlkernels::rollout_buffer: Scalar must be float or double");
  static_assert(std::is_same_v<Action, std::int32_t> || std::is_same_v<Action, Scalar>,
                "rlkernels::rollout_buffer: Action must be std::int32_t (discrete) or Scalar (continuous)");
  static_assert(is_backend_v<Backend>,
                "rlkernels::rollout_buffer: Backend must be serial_backend, openmp_backend or cuda_backend");

public:
  using scalar_type = Scalar;    ///< observation, reward and value type
  using action_type = Action;    ///< action type
  using backend_type = Backend;  ///< where the arrays live
  using minibatch_type = rollout_minibatch<Scalar, Action, Backend>;  ///< what gather_minibatch fills

  /// @brief Allocates a zeroed rollout of `num_steps` x `num_envs` elements (permutation: identity).
  /// @param backend where the arrays live
  /// @param num_steps T >= 1
  /// @param num_envs N >= 1
  /// @param observation_size scalars per observation, >= 1
  /// @param action_width actions per env (1 for discrete actions), >= 1
  /// @throw std::invalid_argument if a size is 0 (or negative)
  /// @throw out_of_memory naming the bytes needed, before allocating anything, if it does not fit
  rollout_buffer(Backend backend, std::size_t num_steps, std::size_t num_envs, int observation_size, int action_width)
      : backend_(checked(backend, num_steps, num_envs, observation_size, action_width)), num_steps_(num_steps),
        num_envs_(num_envs), observation_size_(observation_size), action_width_(action_width),
        observations_(backend, num_steps * num_envs * std::size_t(observation_size)),
        actions_(backend, num_steps * num_envs * std::size_t(action_width)), log_probs_(backend, num_steps * num_envs),
        values_(backend, num_steps * num_envs), rewards_(backend, num_steps * num_envs),
        terminated_(backend, num_steps * num_envs), truncated_(backend, num_steps * num_envs),
        bootstrap_values_(backend, num_steps * num_envs), last_values_(backend, num_envs),
        advantages_(backend, num_steps * num_envs), returns_(backend, num_steps * num_envs),
        permutation_(backend, num_steps * num_envs), sort_keys_(backend, num_steps * num_envs) {
    for_each_index(backend_, permutation_.size(), detail::iota_kernel{permutation_.data()});
  }

  /// @brief Bytes of backend memory a rollout of this shape allocates (saturates at SIZE_MAX);
  /// shuffle() also takes a temporary of about 16 * T * N bytes for the sort.
  static std::size_t bytes_required(std::size_t num_steps, std::size_t num_envs, int observation_size,
                                    int action_width) {
    const std::size_t obs = observation_size > 0 ? std::size_t(observation_size) : 0;
    const std::size_t width = action_width > 0 ? std::size_t(action_width) : 0;
    // observations, actions, log_probs, values, rewards, bootstrap_values, advantages, returns,
    // terminated, truncated, permutation and its sort keys
    const std::size_t per_element =
        obs * sizeof(Scalar) + width * sizeof(Action) + 6 * sizeof(Scalar) + 2 + 2 * sizeof(std::uint64_t);
    const std::size_t max = std::size_t(-1);
    if (num_envs != 0 && num_steps > max / num_envs) return max;
    const std::size_t elements = num_steps * num_envs;
    if (elements > max / per_element) return max;
    const std::size_t bytes = elements * per_element;
    return bytes > max - num_envs * sizeof(Scalar) ? max : bytes + num_envs * sizeof(Scalar);  // + last_values
  }

  /// T.
  std::size_t num_steps() const noexcept { return num_steps_; }
  /// N.
  std::size_t num_envs() const noexcept { return num_envs_; }
  /// T * N, the elements of the rollout.
  std::size_t size() const noexcept { return num_steps_ * num_envs_; }
  /// Scalars per observation.
  int observation_size() const noexcept { return observation_size_; }
  /// Actions per env.
  int action_width() const noexcept { return action_width_; }
  /// The backend the arrays live on.
  const Backend& backend() const noexcept { return backend_; }

  /// @name Row views for filling step t (writable, backend memory; std::invalid_argument if t >= num_steps())
  ///@{

  /// [N, observation_size] observations of step t.
  view<Scalar> observations_at(std::size_t t) {
    return row(observations_, t, std::size_t(observation_size_), "observations_at");
  }
  /// [N, action_width] actions of step t (pass it to vec_env::step).
  view<Action> actions_at(std::size_t t) { return row(actions_, t, std::size_t(action_width_), "actions_at"); }
  /// [N] log-probabilities of the actions of step t.
  view<Scalar> log_probs_at(std::size_t t) { return row(log_probs_, t, 1, "log_probs_at"); }
  /// [N] V(s_t).
  view<Scalar> values_at(std::size_t t) { return row(values_, t, 1, "values_at"); }
  /// [N] rewards of step t.
  view<Scalar> rewards_at(std::size_t t) { return row(rewards_, t, 1, "rewards_at"); }
  /// [N] uint8 terminated flags of step t.
  view<std::uint8_t> terminated_at(std::size_t t) { return row(terminated_, t, 1, "terminated_at"); }
  /// [N] uint8 truncated flags of step t.
  view<std::uint8_t> truncated_at(std::size_t t) { return row(truncated_, t, 1, "truncated_at"); }
  /// [N] V(final observation of step t), read where truncated.
  view<Scalar> bootstrap_values_at(std::size_t t) { return row(bootstrap_values_, t, 1, "bootstrap_values_at"); }
  ///@}
  /// [N] V(observations after the last step), writable.
  view<Scalar> last_values_view() noexcept { return last_values_.view(); }

  /// @brief Copies env.observations() [N, observation_size] into row t (call before stepping).
  /// @throw std::invalid_argument if t >= num_steps() or the env's sizes differ
  template <class VecEnv>
  void store_observations(std::size_t t, const VecEnv& env) {
    const view<const Scalar> obs = detail::const_view_of<Scalar>(env.observations());
    check_env_array(obs.size(), num_envs_ * std::size_t(observation_size_), "store_observations", "observations");
    copy(backend_, obs, observations_at(t));
  }

  /// @brief Copies env.rewards(), env.terminated() and env.truncated() [N] into row t (call after
  /// the step). Asynchronous on CUDA.
  /// @throw std::invalid_argument if t >= num_steps() or the env's sizes differ; nothing is
  ///        written then
  template <class VecEnv>
  void store_outcome(std::size_t t, const VecEnv& env) {
    const view<const Scalar> rewards = detail::const_view_of<Scalar>(env.rewards());
    const view<const std::uint8_t> terminated = detail::const_view_of<std::uint8_t>(env.terminated());
    const view<const std::uint8_t> truncated = detail::const_view_of<std::uint8_t>(env.truncated());
    check_step(t, "store_outcome");
    check_env_array(rewards.size(), num_envs_, "store_outcome", "rewards");
    check_env_array(terminated.size(), num_envs_, "store_outcome", "terminated");
    check_env_array(truncated.size(), num_envs_, "store_outcome", "truncated");
    copy(backend_, rewards, rewards_at(t));
    copy(backend_, terminated, terminated_at(t));
    copy(backend_, truncated, truncated_at(t));
  }

  /// The rollout as the estimators take it (rewards, values, bootstrap_values, last_values,
  /// terminated, truncated).
  rollout_view<Scalar> rollout() const noexcept {
    rollout_view<Scalar> r;
    r.num_steps = num_steps_;
    r.num_envs = num_envs_;
    r.rewards = rewards_.cview();
    r.values = values_.cview();
    r.bootstrap_values = bootstrap_values_.cview();
    r.last_values = last_values_.cview();
    r.terminated = terminated_.cview();
    r.truncated = truncated_.cview();
    return r;
  }

  /// @brief Fills advantages() and returns() with rlkernels::gae (see gae.hpp for the
  /// bootstrap convention).
  /// @param gamma discount in [0, 1]
  /// @param lambda GAE parameter in [0, 1]
  /// @throw std::invalid_argument if gamma or lambda is outside [0, 1]
  void compute_advantages(Scalar gamma, Scalar lambda) {
    gae(backend_, rollout(), gamma, lambda, advantages_.view(), returns_.view());
  }

  /// @brief Sets permutation() to a random permutation of [0, T * N): element i gets the key
  /// rng(seed, epoch, i).next_u64() and the indices are stably sorted by key (CUB's radix sort on
  /// the CUDA stream, no host wait; std::stable_sort on the host; either with a temporary of
  /// about 16 * T * N bytes). The permutation is a pure function of (seed, epoch, T * N), the
  /// same on every backend.
  void shuffle(std::uint64_t seed, std::uint64_t epoch) {
    const std::size_t n = size();
    for_each_index(backend_, n, detail::shuffle_keys_kernel{seed, epoch, sort_keys_.data(), permutation_.data()});
    detail::stable_sort_by_key(backend_, sort_keys_.data(), permutation_.data(), n);
  }

  /// @brief shuffle(), shard by shard, for data-parallel training: the N envs are S =
  /// shard_seeds.size() equal shards of n = N / S consecutive envs; shard s's T * n elements are
  /// shuffled as shuffle(shard_seeds[s], epoch) shuffles a rollout of n envs, and minibatch k of
  /// `minibatch_size` M elements is the k-th M / S elements of every shard, shard after shard.
  /// So a rollout of N envs shuffled with S shards gives the minibatches that S processes, each
  /// with a rollout of n envs shuffled with its shard's seed, give together (rank s holding
  /// envs s * n ..). With one shard it is shuffle(shard_seeds[0], epoch). Takes a temporary of
  /// 8 * T * N bytes more than shuffle() when S > 1.
  /// @throw std::invalid_argument if S is 0 or does not divide N, or M does not divide T * N or
  ///        is not a multiple of S
  void shuffle_sharded(const std::vector<std::uint64_t>& shard_seeds, std::uint64_t epoch, std::size_t minibatch_size) {
    constexpr const char* who = "rlkernels::rollout_buffer::shuffle_sharded: ";
    const std::size_t shards = shard_seeds.size();
    RLK_EXPECTS(shards >= 1 && num_envs_ % shards == 0, std::invalid_argument, who, shards,
                " shards do not split the ", num_envs_, " envs evenly");
    RLK_EXPECTS(minibatch_size >= 1 && size() % minibatch_size == 0 && minibatch_size % shards == 0,
                std::invalid_argument, who, "the minibatch size ", minibatch_size, " must divide T * N = ", size(),
                " and be a multiple of the ", shards, " shards");
    if (shards == 1) {
      shuffle(shard_seeds[0], epoch);
      return;
    }
    const std::size_t n = num_envs_ / shards, per_shard = num_steps_ * n;
    if (shard_scratch_.size() != size()) shard_scratch_ = buffer<std::uint64_t, Backend>(backend_, size());
    for (std::size_t s = 0; s < shards; ++s) {
      for_each_index(backend_, per_shard,
                     detail::shuffle_keys_kernel{shard_seeds[s], epoch, sort_keys_.data() + s * per_shard,
                                                 shard_scratch_.data() + s * per_shard});
      detail::stable_sort_by_key(backend_, sort_keys_.data() + s * per_shard, shard_scratch_.data() + s * per_shard,
                                 per_shard);
    }
    for_each_index(backend_, size(),
                   detail::interleave_shards_kernel{shard_scratch_.data(), permutation_.data(), minibatch_size,
                                                    minibatch_size / shards, n, per_shard, num_envs_});
  }

  /// Number of minibatches of `minibatch_size` elements per epoch (the last may be partial).
  std::size_t num_minibatches(std::size_t minibatch_size) const noexcept {
    return minibatch_size == 0 ? 0 : (size() + minibatch_size - 1) / minibatch_size;
  }

  /// @brief Copies the elements permutation[k * M .. min((k + 1) * M, T * N)) into `out`
  /// (observations, actions, log_probs, values, advantages, returns and their element indices).
  /// @param k minibatch number, < num_minibatches(minibatch_size)
  /// @param minibatch_size M >= 1
  /// @param out a minibatch of exactly the elements minibatch k has (M, or fewer for a last partial
  ///        one) and this buffer's observation_size and action_width
  /// @throw std::invalid_argument on a bad k, M or out shape; `out` is then unchanged
  void gather_minibatch(std::size_t k, std::size_t minibatch_size, minibatch_type& out) const {
    constexpr const char* who = "rlkernels::rollout_buffer::gather_minibatch: ";
    RLK_EXPECTS(minibatch_size >= 1, std::invalid_argument, who, "minibatch_size must be >= 1, got ", minibatch_size);
    const std::size_t count = num_minibatches(minibatch_size);
    RLK_EXPECTS(k < count, std::invalid_argument, who, "minibatch ", k, " is out of range: ", size(),
                " elements make ", count, " minibatches of ", minibatch_size);
    const std::size_t first = k * minibatch_size;
    const std::size_t m = size() - first < minibatch_size ? size() - first : minibatch_size;
    RLK_EXPECTS(out.size() == m, std::invalid_argument, who, "out holds ", out.size(), " elements, minibatch ", k,
                " has ", m);
    RLK_EXPECTS(out.observation_size() == observation_size_ && out.action_width() == action_width_,
                std::invalid_argument, who, "out has observation_size ", out.observation_size(), " and action_width ",
                out.action_width(), ", the rollout ", observation_size_, " and ", action_width_);
    for_each_index(backend_, m,
                   detail::minibatch_gather_kernel<Scalar, Action>{
                       permutation_.data(), first, observation_size_, action_width_, observations_.data(),
                       actions_.data(), log_probs_.data(), values_.data(), advantages_.data(), returns_.data(),
                       out.indices.data(), out.observations.data(), out.actions.data(), out.log_probs.data(),
                       out.values.data(), out.advantages.data(), out.returns.data()});
  }

  /// @name The arrays (read-only; shapes in the class comment)
  ///@{

  /// [T, N, observation_size] observations acted on.
  const buffer<Scalar, Backend>& observations() const noexcept { return observations_; }
  /// [T, N, action_width] actions taken.
  const buffer<Action, Backend>& actions() const noexcept { return actions_; }
  /// [T, N] log-probabilities of the actions under the behaviour policy.
  const buffer<Scalar, Backend>& log_probs() const noexcept { return log_probs_; }
  /// [T, N] V(s_t).
  const buffer<Scalar, Backend>& values() const noexcept { return values_; }
  /// [T, N] rewards.
  const buffer<Scalar, Backend>& rewards() const noexcept { return rewards_; }
  /// [T, N] uint8 terminated flags.
  const buffer<std::uint8_t, Backend>& terminated() const noexcept { return terminated_; }
  /// [T, N] uint8 truncated flags.
  const buffer<std::uint8_t, Backend>& truncated() const noexcept { return truncated_; }
  /// [T, N] V(final observation), read where truncated.
  const buffer<Scalar, Backend>& bootstrap_values() const noexcept { return bootstrap_values_; }
  /// [N] V(observations after the last step).
  const buffer<Scalar, Backend>& last_values() const noexcept { return last_values_; }
  /// [T, N] advantages (after compute_advantages()).
  const buffer<Scalar, Backend>& advantages() const noexcept { return advantages_; }
  /// [T, N] returns = advantages + values (after compute_advantages()).
  const buffer<Scalar, Backend>& returns() const noexcept { return returns_; }
  ///@}
  /// [T * N] uint64: the element order of the minibatches (identity until the first shuffle()).
  const buffer<std::uint64_t, Backend>& permutation() const noexcept { return permutation_; }

private:
  static Backend checked(Backend backend, std::size_t num_steps, std::size_t num_envs, int observation_size,
                         int action_width) {
    detail::check_storage_shape(backend, "rlkernels::rollout_buffer", "num_steps", num_steps, num_envs,
                                observation_size, action_width,
                                bytes_required(num_steps, num_envs, observation_size, action_width));
    return backend;
  }

  void check_step(std::size_t t, const char* fn) const {
    RLK_EXPECTS(t < num_steps_, std::invalid_argument, "rlkernels::rollout_buffer::", fn, ": step ", t,
                " is out of range [0, ", num_steps_, ")");
  }

  void check_env_array(std::size_t size, std::size_t want, const char* fn, const char* name) const {
    RLK_EXPECTS(size == want, std::invalid_argument, "rlkernels::rollout_buffer::", fn, ": the env's ", name, " has ",
                size, " elements, expected ", want, " (num_envs ", num_envs_, ")");
  }

  template <class T>
  view<T> row(buffer<T, Backend>& b, std::size_t t, std::size_t width, const char* fn) {
    check_step(t, fn);
    const std::size_t len = num_envs_ * width;
    return b.view().subview(t * len, len);
  }

  Backend backend_;
  std::size_t num_steps_;
  std::size_t num_envs_;
  int observation_size_;
  int action_width_;
  buffer<Scalar, Backend> observations_;
  buffer<Action, Backend> actions_;
  buffer<Scalar, Backend> log_probs_;
  buffer<Scalar, Backend> values_;
  buffer<Scalar, Backend> rewards_;
  buffer<std::uint8_t, Backend> terminated_;
  buffer<std::uint8_t, Backend> truncated_;
  buffer<Scalar, Backend> bootstrap_values_;
  buffer<Scalar, Backend> last_values_;
  buffer<Scalar, Backend> advantages_;
  buffer<Scalar, Backend> returns_;
  buffer<std::uint64_t, Backend> permutation_;
  buffer<std::uint64_t, Backend> sort_keys_;
  buffer<std::uint64_t, Backend> shard_scratch_{backend_, 0};  // shuffle_sharded's shard permutations
};

}  // namespace rlkernels
