// rlkernels/buffers/prioritized_replay.hpp
// prioritized_replay_buffer: proportional prioritized experience replay (Schaul et al. 2016) on a
// replay_buffer and a sum_tree: stratified sampling keyed by (seed, draw, k), importance weights
// normalised by the batch maximum, and batched priority updates with a deterministic duplicate rule.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/random.hpp"
#include "../core/reduce.hpp"
#include "replay_buffer.hpp"
#include "sum_tree.hpp"

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace rlkernels {

/// @brief Parameters of a prioritized replay buffer.
struct prioritized_replay_params {
  /// Priority exponent: leaves hold priority^alpha (0: uniform sampling, 1: fully proportional).
  /// Must be finite and >= 0.
  double alpha = 0.6;
  /// Importance-sampling exponent used by sample() without an explicit beta, in [0, 1]
  /// (0: no correction, 1: full correction). Usually annealed to 1 with set_beta().
  double beta = 0.4;
  /// Added to |TD error| so that no written transition has priority 0. Must be finite and > 0.
  double epsilon = 1e-6;
};

namespace detail {

/// The leaf value of a priority: priority^alpha, kept in [DBL_MIN, max_value] so that a written
/// slot can always be sampled (an underflow to 0 would hide it) and the tree total stays finite.
RLK_INLINE double priority_leaf(double priority, double alpha, double max_value) {
  const double p = std::pow(priority, alpha);
  return p < DBL_MIN ? DBL_MIN : (p > max_value ? max_value : p);
}

/// Stratified proportional sampling: stratum k of B holds the mass [k, k + 1) * total / B;
/// u_k = (k + U_k) * total / B with U_k = rng(seed, draw, k).uniform<double>().
struct per_sample_kernel {
  const double* nodes;
  std::size_t leaf_count;
  std::uint64_t seed;
  std::uint64_t draw;
  std::size_t batch_size;
  std::uint64_t* indices;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    rng gen(seed, draw, k);
    const double u = (double(k) + gen.uniform<double>()) * nodes[1] / double(batch_size);
    indices[k] = sum_tree_descend(nodes, leaf_count, u);
  }
};

/// The priority (leaf value) of sample k.
struct per_sampled_leaf {
  const double* leaves;
  const std::uint64_t* indices;
  RLK_HOST_DEVICE double operator()(std::size_t k) const { return leaves[indices[k]]; }
};

/// The smaller of two leaves (an exact, order-free reduction).
struct per_min_leaf {
  RLK_HOST_DEVICE double operator()(double a, double b) const { return a < b ? a : b; }
};

/// weights[k] = (p_min / p_k)^beta, which equals (size P(k))^-beta / max_j (size P(j))^-beta;
/// p_min is read from backend memory (the batch minimum a reduction left there).
template <class Scalar>
struct per_weight_kernel {
  per_sampled_leaf leaf;
  const double* p_min;
  double beta;
  Scalar* weights;
  RLK_HOST_DEVICE void operator()(std::size_t k) const { weights[k] = Scalar(std::pow(*p_min / leaf(k), beta)); }
};

/// The leaf of a new transition, priority_leaf(max priority), evaluated where the leaves are
/// written (the max priority stays in backend memory).
struct per_new_leaf {
  const double* max_priority;
  double alpha;
  double max_value;
  RLK_HOST_DEVICE double operator()() const { return priority_leaf(*max_priority, alpha, max_value); }
};

/// values[k] = priority_leaf(|td_errors[k]| + epsilon).
template <class Scalar>
struct per_priority_kernel {
  const Scalar* td_errors;
  double epsilon;
  double alpha;
  double max_value;
  double* values;
  RLK_HOST_DEVICE void operator()(std::size_t k) const {
    values[k] = priority_leaf(std::fabs(double(td_errors[k])) + epsilon, alpha, max_value);
  }
};

/// Result of checking an update batch: the first rejected position (n if none) and the largest
/// |TD error| among the accepted ones.
struct per_update_check {
  std::size_t first_bad;
  double max_abs;
};

template <class Scalar>
struct per_check_update {
  const std::uint64_t* indices;
  const Scalar* td_errors;
  std::uint64_t size;
  std::size_t none;
  RLK_HOST_DEVICE per_update_check operator()(std::size_t k) const {
    const double td = std::fabs(double(td_errors[k]));
    const bool ok = indices[k] < size && td <= DBL_MAX;  // false for NaN and infinities
    return per_update_check{ok ? none : k, ok ? td : 0.0};
  }
};

struct per_combine_check {
  RLK_HOST_DEVICE per_update_check operator()(const per_update_check& a, const per_update_check& b) const {
    return per_update_check{a.first_bad < b.first_bad ? a.first_bad : b.first_bad,
                            a.max_abs > b.max_abs ? a.max_abs : b.max_abs};
  }
};

/// The first rejected update_priorities batch since the last check_priority_updates(), kept in
/// backend memory. kind: 0 none, 1 an index that was not a stored slot, 2 a TD error that was
/// NaN or infinite.
struct per_update_error {
  std::uint64_t kind;
  std::uint64_t position;  // in the batch
  std::uint64_t index;     // indices[position]
  std::uint64_t size;      // size() at the call
  double td_error;         // td_errors[position]
};

/// After the check reduction of an update batch (one thread): an accepted batch raises the max
/// priority to max |td| + epsilon and clears the skip flag; a rejected one sets the flag (the
/// tree update that follows does nothing) and is recorded unless an earlier error still is.
template <class Scalar>
struct per_commit_update {
  const per_update_check* check;
  const std::uint64_t* indices;
  const Scalar* td_errors;
  std::size_t n;
  std::uint64_t size;
  double epsilon;
  double* max_priority;
  std::uint32_t* skip;
  per_update_error* error;
  RLK_HOST_DEVICE void operator()(std::size_t) const {
    const per_update_check c = *check;
    if (c.first_bad == n) {
      const double largest = c.max_abs + epsilon;
      if (largest > *max_priority) *max_priority = largest;
      *skip = 0;
      return;
    }
    *skip = 1;
    if (error->kind != 0) return;
    const std::uint64_t index = indices[c.first_bad];
    error->kind = index < size ? 2 : 1;
    error->position = c.first_bad;
    error->index = index;
    error->size = size;
    error->td_error = double(td_errors[c.first_bad]);
  }
};

}  // namespace detail

