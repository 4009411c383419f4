// rlkernels/envs/vec_env_batch.hpp
// The vec_env<Env, Backend> class: N copies of one environment stepped as a batch on a backend,
// with automatic reset in the same step and Gymnasium's episode-end contract (separate terminated
// and truncated flags, the final observation of every transition kept before the reset). Its
// kernels are in vec_env_kernels.hpp; vec_env.hpp includes both.
#pragma once

#include "../core/backend.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/host_sync.hpp"
#include "../core/memory.hpp"
#include "../core/random.hpp"
#include "../core/reduce.hpp"
#include "env.hpp"
#include "vec_env_kernels.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace rlkernels {
/// @brief N environments of type `Env` stepped together on `Backend`.
///
/// After construction (and after each `step`) the outputs are, for env i:
/// - `observations()` [N, observation_size]: the observation to act on next. If the last step
///   ended env i's episode, this is already the first observation of the new episode.
/// - `final_observations()` [N, observation_size]: the observation the last step produced
///   *before* any reset, i.e. the true next observation s' of the transition (for every env; where
///   the episode did not end it equals `observations()`). Use it to bootstrap on truncation and as
///   next_obs in replay buffers.
/// - `rewards()` [N]: reward of the last step.
/// - `terminated()` [N] (uint8 0/1): the episode reached a terminal state; do not bootstrap.
/// - `truncated()` [N] (uint8 0/1): the time limit `Params::max_episode_steps` was reached, or the
///   env could not take the step (step_result::truncated; its final observation is then the state
///   it kept, and terminated is 0); the episode was cut, so bootstrap from V(final_observation).
///   Both flags may be set at once (a terminal state at the time limit); then termination wins
///   (no bootstrap).
///
/// Randomness: env i draws from `rng(seed, first_env_index + i)` with its own block counter. On the
/// serial and OpenMP backends a run is therefore bit-identical for every thread count and batch
/// size (env i does the same whether the batch holds 10 or 10^7 envs). CUDA draws the same random
/// bits; its math library (sin, cos, log) may differ from the host's in the last bit, so CUDA
/// trajectories agree with the host within rounding per step (tests use 1e-5 relative).
///
/// Arrays live in the backend's memory (device memory for CUDA); views are what kernels take and
/// `to_host()` on the buffers copies them out. Steps on CUDA are asynchronous on the backend's
/// stream except for the action check of `step`, which waits for its result; `step_deferred`
/// keeps that result on the device until `check_deferred_actions()` reads it.
///
/// @tparam UserEnv an environment (see check_env)
/// @tparam Backend serial_backend, openmp_backend or cuda_backend
template <class UserEnv, class Backend>
class vec_env {
  static_assert(check_env<UserEnv>(), "rlkernels::vec_env<Env, Backend>: Env is not a complete environment (see above)");
  static_assert(is_backend_v<Backend>, "rlkernels::vec_env<Env, Backend>: Backend must be serial_backend, openmp_backend or cuda_backend");
  // An invalid env is replaced by a stand-in below, so check_env's message is the only error.
  using Env = detail::env_or_placeholder_t<UserEnv>;

public:
  using env_type = UserEnv;                        ///< the environment
  using backend_type = Backend;                    ///< where the batch runs
  using scalar_type = typename Env::scalar_type;   ///< observation and reward type
  using state_type = typename Env::State;          ///< one env's state
  using params_type = typename Env::Params;        ///< parameters shared by all envs
  /// std::int32_t for discrete envs, scalar_type for continuous ones.
  using action_type = typename detail::action_traits<Env>::type;
  /// Scalars per observation (the row length of observations() and final_observations()).
  static constexpr int observation_size = Env::observation_size;
  /// Actions per env in the actions array: 1 for discrete envs, Env::action_size otherwise.
  static constexpr int action_width = detail::action_traits<Env>::width;

