// rlkernels/algorithms/trainer_core.hpp
// What every trainer (PPO, DQN, SAC, TD3) keeps and does alike around its own iteration: the
// counters (env steps, iterations, gradient steps) and done(), the end of an iteration (the ranks'
// parameter checksums compared, the automatic checkpoint), checkpoints saved and loaded in two
// halves, joining the ranks of a data-parallel run, and the ranks' iteration records gathered.
#pragma once

#include "../core/communicator.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../envs/failed_steps.hpp"
#include "../envs/vec_env.hpp"
#include "../io/checkpoint.hpp"
#include "common.hpp"
#include "data_parallel.hpp"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlkernels {
namespace detail {

/// One parameter array and its name in messages, for trainer_core::join_ranks.
template <class T>
struct named_parameters {
  view<T> values;    // the array (backend memory)
  const char* what;  // e.g. "actor parameters"
};

/// Whether an iteration record keeps its failed steps as `failures` (else as `step.failures`).
template <class Record, class = void>
struct has_failures_member : std::false_type {};
template <class Record>
struct has_failures_member<Record, std::void_t<decltype(std::declval<Record&>().failures)>> : std::true_type {};

/// The failed_step_counts of an iteration record: its `failures`, or its `step.failures`.
template <class Record>
failed_step_counts& failures_of(Record& r) {
  if constexpr (has_failures_member<Record>::value) {
    return r.failures;
  } else {
    return r.step.failures;
  }
}

/// @brief The iteration records of every rank gathered: the record of the last rank (whose last
/// part is the batch's last, as in one process) with the episodes and failed steps of all ranks and the first
/// diverged gradient step any rank saw; an invalid action on another rank stops this one with a
/// message naming that rank. `outcome(record)` returns a pair of references to the record's
/// episode_statistics and its action flag; `take_if_first_bad(d, x)` copies x's divergence fields
/// into d when x diverged at an earlier gradient step than d (d's are cleared first by
/// `clear_bad(d)`).
template <class Record, class Outcome, class ClearBad, class TakeIfFirstBad>
Record gather_iteration_records(communicator& comm, const Record& mine, const char* who, Outcome&& outcome,
                                ClearBad&& clear_bad, TakeIfFirstBad&& take_if_first_bad) {
  const std::vector<Record> all = all_gather(comm, mine, "iteration statistics");
  std::vector<unsigned long long> flags;
  std::vector<episode_statistics> episodes;
  Record d = all.back();
  clear_bad(d);
  failed_step_counts failures;
  for (Record x : all) {
    failures = failures + failures_of(x);
    const auto out = outcome(x);
    episodes.push_back(out.first);
    flags.push_back(out.second);
    take_if_first_bad(d, x);
  }
  Record own = mine;
  const unsigned long long own_flag = outcome(own).second;
  raise_if_other_rank_flagged(comm, own_flag, flags, who);
  failures_of(d) = failures;
  auto out = outcome(d);
  out.second = own_flag;
  out.first = merge_episodes(episodes);
  return d;
}

}  // namespace detail