/// @brief Proportional prioritized experience replay (Schaul et al., "Prioritized Experience
/// Replay", ICLR 2016) over a replay_buffer ring, in the memory of `Backend`.
///
/// Every stored slot i (row * N + env, as in replay_buffer) has a priority p_i = |delta_i| + epsilon
/// (delta_i: the TD error last reported by update_priorities) and the sum tree holds
/// p_i^alpha at leaf i. A new transition gets the largest priority seen so far (1 before any
/// update). Sampling picks slot i with probability P(i) = p_i^alpha / sum_j p_j^alpha, stratified
/// (B strata of equal mass), and the importance weights are
///
///     w_i = (size() * P(i))^-beta / max_{j in batch} (size() * P(j))^-beta = (p_min / p_i^alpha)^beta
///
/// with p_min the smallest leaf in the batch: normalised by the maximum *over the batch*, as
/// Schaul et al. and most implementations (Dopamine, the OpenAI baselines, CleanRL-style code) do,
/// so the largest weight of every batch is exactly 1.
///
/// Unwritten slots and the tree's padding have leaf 0 and are never sampled. Duplicate indices in
/// one update_priorities batch: the last occurrence wins (sum_tree's rule) on every backend.
/// Sampling is a pure function of (seed, draw, k) and the priorities: the serial and OpenMP
/// backends give the same bits; CUDA draws the same uniforms (its pow may differ from the
/// host's in the last bit of a leaf).
///
/// A slot overwritten between a sample and its update_priorities receives the priority computed
/// for the old transition, as in the usual implementations.
///
/// Streams and host waits: all work is queued on the stream of the backend the buffer was made
/// with, and the largest priority lives in backend memory, so add(), sample() and
/// update_priorities_deferred() never wait for the host (on CUDA: no round trip per step or
/// update). update_priorities() and check_priority_updates() read one validation record (one
/// host wait); max_priority() reads the value when an update may have changed it. Results left
/// in backend memory (the batch, the tree, max_priority_view()) are valid once the stream has
/// reached them. Not for concurrent calls from several host threads on one buffer.
///
/// @tparam Scalar float or double
/// @tparam Action std::int32_t (discrete actions) or Scalar (continuous actions)
/// @tparam Backend serial_backend, openmp_backend or cuda_backend
template <class Scalar, class Action, class Backend>
class prioritized_replay_buffer {
  static_assert(std::is_floating_point_v<Scalar>, "rlkernels::prioritized_replay_buffer: Scalar must be float or double");

public:
  using scalar_type = Scalar;                                 ///< observation and reward type
  using action_type = Action;                                 ///< action type
  using backend_type = Backend;                               ///< where the data lives
  using storage_type = replay_buffer<Scalar, Action, Backend>;  ///< the transition ring
  using batch_type = replay_batch<Scalar, Action, Backend>;    ///< the batch sample() fills