  /// @brief Creates `num_envs` environments and resets them all.
  /// @param backend where to run (serial, openmp, cuda_backend{stream})
  /// @param num_envs number of environments, >= 1
  /// @param seed key of every env's random stream
  /// @param params env parameters shared by all envs (defaults: the reference env)
  /// @param first_env_index index of this batch's first env in a larger population: env i draws
  ///        from random stream first_env_index + i. A population split over several vec_envs
  ///        (say, one per device) with consecutive offsets reproduces one big batch exactly.
  /// @throw std::invalid_argument if num_envs is 0, params.max_episode_steps < 0, or Env::validate(params)
  ///        (when the env has one) rejects the parameters
  /// @throw out_of_memory naming the bytes needed if the buffers do not fit
  vec_env(Backend backend, std::size_t num_envs, std::uint64_t seed, params_type params = {},
          std::uint64_t first_env_index = 0)
      : backend_(backend), num_envs_(checked_num_envs(num_envs)), seed_(seed), first_env_index_(first_env_index),
        params_(checked_params(params)),
        states_(backend, num_envs_), rng_blocks_(backend, num_envs_), elapsed_(backend, num_envs_),
        episode_returns_(backend, num_envs_), completed_(backend, accumulator_count(num_envs_)),
        observations_(backend, num_envs_ * observation_size), final_observations_(backend, num_envs_ * observation_size),
        rewards_(backend, num_envs_), terminated_(backend, num_envs_), truncated_(backend, num_envs_),
        first_bad_(backend, 1), deferred_(backend, 1), statistics_sum_(backend, 1) {
    // first_bad_ holds "none" (~0) between steps: the eager check sets it before it validates, the
    // deferred check's latch resets it after each step.
    for_each_index(backend_, 1, detail::store_flag{first_bad_.data(), ~0ull});
    reset();
  }

  /// Bytes of backend memory a vec_env of `num_envs` envs allocates (to check before creating).
  static std::size_t bytes_required(std::size_t num_envs) {
    const std::size_t per_env = sizeof(state_type) + sizeof(std::uint64_t) + sizeof(std::int32_t) + sizeof(double) +
                                2 * observation_size * sizeof(scalar_type) + sizeof(scalar_type) +
                                2 * sizeof(std::uint8_t);
    return num_envs * per_env + (accumulator_count(num_envs) + 1) * sizeof(detail::episode_accumulator) +
           sizeof(unsigned long long) + sizeof(detail::deferred_action_check);
  }

  /// Resets every env from the start of its random stream (the state right after construction),
  /// clears the flags, rewards, the episode statistics and a pending deferred action error.
  void reset() {
    for_each_index(env_backend(), num_envs_, detail::reset_kernel<Env>{params_, seed_, first_env_index_, arrays()});
    clear_episode_statistics();
    clear_deferred_check();
  }

  /// Changes the seed and resets every env (see reset()).
  void reset(std::uint64_t seed) {
    seed_ = seed;
    reset();
  }

  /// @brief Steps every env with its action, resetting the envs whose episode ended.
  /// @param actions [N] discrete indices, or [N, action_size] continuous values, in backend memory
  /// @throw std::invalid_argument if actions has the wrong size or is null
  /// @throw invalid_action naming the first env whose action is out of range (discrete) or NaN
  ///        (continuous); the call then changed nothing
  void step(view<const action_type> actions) {
    check_actions_view(actions);
    const std::size_t bad = first_invalid_action(actions.data());
    if (bad != npos) throw_invalid_action(actions, bad);
    step_unchecked(actions);
  }

  /// Like step(), without checking the action values (sizes are still checked). For loops whose
  /// actions come from a sampler that cannot produce invalid ones; an invalid action here is
  /// undefined behaviour of the env.
  void step_unchecked(view<const action_type> actions) {
    check_actions_view(actions);
    launch_step(actions.data(), nullptr);
  }

  /// @brief step() with the action check deferred: the host does not wait. Training loops call
  /// this every step and check_deferred_actions() once per iteration.
  ///
  /// The actions are validated as step() does, but the result stays in backend memory: on CUDA a
  /// validation kernel latches the lowest invalid env of the first step that had one (and its
  /// value) in a sticky device flag, and the step kernel reads the flag and changes nothing once
  /// it is set. From the first invalid action on, every step_deferred() is therefore a no-op, and
  /// check_deferred_actions() reports that action with the envs in the state they had before the
  /// step that carried it. The host backends check eagerly (it is free there) with the same
  /// observable behaviour, and check_deferred_actions() counts the same one host read as on CUDA.
  /// step(), step_unchecked() and the other methods ignore a pending error (reset() clears it):
  /// call check_deferred_actions() before mixing them.
  /// @param actions as for step()
  /// @throw std::invalid_argument if actions has the wrong size or is null (at once)
  void step_deferred(view<const action_type> actions) {
    check_actions_view(actions);
    if constexpr (is_host_backend_v<Backend>) {
      detail::deferred_action_check& c = *deferred_.data();  // host memory
      if (c.env != ~0ull) return;
      const std::size_t bad = first_invalid_action(actions.data());
      if (bad != npos) {
        c = detail::deferred_action_check{bad, detail::offending_value<Env>(actions.data(), bad)};
        return;
      }
      launch_step(actions.data(), nullptr);
    }
#if RLK_HAS_CUDA
    else {
      for_each_index(backend_, num_envs_, detail::validate_kernel<Env>{actions.data(), first_bad_.data()});
      for_each_index(backend_, 1, detail::latch_invalid_action<Env>{actions.data(), first_bad_.data(), deferred_.data()});
      launch_step(actions.data(), &deferred_.data()->env);
    }
#endif
  }