/// @brief The part of a trainer that PPO, DQN, SAC and TD3 share: its config, backend and
/// communicator, the counters (env steps, iterations, gradient steps) and done(), checkpoints
/// (saved and loaded as one process's file or as a data-parallel one, automatic ones every
/// config().checkpoint_every iterations) and the ranks of a data-parallel run.
///
/// A base class by CRTP, with no virtual functions: `Derived` (the trainer) binds its state into
/// a checkpoint with `bind_shared(c)` (what every rank holds alike: config, parameters,
/// optimisers, counters) and `bind_local(c)` (each rank's own: envs, replay buffer), and gives
/// `parameter_checksum()`, and `static std::uint64_t steps_per_iteration(const Config&)`, the env
/// steps of one iteration on each rank. Its iterate() starts with begin_iteration() and ends with
/// end_iteration(), which compares the ranks' parameters every config().parameter_check_every
/// iterations and writes the automatic checkpoint.
///
/// Counting: an iteration takes steps_per_iteration env steps on every rank (PPO: num_envs *
/// num_steps; DQN, SAC, TD3: num_envs), so done() (iteration() >= num_iterations()) is the same as
/// global_step() >= total_timesteps in every trainer.
template <class Derived, class Config, class Backend>
class trainer_core {
 public:
  /// The configuration.
  const Config& config() const noexcept { return config_; }
  /// The job's ranks (the default single process unless one was given).
  communicator& comm() const noexcept { return *comm_; }
  /// Env steps taken so far, all envs of all ranks.
  std::uint64_t global_step() const noexcept { return global_step_; }
  /// Iterations done so far.
  std::uint64_t iteration() const noexcept { return iteration_; }
  /// Optimiser steps taken so far (PPO: minibatch steps; DQN: Q-network steps; SAC, TD3: critic steps).
  std::uint64_t gradient_steps() const noexcept { return gradient_steps_; }
  /// Iterations that cover total_timesteps: each takes Derived::steps_per_iteration(config()) env
  /// steps on every rank.
  std::uint64_t num_iterations() const noexcept {
    const std::uint64_t per = Derived::steps_per_iteration(config_) * std::uint64_t(comm_->size());
    return per ? (config_.total_timesteps + per - 1) / per : 0;
  }
  /// True once num_iterations() iterations (total_timesteps env steps) are done.
  bool done() const noexcept { return iteration_ >= num_iterations(); }
  /// The automatic checkpoints (config().checkpoint_dir; rank 0 of a data-parallel run), if
  /// checkpoint_every > 0: a run from scratch, or one that continues the file given to
  /// load_checkpoint(). Save the run's other checkpoints through it (save_checkpoint(dir)), so
  /// that they rotate with the automatic ones.
  const std::optional<checkpoint_directory>& checkpoints() const noexcept { return checkpoints_; }

  /// @brief Binds everything a resumed run needs to continue bit-identically (on the same backend
  /// kind) into checkpoint `c`: the constant "config" (config().hyperparameters()), the counters,
  /// parameters, optimisers and envs, and what else the trainer keeps (its replay buffer when
  /// config().checkpoint_buffers, its normalisers). Not saved: scratch and gradients.
  template <class C>
  void bind_checkpoint(C& c) {
    derived().bind_shared(c);
    derived().bind_local(c);
  }
  /// @brief Writes the training state to `path` atomically (see checkpoint::save: a crash leaves
  /// the old file or the new one). In a data-parallel run every rank calls it: rank 0 gathers the
  /// ranks' own state (envs, replay buffers) and writes the file.
  /// @throw rlkernels::error on an I/O failure (on every rank: rank 0 tells the others)
  void save_checkpoint(const std::string& path) { state().save(path, global_step_); }
  /// @brief Saves the training state as the checkpoint of global_step() in `dir` (rotating, see
  /// checkpoint_directory::save) and returns the path (rank 0; the other ranks of a data-parallel
  /// run return "" and write nothing).
  /// @throw rlkernels::error on an I/O failure (on every rank)
  std::string save_checkpoint(const checkpoint_directory& dir) { return state().save(dir, global_step_); }
  /// @brief Restores a state saved by save_checkpoint() (or automatically) into this trainer, which
  /// must have been built with the same config (checkpoint fields aside), env parameters, backend
  /// kind and number of ranks; training then continues as if never interrupted. All or nothing.
  /// In a data-parallel run every rank calls it; rank 0 reads the file and sends it to the others.
  /// The automatic checkpoints then continue from `path` (checkpoint_directory::resumed_from):
  /// their rotation keeps `path` and never removes the newer files of a run it abandons.
  /// @throw checkpoint_error naming the file and the reason (nothing has changed then)
  void load_checkpoint(const std::string& path) {
    state().load(path);
    derived().after_load();
    if (checkpoints_) checkpoints_->resumed_from(path);  // the automatic ones continue from `path`
    failures_seen_ = failed_step_totals();  // the restored envs' counters
  }
  /// @brief The env steps of the training envs (all ranks) that the physics could not take,
  /// since the envs were built (a resumed run's include those before its checkpoint), as of the
  /// last iteration: each ended its episode as truncated. Always zero for envs that do not count
  /// them (counts_failed_steps_v). Every iteration's statistics carry its own (`failed_steps`).
  const failed_step_counts& failed_steps() const noexcept { return failures_seen_; }

 protected:
  /// @param backend where the trainer runs
  /// @param config the validated config
  /// @param comm the job's ranks; it must outlive the trainer
  /// @param name the trainer's name: "ppo", ... (the automatic checkpoints' prefix; messages say rlkernels::NAME)
  trainer_core(Backend backend, Config config, communicator& comm, const char* name)
      : backend_(backend), config_(std::move(config)), comm_(&comm), name_(name), who_(std::string("rlkernels::") + name) {
    if (config_.checkpoint_every > 0 && comm_->rank() == 0) {
      checkpoints_.emplace(config_.checkpoint_dir, name_, config_.checkpoint_keep);
      checkpoints_->start_new_run();  // until load_checkpoint() says otherwise
    }
  }