  /// @brief An empty buffer of `capacity_steps` rows of `num_envs` transitions.
  /// @param backend where the ring and the tree live
  /// @param capacity_steps C, rows kept (>= 1)
  /// @param num_envs N, transitions per row (>= 1)
  /// @param observation_size scalars per observation (>= 1)
  /// @param action_width actions per transition (1 for discrete actions), >= 1
  /// @param params alpha, beta and epsilon (see prioritized_replay_params)
  /// @throw std::invalid_argument if a size is 0 or a parameter is out of range
  /// @throw out_of_memory naming the bytes needed, before allocating anything, if the ring and the
  ///        tree do not fit
  prioritized_replay_buffer(Backend backend, std::size_t capacity_steps, std::size_t num_envs, int observation_size,
                            int action_width, prioritized_replay_params params = {})
      : params_(checked(backend, capacity_steps, num_envs, observation_size, action_width, params)),
        storage_(backend, capacity_steps, num_envs, observation_size, action_width),
        tree_(backend, capacity_steps * num_envs), scratch_(backend, 0), max_priority_dev_(backend, 1),
        min_leaf_(backend, 1), check_(backend, 1), skip_(backend, 1), error_(backend, 1) {
    for_each_index(backend, 1, detail::fill_value_kernel<double>{max_priority_dev_.data(), max_priority_});
  }

  /// Bytes of backend memory the ring and the tree allocate (saturates at SIZE_MAX; the scratch
  /// of update_priorities adds 8 bytes per element of the largest batch, CUDA 32 more and the
  /// radix sort's temporary storage).
  static std::size_t bytes_required(std::size_t capacity_steps, std::size_t num_envs, int observation_size,
                                    int action_width) {
    const std::size_t ring = storage_type::bytes_required(capacity_steps, num_envs, observation_size, action_width);
    const std::size_t max = std::size_t(-1);
    if (num_envs != 0 && capacity_steps > max / num_envs) return max;
    const std::size_t slots = capacity_steps * num_envs;
    if (slots == 0 || slots > (std::size_t(1) << 58)) return ring;  // the constructor rejects these
    const std::size_t tree = sum_tree<Backend>::bytes_required(slots);
    return ring > max - tree ? max : ring + tree;
  }

  /// @brief Appends one vec_env step of N transitions (see replay_buffer::add) and gives them the
  /// largest priority seen so far: their leaves become max_priority()^alpha, computed on the
  /// backend from the value there (no host wait).
  /// @throw std::invalid_argument as replay_buffer::add; nothing changes then
  void add(view<const Scalar> observations, view<const Action> actions, view<const Scalar> rewards,
           view<const Scalar> next_observations, view<const std::uint8_t> terminated,
           view<const std::uint8_t> truncated) {
    const std::size_t row = storage_.head_row();
    storage_.add(observations, actions, rewards, next_observations, terminated, truncated);
    set_new_row(row);
  }