  /// @brief Reads the result of the step_deferred() calls since construction, reset() or the
  /// last check (one host read on every backend) and clears it.
  /// @throw invalid_action naming the first env whose action was invalid (the lowest index in the
  ///        first step that had one) and its value; the envs are in the state they had before that
  ///        step (it and every later step_deferred() changed nothing)
  void check_deferred_actions() {
    const detail::deferred_action_check c = deferred_.get(0);  // one host read on every backend
    if (c.env == ~0ull) return;
    clear_deferred_check();
    throw make_invalid_action(std::size_t(c.env), c.value, "rlkernels::vec_env::step_deferred",
                              "; found by check_deferred_actions(): no env was stepped from that step on (every env is "
                              "in the state it had before the step)");
  }

  /// @brief The deferred check's flag in backend memory: the env index check_deferred_actions()
  /// would report, or ~0 while no invalid action is pending. For loops that fold it into a read
  /// of their own (copy it next to their statistics, read both at once, and call
  /// check_deferred_actions() only when it is set). Valid as long as the vec_env lives.
  view<const unsigned long long> deferred_error_flag() const noexcept {
    return view<const unsigned long long>(&deferred_.data()->env, 1);
  }

  /// Number of environments N.
  std::size_t num_envs() const noexcept { return num_envs_; }
  /// Key of the random streams.
  std::uint64_t seed() const noexcept { return seed_; }
  /// Random stream of env 0 (see the constructor).
  std::uint64_t first_env_index() const noexcept { return first_env_index_; }
  /// The parameters shared by all envs.
  const params_type& params() const noexcept { return params_; }
  /// The backend the batch runs on.
  const Backend& backend() const noexcept { return backend_; }

  /// [N, observation_size] observations to act on (see the class comment).
  const buffer<scalar_type, Backend>& observations() const noexcept { return observations_; }
  /// [N, observation_size] observations produced by the last step before any reset.
  const buffer<scalar_type, Backend>& final_observations() const noexcept { return final_observations_; }
  /// [N] rewards of the last step.
  const buffer<scalar_type, Backend>& rewards() const noexcept { return rewards_; }
  /// [N] 1 where the last step reached a terminal state.
  const buffer<std::uint8_t, Backend>& terminated() const noexcept { return terminated_; }
  /// [N] 1 where the last step hit the time limit or the env could not take it (step_result::truncated).
  const buffer<std::uint8_t, Backend>& truncated() const noexcept { return truncated_; }
  /// [N] steps taken so far in each env's current episode.
  const buffer<std::int32_t, Backend>& episode_lengths() const noexcept { return elapsed_; }
  /// [N] undiscounted return so far of each env's current episode.
  const buffer<double, Backend>& episode_returns() const noexcept { return episode_returns_; }
  /// [N] env states, read-only; see states_view() and set_states() to change them.
  const buffer<state_type, Backend>& states() const noexcept { return states_; }

  /// A writable view of the env states (in backend memory) for kernels that set states directly,
  /// e.g. curricula. Call refresh_observations() afterwards so observations() match the states.
  view<state_type> states_view() noexcept { return states_.view(); }

  /// Overwrites every env's state from the host and recomputes observations(); episode lengths,
  /// returns and random streams carry on.
  /// @throw std::invalid_argument if states.size() != num_envs()
  void set_states(const std::vector<state_type>& states) {
    RLK_EXPECTS(states.size() == num_envs_, std::invalid_argument, "rlkernels::vec_env::set_states: got ", states.size(),
                " states for ", num_envs_, " envs");
    states_.assign(states);
    refresh_observations();
  }

  /// Recomputes observations() from the current states (after writing through states_view()).
  void refresh_observations() {
    for_each_index(backend_, num_envs_,
                   detail::observe_kernel<Env>{params_, states_.data(), observations_.data(), final_observations_.data()});
  }