  /// iterate()'s start: refuses a finished run (naming `Derived`), then counts the iteration.
  /// @throw std::logic_error if done()
  void begin_iteration() {
    RLK_EXPECTS(!done(), std::logic_error, who_, "::iterate: training is done (", global_step_,
                " of total_timesteps ", config_.total_timesteps, " env steps taken)");
    ++iteration_;
  }
  /// iterate()'s end: every config().parameter_check_every iterations the ranks compare their
  /// parameters' checksums; every config().checkpoint_every iterations the automatic checkpoint
  /// (checkpoint_dir/NAME-STEP.rlkc, the newest checkpoint_keep kept; in a data-parallel run each
  /// rank writes its shard beside it and rank 0 the manifest).
  void end_iteration() {
    if (comm_->size() > 1 && config_.parameter_check_every > 0 && iteration_ % config_.parameter_check_every == 0)
      detail::check_parameters_agree(*comm_, derived().parameter_checksum(), iteration_, who_.c_str());
    if (config_.checkpoint_every > 0 && iteration_ % config_.checkpoint_every == 0)
      state().save_to(checkpoints_ ? &*checkpoints_ : nullptr, global_step_);  // rank 0 has the directory
  }
  /// The ranks check that they run the same config and that each is one shard (a data-parallel run only).
  /// @throw std::invalid_argument on every rank otherwise
  void check_ranks() {
    detail::join_ranks(*comm_, config_.hyperparameters(), config_.env_shards, who_.c_str());
  }
  /// Every rank takes rank 0's values of these arrays.
  template <class T>
  void broadcast_parameters(std::initializer_list<detail::named_parameters<T>> arrays) {
    for (const detail::named_parameters<T>& a : arrays) broadcast(*comm_, backend_, a.values, 0, a.what);
  }
  /// check_ranks(), then broadcast_parameters(arrays), when there are several ranks.
  template <class T>
  void join_ranks(std::initializer_list<detail::named_parameters<T>> arrays) {
    if (comm_->size() <= 1) return;
    check_ranks();
    broadcast_parameters(arrays);
  }
  /// Called after a checkpoint was loaded (a trainer may shadow it to recompute what it derives).
  void after_load() {}
  /// The iteration's failed steps from the totals (all ranks) read with its statistics; they
  /// become failed_steps().
  failed_step_counts failed_steps_since_last(const failed_step_counts& totals) noexcept {
    const failed_step_counts d = totals - failures_seen_;
    failures_seen_ = totals;
    return d;
  }
  /// "rlkernels::NAME".
  const char* who() const noexcept { return who_.c_str(); }

  Backend backend_;                   ///< where the trainer runs
  Config config_;                     ///< the validated hyperparameters
  communicator* comm_;                ///< the job's ranks
  std::uint64_t global_step_ = 0;     ///< env steps so far (all envs of all ranks)
  std::uint64_t iteration_ = 0;       ///< iterations done
  std::uint64_t gradient_steps_ = 0;  ///< optimiser steps done (see gradient_steps())

 private:
  Derived& derived() noexcept { return static_cast<Derived&>(*this); }
  const Derived& derived() const noexcept { return static_cast<const Derived&>(*this); }
  /// The checkpoint's two halves (detail::trainer_state).
  auto state() {
    Derived& d = derived();
    return detail::trainer_state(
        *comm_, [&d](checkpoint& c) { d.bind_shared(c); }, [&d](checkpoint& c) { d.bind_local(c); }, who_.c_str());
  }

  /// The training envs' failed steps over all ranks, read now (a host read; an all-gather with ranks).
  failed_step_counts failed_step_totals() {
    const failed_step_counts mine = rlkernels::failed_steps(derived().envs());
    if (comm_->size() <= 1) return mine;
    failed_step_counts sum;
    for (const failed_step_counts& x : all_gather(*comm_, mine, "failed steps")) sum = sum + x;
    return sum;
  }

  const char* name_;
  std::string who_;
  failed_step_counts failures_seen_;  // failed_steps()
  std::optional<checkpoint_directory> checkpoints_;
};

}  // namespace rlkernels