  /// @brief Appends the step a vec_env just took (see replay_buffer::add(observations, actions, env))
  /// with the largest priority seen so far.
  template <class VecEnv>
  void add(view<const Scalar> observations_before_step, view<const Action> actions, const VecEnv& env) {
    const std::size_t row = storage_.head_row();
    storage_.add(observations_before_step, actions, env);
    set_new_row(row);
  }

  /// @brief Draws batch.size() slots with probability P(i) (stratified; see sample_indices()) into
  /// batch.indices, gathers their n-step transitions (replay_buffer::gather_n_step; n = 1 gives
  /// plain transitions with discounts = gamma) and writes the importance weights (see the class
  /// comment) into batch.weights. The batch's smallest priority is reduced into backend memory
  /// and read there by the weight kernel: no host wait.
  /// @param seed key of the sampler
  /// @param draw counter of the batch: use a new one (e.g. the training step) for every batch
  /// @param batch output of B samples with this buffer's observation_size and action_width
  /// @param beta importance-sampling exponent in [0, 1]
  /// @param n the most steps summed per sample, >= 1
  /// @param gamma discount in [0, 1]
  /// @throw std::invalid_argument if the buffer is empty, the batch's shape differs, or beta, n or
  ///        gamma is out of range (NaN included); the batch is then unchanged
  void sample(std::uint64_t seed, std::uint64_t draw, batch_type& batch, Scalar beta, int n = 1,
              Scalar gamma = Scalar(0.99)) const {
    constexpr const char* who = "rlkernels::prioritized_replay_buffer::sample";
    RLK_EXPECTS(beta >= Scalar(0) && beta <= Scalar(1), std::invalid_argument, who, ": beta must be in [0, 1], got ",
                beta);
    RLK_EXPECTS(n >= 1, std::invalid_argument, who, ": n must be >= 1, got ", n);
    RLK_EXPECTS(gamma >= Scalar(0) && gamma <= Scalar(1), std::invalid_argument, who, ": gamma must be in [0, 1], got ",
                gamma);
    RLK_EXPECTS(batch.observation_size() == storage_.observation_size() &&
                    batch.action_width() == storage_.action_width(),
                std::invalid_argument, who, ": the batch has observation_size ", batch.observation_size(),
                " and action_width ", batch.action_width(), ", the buffer ", storage_.observation_size(), " and ",
                storage_.action_width());
    RLK_EXPECTS(size() > 0, std::invalid_argument, who, ": the buffer is empty");
    const std::size_t b = batch.size();
    if (b == 0) return;
    sample_indices_unchecked(seed, draw, batch.indices.view());
    storage_.gather_n_step_unchecked(batch.indices.cview(), n, gamma, batch);
    const detail::per_sampled_leaf leaf{tree_.leaves().data(), batch.indices.data()};
    double host_min = DBL_MAX;  // host backends: a local, so that const calls stay independent
    double* p_min = is_host_backend_v<Backend> ? &host_min : min_leaf_.data();
    detail::deterministic_sum_into(backend(), b, leaf, DBL_MAX, detail::per_min_leaf{}, p_min);
    for_each_index(backend(), b, detail::per_weight_kernel<Scalar>{leaf, p_min, double(beta), batch.weights.data()});
  }

  /// sample() of 1-step transitions (gamma 0.99) with the buffer's beta (params().beta, see
  /// set_beta()).
  void sample(std::uint64_t seed, std::uint64_t draw, batch_type& batch) const {
    sample(seed, draw, batch, Scalar(params_.beta));
  }