  /// @brief Legal actions of every env's current state (the state observations() shows), for envs
  /// with a static `action_mask` (detail::has_action_mask), e.g. snake.
  /// @param out [N, num_actions] uint8 in backend memory: 1 where the action is legal, else 0
  /// @throw std::invalid_argument if out has the wrong size or is null
  template <class E = Env, std::enable_if_t<detail::has_action_mask<E>::value, int> = 0>
  void action_masks(view<std::uint8_t> out) const {
    const std::size_t expected = num_envs_ * std::size_t(E::num_actions);
    RLK_EXPECTS(out.size() == expected, std::invalid_argument, "rlkernels::vec_env::action_masks: out has ", out.size(),
                " elements, expected ", expected, " (num_envs ", num_envs_, " x ", E::num_actions, ")");
    RLK_EXPECTS(out.data() != nullptr, std::invalid_argument, "rlkernels::vec_env::action_masks: out is a null view");
    detail::expect_backend_memory(backend_, out.data(), "rlkernels::vec_env::action_masks", "out");
    for_each_index(backend_, num_envs_, detail::action_mask_kernel<E>{params_, states_.data(), out.data()});
  }

  /// Statistics of the episodes completed since construction, reset() or the last clear.
  /// The host backends sum in a fixed order (per chunk of 64 envs, or of one env for an env with
  /// `parallel_from`, in step and env order, then the chunks in order: the same numbers for every
  /// thread count); CUDA keeps one sum per env and reduces them with CUB, which repeats run to run
  /// on the same GPU model.
  episode_statistics get_episode_statistics() const {
    return detail::statistics_of(detail::reduce_accumulators(backend_, completed_.data(), completed_.size()));
  }

  /// @brief get_episode_statistics() written to `out[0]` in backend memory, without the host
  /// waiting (the same numbers, bit for bit, on the host backends): for training loops that
  /// read their statistics once per iteration.
  /// @param out one episode_statistics in backend memory
  /// @throw std::invalid_argument if out does not have exactly one element or is null
  void episode_statistics_into(view<episode_statistics> out) const {
    detail::check_view_size(out.size(), out.data(), 1, "rlkernels::vec_env::episode_statistics_into", "out");
    detail::expect_backend_memory(backend_, out.data(), "rlkernels::vec_env::episode_statistics_into", "out");
    detail::deterministic_sum_into(backend_, completed_.size(), detail::load_accumulator{completed_.data()},
                                   detail::episode_accumulator::empty(), detail::combine_accumulators{},
                                   statistics_sum_.data());
    for_each_index(backend_, 1, detail::finish_statistics_kernel{statistics_sum_.data(), out.data()});
  }

  /// Forgets the completed episodes (the episodes in progress carry on).
  void clear_episode_statistics() {
    for_each_index(backend_, completed_.size(), detail::fill_accumulators{completed_.data()});
  }

  /// @brief Binds the whole mutable state to a checkpoint (rlkernels::checkpoint, or anything with
  /// its bind / bind_value / bind_constant), under names `prefix` + "states", "rng_blocks",
  /// "elapsed", "episode_returns", "completed_episodes", "observations", "final_observations",
  /// "rewards", "terminated", "truncated" and "seed" (a value: reset(seed) changes it). The
  /// constant `prefix` + "layout" (num_envs, first_env_index, observation_size, state bytes)
  /// must match. Params are not saved: construct the env with the same ones. The episode
  /// accumulators are one per 64 envs on the host (one per env for an env with `parallel_from`)
  /// and one per env on CUDA, so a checkpoint
  /// resumes on the backend kind that wrote it.
  template <class Checkpoint>
  void bind_checkpoint(Checkpoint& c, const std::string& prefix) {
    c.bind_constant(prefix + "layout", "num_envs=" + std::to_string(num_envs_) + "\nfirst_env_index=" +
                                           std::to_string(first_env_index_) + "\nobservation_size=" +
                                           std::to_string(observation_size) + "\nstate_bytes=" +
                                           std::to_string(sizeof(state_type)) + "\n");
    c.bind_value(prefix + "seed", seed_);
    c.bind(prefix + "states", backend_, states_.view());
    c.bind(prefix + "rng_blocks", backend_, rng_blocks_.view());
    c.bind(prefix + "elapsed", backend_, elapsed_.view());
    c.bind(prefix + "episode_returns", backend_, episode_returns_.view());
    c.bind(prefix + "completed_episodes", backend_, completed_.view());
    c.bind(prefix + "observations", backend_, observations_.view());
    c.bind(prefix + "final_observations", backend_, final_observations_.view());
    c.bind(prefix + "rewards", backend_, rewards_.view());
    c.bind(prefix + "terminated", backend_, terminated_.view());
    c.bind(prefix + "truncated", backend_, truncated_.view());
  }

private:
  static constexpr std::size_t npos = std::size_t(-1);
  /// Envs per episode-statistics accumulator on the host: one chunk is stepped in order by one
  /// thread, so the sums depend on the batch size but never on the thread count. Heavy envs
  /// (detail::has_parallel_from) take one env per chunk, so that small batches spread over threads.
  static constexpr std::size_t stats_chunk = detail::has_parallel_from<Env>::value ? 1 : 64;