  /// @brief Draws indices.size() slots, slot i with probability P(i): with B = indices.size() and
  /// T the tree total, indices[k] is the leaf whose cumulative range holds
  /// u_k = (k + U_k) * T / B, U_k = rng(seed, draw, k).uniform<double>() (stratum k of B equal
  /// masses). Never returns an unwritten slot. Same indices on every backend and thread count.
  /// @throw std::invalid_argument if the buffer is empty or indices is a null view (B > 0)
  void sample_indices(std::uint64_t seed, std::uint64_t draw, view<std::uint64_t> indices) const {
    RLK_EXPECTS(size() > 0, std::invalid_argument, "rlkernels::prioritized_replay_buffer::sample_indices: the buffer is empty");
    RLK_EXPECTS(indices.data() != nullptr || indices.empty(), std::invalid_argument,
                "rlkernels::prioritized_replay_buffer::sample_indices: indices is a null view");
    sample_indices_unchecked(seed, draw, indices);
  }

  /// @brief Sets the priority of slot indices[k] to |td_errors[k]| + epsilon (its leaf to that
  /// ^alpha) and raises max_priority() to the largest of them. Where a slot occurs several times,
  /// the last occurrence wins. update_priorities_deferred() then check_priority_updates(): one
  /// host wait (the validation record), on every backend.
  /// @param indices [B] slots in [0, size()), in backend memory (usually batch.indices)
  /// @param td_errors [B] TD errors, in backend memory; finite
  /// @throw std::invalid_argument if the sizes differ, a view is null, an index is >= size() or a
  ///        TD error is NaN or infinite (naming the first offender); nothing changes then. It also
  ///        reports an error that an earlier update_priorities_deferred() recorded and no check
  ///        has reported yet (this batch, if valid, is applied then).
  void update_priorities(view<const std::uint64_t> indices, view<const Scalar> td_errors) {
    update_priorities_deferred(indices, td_errors);
    check_priority_updates();
  }

  /// @brief update_priorities() with the validation on the backend and its result kept there: no
  /// host wait. The batch is checked by a reduction queued on the stream; a valid batch is
  /// applied, a rejected one (an index >= size(), a NaN or infinite TD error) changes nothing and
  /// is recorded in backend memory (the first such batch since the last check). Call
  /// check_priority_updates() where the error should surface (e.g. once per training iteration):
  /// it throws the same std::invalid_argument that update_priorities() would have.
  /// @throw std::invalid_argument at once if the sizes differ or a view is null (host-side checks)
  void update_priorities_deferred(view<const std::uint64_t> indices, view<const Scalar> td_errors) {
    constexpr const char* who = "rlkernels::prioritized_replay_buffer::update_priorities";
    const std::size_t n = indices.size();
    RLK_EXPECTS(td_errors.size() == n, std::invalid_argument, who, ": td_errors has ", td_errors.size(),
                " elements, indices ", n);
    if (n == 0) return;
    RLK_EXPECTS(indices.data() != nullptr && td_errors.data() != nullptr, std::invalid_argument, who,
                ": null view");
    if (scratch_.size() < n) scratch_ = buffer<double, Backend>(backend(), n);
    apply_loaded_max_priority();
    const detail::per_check_update<Scalar> map{indices.data(), td_errors.data(), std::uint64_t(size()), n};
    detail::deterministic_sum_into(backend(), n, map, detail::per_update_check{n, 0.0}, detail::per_combine_check{},
                                   check_.data());
    for_each_index(backend(), 1,
                   detail::per_commit_update<Scalar>{check_.data(), indices.data(), td_errors.data(), n,
                                                     std::uint64_t(size()), params_.epsilon,
                                                     max_priority_dev_.data(), skip_.data(), error_.data()});
    for_each_index(backend(), n,
                   detail::per_priority_kernel<Scalar>{td_errors.data(), params_.epsilon, params_.alpha,
                                                       tree_.max_value(), scratch_.data()});
    tree_.set_unchecked(indices, scratch_.cview().subview(0, n), skip_.data());
    backend_ahead_ = true;
  }

  /// @brief Reports the first batch that update_priorities_deferred() rejected since the last
  /// check (one host read of the record in backend memory, which waits for the stream on CUDA),
  /// and clears it. Priorities are unaffected by a rejected batch.
  /// @throw std::invalid_argument naming the batch position and the offending index or TD error,
  ///        as update_priorities() does
  void check_priority_updates() {
    constexpr const char* who = "rlkernels::prioritized_replay_buffer::update_priorities";
    detail::per_update_error e{};
    detail::memory_ops<Backend>::to_host(backend(), &e, error_.data(), sizeof(e));
    if (e.kind == 0) return;
    error_.zero();
    if (e.kind == 1) {
      throw std::invalid_argument(detail::concat(who, ": indices[", e.position, "] = ", e.index,
                                                 " is not a stored slot (size ", e.size, ")"));
    }
    throw std::invalid_argument(detail::concat(who, ": td_errors[", e.position, "] = ", Scalar(e.td_error),
                                               " is not finite"));
  }

  /// @brief Sets the beta that sample() uses when none is given (for annealing).
  /// @throw std::invalid_argument if beta is outside [0, 1] or NaN
  void set_beta(double beta) {
    RLK_EXPECTS(beta >= 0.0 && beta <= 1.0, std::invalid_argument,
                "rlkernels::prioritized_replay_buffer::set_beta: beta must be in [0, 1], got ", beta);
    params_.beta = beta;
  }

  /// The parameters (alpha, the default beta, epsilon).
  const prioritized_replay_params& params() const noexcept { return params_; }
  /// @brief The largest priority |td| + epsilon seen so far (1 before any update): new
  /// transitions get it. Reads it from backend memory (one host wait) when an update may have
  /// changed it since the last read; max_priority_view() is the form without a wait.
  double max_priority() const {
    if (max_priority_ == max_priority_seen_ && backend_ahead_) {
      detail::memory_ops<Backend>::to_host(backend(), &max_priority_, max_priority_dev_.data(), sizeof(double));
      max_priority_seen_ = max_priority_;
      backend_ahead_ = false;
    }
    return max_priority_;
  }
  /// The largest priority in backend memory (one double), valid once the stream has reached the
  /// work queued before: the device form of max_priority().
  view<const double> max_priority_view() const noexcept { return max_priority_dev_.cview(); }
  /// The transition ring (read-only: add through this class so that priorities follow).
  const storage_type& storage() const noexcept { return storage_; }
  /// The sum tree of priority^alpha, one leaf per slot.
  const sum_tree<Backend>& tree() const noexcept { return tree_; }
  /// Transitions stored (see replay_buffer::size()).
  std::size_t size() const noexcept { return storage_.size(); }
  /// Transitions the ring holds when full.
  std::size_t capacity() const noexcept { return storage_.capacity(); }
  /// The backend the buffer lives on.
  const Backend& backend() const noexcept { return storage_.backend(); }