  /// The backend the step and reset kernels run on: an env with `parallel_from` lowers the OpenMP
  /// backend's serial_below to it (the other kernels are light and keep the caller's setting).
  Backend env_backend() const noexcept {
    if constexpr (std::is_same_v<Backend, openmp_backend> && detail::has_parallel_from<Env>::value) {
      Backend b = backend_;
      const std::size_t from = Env::parallel_from > 1 ? std::size_t(Env::parallel_from) : std::size_t(2);
      if (b.serial_below > from) b.serial_below = from;
      return b;
    } else {
      return backend_;
    }
  }

  /// Accumulators of completed episodes: one per env on CUDA, one per stats_chunk envs on the host.
  static constexpr std::size_t accumulator_count(std::size_t num_envs) {
    return is_host_backend_v<Backend> ? (num_envs + stats_chunk - 1) / stats_chunk : num_envs;
  }

  detail::batch_arrays<Env> arrays() noexcept {
    return {states_.data(),       rng_blocks_.data(),         elapsed_.data(), episode_returns_.data(),
            completed_.data(),    observations_.data(),       final_observations_.data(),
            rewards_.data(),      terminated_.data(),         truncated_.data()};
  }

  std::size_t checked_num_envs(std::size_t n) const {
    RLK_EXPECTS(n >= 1, std::invalid_argument, "rlkernels::vec_env: num_envs must be >= 1, got ", n);
    RLK_EXPECTS(n <= (std::size_t(-1) - 64) / bytes_required(1), std::invalid_argument, "rlkernels::vec_env: num_envs ",
                n, " overflows the size of the address space");
    // Fail before allocating anything, with the whole size, rather than on one buffer midway (or,
    // on an overcommitting host, by the OOM killer while zeroing).
    detail::expect_fits(backend_, bytes_required(n), detail::concat("rlkernels::vec_env: ", n, " envs"));
    return n;
  }
  static params_type checked_params(const params_type& p) {
    RLK_EXPECTS(p.max_episode_steps >= 0, std::invalid_argument,
                "rlkernels::vec_env: Params::max_episode_steps must be >= 0 (0 = no limit), got ", p.max_episode_steps);
    if constexpr (detail::has_validate_params<Env>::value) Env::validate(p);
    return p;
  }

  void check_actions_view(view<const action_type> actions) const {
    const std::size_t expected = num_envs_ * std::size_t(action_width);
    RLK_EXPECTS(actions.size() == expected, std::invalid_argument, "rlkernels::vec_env::step: actions has ",
                actions.size(), " elements, expected ", expected, " (num_envs ", num_envs_, " x ", action_width, ")");
    RLK_EXPECTS(actions.data() != nullptr, std::invalid_argument, "rlkernels::vec_env::step: actions is a null view");
    // The memory-kind query (cudaPointerGetAttributes on CUDA) once per actions array: a training
    // loop passes the same buffer every step.
    if (actions.data() != accepted_actions_) {
      detail::expect_backend_memory(backend_, actions.data(), "rlkernels::vec_env::step", "actions");
      accepted_actions_ = actions.data();
    }
  }

  void launch_step(const action_type* actions, const unsigned long long* halt) {
    detail::step_kernel<Env> kernel{params_, seed_, first_env_index_, actions, arrays()};
    kernel.halt = halt;
    if constexpr (is_host_backend_v<Backend>) {
      for_each_chunk(env_backend(), num_envs_, stats_chunk, kernel);
    } else {
      for_each_index(backend_, num_envs_, kernel);
    }
  }

  void clear_deferred_check() {
    for_each_index(backend_, 1, detail::clear_deferred_check{deferred_.data()});
  }