  /// @brief Binds the buffer to a checkpoint (rlkernels::checkpoint or anything with its bind /
  /// bind_value / bind_constant): the ring under `prefix` + "storage/" (replay_buffer's names),
  /// the tree under `prefix` + "tree/", and the values `prefix` + "max_priority" (checked finite
  /// and > 0) and "beta" (set_beta() changes it; checked in [0, 1]). alpha and epsilon come from
  /// the constructor. The max priority is a host value bound as it is at this call (read from
  /// backend memory if an update changed it: one host wait) and copied to backend memory by the
  /// next add or update after a load, so bind afresh right before each save or load (as the
  /// trainers do).
  template <class Checkpoint>
  void bind_checkpoint(Checkpoint& c, const std::string& prefix) {
    apply_loaded_max_priority();
    (void)max_priority();  // the host value is current now
    storage_.bind_checkpoint(c, prefix + "storage/");
    tree_.bind_checkpoint(c, prefix + "tree/");
    c.bind_value(prefix + "max_priority", max_priority_, [](const double& p) {
      return p > 0.0 && p <= DBL_MAX ? std::string() : "max priority " + std::to_string(p) + " is not finite and > 0";
    });
    c.bind_value(prefix + "beta", params_.beta, [](const double& b) {
      return b >= 0.0 && b <= 1.0 ? std::string() : "beta " + std::to_string(b) + " is not in [0, 1]";
    });
  }

private:
  static prioritized_replay_params checked(const Backend& backend, std::size_t capacity_steps, std::size_t num_envs,
                                           int observation_size, int action_width, prioritized_replay_params p) {
    constexpr const char* who = "rlkernels::prioritized_replay_buffer: ";
    RLK_EXPECTS(p.alpha >= 0.0 && p.alpha <= DBL_MAX, std::invalid_argument, who,
                "alpha must be finite and >= 0, got ", p.alpha);
    RLK_EXPECTS(p.beta >= 0.0 && p.beta <= 1.0, std::invalid_argument, who, "beta must be in [0, 1], got ", p.beta);
    RLK_EXPECTS(p.epsilon > 0.0 && p.epsilon <= DBL_MAX, std::invalid_argument, who,
                "epsilon must be finite and > 0, got ", p.epsilon);
    RLK_EXPECTS(capacity_steps >= 1 && num_envs >= 1, std::invalid_argument, who,
                "capacity_steps and num_envs must be >= 1, got ", capacity_steps, " and ", num_envs);
    RLK_EXPECTS(capacity_steps <= (std::size_t(1) << 58) / num_envs, std::invalid_argument, who, capacity_steps,
                " steps x ", num_envs, " envs exceed 2^58 slots");
    RLK_EXPECTS(observation_size >= 1 && action_width >= 1, std::invalid_argument, who,
                "observation_size and action_width must be >= 1, got ", observation_size, " and ", action_width);
    detail::expect_fits(backend, bytes_required(capacity_steps, num_envs, observation_size, action_width),
                        detail::concat("rlkernels::prioritized_replay_buffer: ", capacity_steps, " steps x ", num_envs,
                                       " envs (observation_size ", observation_size, ", action_width ",
                                       action_width, ")"));
    return p;
  }

  void set_new_row(std::size_t row) {
    const std::size_t n = storage_.num_envs();
    apply_loaded_max_priority();
    tree_.fill_computed(row * n, n, detail::per_new_leaf{max_priority_dev_.data(), params_.alpha, tree_.max_value()});
  }

  /// Copies the host max priority to backend memory (one counted write).
  void upload_max_priority() {
    detail::memory_ops<Backend>::from_host(backend(), max_priority_dev_.data(), &max_priority_, sizeof(double));
    max_priority_seen_ = max_priority_;
    backend_ahead_ = false;
  }

  /// A checkpoint load writes the host max priority (bound by bind_checkpoint); the loaded value
  /// wins over the one in backend memory. Free when nothing was loaded.
  void apply_loaded_max_priority() {
    if (max_priority_ != max_priority_seen_) upload_max_priority();
  }

  void sample_indices_unchecked(std::uint64_t seed, std::uint64_t draw, view<std::uint64_t> indices) const {
    for_each_index(backend(), indices.size(),
                   detail::per_sample_kernel{tree_.nodes().data(), tree_.leaf_count(), seed, draw, indices.size(),
                                             indices.data()});
  }

  prioritized_replay_params params_;
  storage_type storage_;
  sum_tree<Backend> tree_;
  buffer<double, Backend> scratch_;  // [largest update batch] leaf values of update_priorities
  // Backend memory: the largest priority and the scratch of sample and update_priorities.
  buffer<double, Backend> max_priority_dev_;                // [1] what new transitions get
  mutable buffer<double, Backend> min_leaf_;                // [1] the batch minimum of sample (CUDA)
  buffer<detail::per_update_check, Backend> check_;         // [1] the check reduction of an update
  buffer<std::uint32_t, Backend> skip_;                     // [1] 1: the current update was rejected
  buffer<detail::per_update_error, Backend> error_;         // [1] the first rejected update since a check
  // The host copy of the largest priority (bound to checkpoints). max_priority_seen_ is the value
  // it had when the host and the backend last agreed: a difference means a checkpoint load wrote
  // it; backend_ahead_ means an update may have raised the backend's value since.
  mutable double max_priority_ = 1.0;
  mutable double max_priority_seen_ = 1.0;
  mutable bool backend_ahead_ = false;
};

}  // namespace rlkernels