  /// True if any env's action is invalid: a branch-free scan that vectorises (a few percent of a
  /// CartPole step). It runs on the calling thread unless the batch is large enough to repay an
  /// OpenMP fork/join.
  bool any_invalid_action(const action_type* actions) const {
    int any_bad = 0;
#if RLK_HAS_OPENMP
    if constexpr (std::is_same_v<Backend, openmp_backend>) {
      constexpr std::size_t parallel_scan_from = std::size_t(1) << 16;
      if (num_envs_ >= parallel_scan_from && num_envs_ >= backend_.serial_below) {
        const std::int64_t n = static_cast<std::int64_t>(num_envs_);
        const int threads = backend_.num_threads > 0 ? backend_.num_threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(threads) reduction(| : any_bad)
        for (std::int64_t i = 0; i < n; ++i) any_bad |= int(!detail::action_is_valid<Env>(actions, std::size_t(i)));
        return any_bad != 0;
      }
    }
#endif
    for (std::size_t i = 0; i < num_envs_; ++i) any_bad |= int(!detail::action_is_valid<Env>(actions, i));
    return any_bad != 0;
  }

  /// Index of the first env with an invalid action, or npos. On the host, any_invalid_action()
  /// answers first; only if it finds something is the first bad index searched for.
  std::size_t first_invalid_action(const action_type* actions) {
    if constexpr (is_host_backend_v<Backend>) {
      const bool any_bad = any_invalid_action(actions);
      if (!any_bad) return npos;
      for (std::size_t i = 0; i < num_envs_; ++i)
        if (!detail::action_is_valid<Env>(actions, i)) return i;
      return npos;
    }
#if RLK_HAS_CUDA
    else {
      const unsigned long long none = ~0ull;
      const detail::device_guard guard(backend_.device);
      RLK_CUDA_CHECK(cudaMemsetAsync(first_bad_.data(), 0xFF, sizeof(unsigned long long), backend_.stream));
      for_each_index(backend_, num_envs_, detail::validate_kernel<Env>{actions, first_bad_.data()});
      const unsigned long long bad = first_bad_.get(0);
      if (bad != none) for_each_index(backend_, 1, detail::store_flag{first_bad_.data(), none});
      return bad == none ? npos : std::size_t(bad);
    }
#endif
  }

  [[noreturn]] void throw_invalid_action(view<const action_type> actions, std::size_t env) const {
    double value = 0;
    if constexpr (is_host_backend_v<Backend>) {
      value = detail::offending_value<Env>(actions.data(), env);
    }
#if RLK_HAS_CUDA
    else {
      action_type host[action_width];
      const detail::device_guard guard(backend_.device);
      RLK_CUDA_CHECK(cudaMemcpyAsync(host, actions.data() + env * action_width, sizeof(host), cudaMemcpyDeviceToHost,
                                     backend_.stream));
      RLK_CUDA_CHECK(cudaStreamSynchronize(backend_.stream));
      value = detail::offending_value<Env>(host, 0);
    }
#endif
    throw make_invalid_action(env, value, "rlkernels::vec_env::step", "; no env was stepped");
  }

  static invalid_action make_invalid_action(std::size_t env, double value, const char* who, const char* tail) {
    if constexpr (Env::action_space == action_kind::discrete) {
      return invalid_action(env, value,
                            detail::concat(who, ": action ", static_cast<long long>(value), " of env ", env,
                                           " is out of range [0, ", Env::num_actions, ")", tail));
    } else {
      return invalid_action(env, value, detail::concat(who, ": action of env ", env, " contains NaN", tail));
    }
  }

  Backend backend_;
  std::size_t num_envs_;
  std::uint64_t seed_;
  std::uint64_t first_env_index_;
  params_type params_;
  buffer<state_type, Backend> states_;
  buffer<std::uint64_t, Backend> rng_blocks_;
  buffer<std::int32_t, Backend> elapsed_;
  buffer<double, Backend> episode_returns_;
  buffer<detail::episode_accumulator, Backend> completed_;
  buffer<scalar_type, Backend> observations_;
  buffer<scalar_type, Backend> final_observations_;
  buffer<scalar_type, Backend> rewards_;
  buffer<std::uint8_t, Backend> terminated_;
  buffer<std::uint8_t, Backend> truncated_;
  buffer<unsigned long long, Backend> first_bad_;             // [1] lowest invalid env of the step being checked, ~0: none
  buffer<detail::deferred_action_check, Backend> deferred_;  // [1] step_deferred's sticky result
  mutable buffer<detail::episode_accumulator, Backend> statistics_sum_;  // [1] episode_statistics_into's scratch
  mutable const void* accepted_actions_ = nullptr;  // the last actions array whose memory kind was checked
};

}  // namespace rlkernels
