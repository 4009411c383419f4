// rlkernels/algorithms/data_parallel.hpp
// What the data-parallel trainers (PPO, SAC, TD3, DQN) share on top of a communicator: the
// check that every rank runs the same config, the gradient of a batch as a sum of parts (this
// process's env shards times its accumulation micro-batches, then the ranks in rank order), the
// gathered episode statistics, the parameter checksum comparison, and checkpoints that rank 0
// writes with every rank's own state as a section (docs/distributed.md).
#pragma once

#include "../core/backend.hpp"
#include "../core/communicator.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../envs/vec_env.hpp"
#include "common.hpp"
#include "../io/checkpoint.hpp"
#include "../nn/serialize.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

namespace rlkernels {

/// @brief The data-parallel and gradient accumulation settings every trainer's config has
/// (docs/distributed.md). A trainer splits each gradient step's batch into parts: its
/// env_shards, each in gradient_accumulation_steps micro-batches; in a data-parallel run every
/// rank adds its parts and the ranks' sums are all-reduced.
struct data_parallel_settings {
  /// Each batch's gradient is computed in this many equal micro-batches whose gradients are summed
  /// before the one optimiser step: the update of the whole batch, with activations held for one
  /// micro-batch at a time (what fits in memory when the batch does not).
  std::size_t gradient_accumulation_steps = 1;
  /// The envs form this many equal shards that sample, act and reduce shard by shard exactly as
  /// data-parallel ranks do: one process with num_envs = R * N, the batch R times as large and
  /// env_shards = R reproduces R ranks of N envs bit for bit. In a data-parallel run (a
  /// communicator of R > 1 ranks) every rank is one shard: leave it at 1 there.
  std::size_t env_shards = 1;
  /// Data-parallel runs: how the ranks' gradients are added. ordered (the default): in rank
  /// order, the same bits as one process with env_shards = R; native: MPI's or NCCL's own
  /// all-reduce, the least traffic for large networks on many machines.
  reduction_order gradient_reduction = reduction_order::ordered;
  /// Data-parallel runs: iterations between checks that every rank holds rank 0's parameters (a
  /// checksum all-gathered; 0: never).
  std::uint64_t parameter_check_every = 10;

  /// Parts of a batch on this process: env_shards * gradient_accumulation_steps.
  std::size_t gradient_parts() const noexcept { return env_shards * gradient_accumulation_steps; }
  /// The hyperparameters() lines of these settings, only where they differ from one process
  /// without accumulation (so that checkpoints written before they existed stay loadable).
  std::string parallel_lines() const {
    std::string s;
    if (gradient_accumulation_steps != 1) s += "gradient_accumulation_steps=" + std::to_string(gradient_accumulation_steps) + "\n";
    if (env_shards != 1) s += "env_shards=" + std::to_string(env_shards) + "\n";
    if (gradient_reduction != reduction_order::ordered) s += "gradient_reduction=native\n";
    return s;
  }
  /// @brief Throws std::invalid_argument, naming `who`, unless env_shards divides num_envs and
  /// the parts divide `batch` (the samples of one gradient step).
  void validate_parallel(std::size_t num_envs, std::size_t batch, const char* batch_name, const char* who) const {
    RLK_EXPECTS(gradient_accumulation_steps >= 1, std::invalid_argument, who,
                ": gradient_accumulation_steps must be >= 1, got ", gradient_accumulation_steps);
    RLK_EXPECTS(env_shards >= 1 && num_envs % env_shards == 0, std::invalid_argument, who, ": env_shards (",
                env_shards, ") must be >= 1 and divide num_envs (", num_envs, ")");
    RLK_EXPECTS(batch % gradient_parts() == 0, std::invalid_argument, who, ": the ", batch_name, " of ", batch,
                " samples does not split into env_shards * gradient_accumulation_steps = ", gradient_parts(),
                " equal micro-batches");
  }
};

namespace detail {

/// y[k] += a * x[k].
template <class T>
struct axpy_kernel {
  T a;
  const T* x;
  T* y;
  RLK_HOST_DEVICE void operator()(std::size_t k) const { y[k] += a * x[k]; }
};
/// dst[k] = src[k] * scale: summed gradient parts back into the networks' gradients.
template <class T>
struct scaled_copy_kernel {
  const T* src;
  T* dst;
  T scale;
  RLK_HOST_DEVICE void operator()(std::size_t k) const { dst[k] = src[k] * scale; }
};

/// The ranks check that they were given the same config (its hyperparameters() text): a rank
/// with another one is named.
/// @throw std::invalid_argument on every rank if some rank's config differs from rank 0's
inline void check_same_config(communicator& comm, const std::string& hyperparameters, const char* who) {
  const std::vector<std::uint64_t> all =
      all_gather(comm, fnv1a(hyperparameters.data(), hyperparameters.size()), "config checksums");
  for (std::size_t r = 1; r < all.size(); ++r)
    RLK_EXPECTS(all[r] == all[0], std::invalid_argument, who, ": ", comm.where_am_i(), ": rank ", r,
                "'s config differs from rank 0's (every rank must be given the same config)");
}

/// A checksum (fnv1a over the bytes) of parameter arrays, in order.
template <class T, class Backend>
std::uint64_t parameters_checksum(std::initializer_list<view<const T>> arrays, const Backend& backend) {
  std::uint64_t h = fnv1a(nullptr, 0);
  for (view<const T> a : arrays) {
    std::vector<T> host(a.size());
    if (a.size()) memory_ops<Backend>::to_host(backend, host.data(), a.data(), a.size() * sizeof(T));
    h = fnv1a(host.data(), host.size() * sizeof(T), h);
  }
  return h;
}

/// Compares every rank's parameter checksum with rank 0's.
/// @throw distributed_error on every rank, naming the ranks that differ
inline void check_parameters_agree(communicator& comm, std::uint64_t checksum, std::uint64_t iteration,
                                   const char* who) {
  const std::vector<std::uint64_t> all = all_gather(comm, checksum, "parameter checksums");
  std::string differ;
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  if (!differ.empty())
    throw distributed_error(comm.rank(), std::string(who) + ": " + comm.where_am_i() + ": after iteration " +
                                             std::to_string(iteration) + " the parameters of rank(s) " + differ +
                                             " differ from rank 0's (a non-deterministic reduction, or ranks "
                                             "built differently)");
}

/// The episodes of every rank as one record (counts added, means weighted by the counts).
inline episode_statistics merge_episodes(const std::vector<episode_statistics>& all) {
  episode_statistics e;
  double returns = 0, lengths = 0;
  for (const episode_statistics& ep : all) {
    if (ep.count == 0) continue;
    returns += ep.mean_return * double(ep.count);
    lengths += ep.mean_length * double(ep.count);
    e.min_return = e.count ? std::min(e.min_return, ep.min_return) : ep.min_return;
    e.max_return = e.count ? std::max(e.max_return, ep.max_return) : ep.max_return;
    e.count += ep.count;
  }
  if (e.count) {
    e.mean_return = returns / double(e.count);
    e.mean_length = lengths / double(e.count);
  }
  return e;
}

/// After an all-gather of the ranks' iteration records: if this rank's action flag is clear
/// (~0) but another rank's is set, every rank stops with a message naming that rank (the rank
/// itself throws its own invalid_action afterwards).
inline void raise_if_other_rank_flagged(communicator& comm, unsigned long long mine,
                                        const std::vector<unsigned long long>& flags, const char* who) {
  if (mine != ~0ull) return;
  for (std::size_t r = 0; r < flags.size(); ++r)
    if (flags[r] != ~0ull)
      throw distributed_error(comm.rank(), std::string(who) + ": " + comm.where_am_i() + ": rank " +
                                               std::to_string(r) +
                                               " stopped: its policy produced an invalid action (see that rank's "
                                               "message)");
}

/// The gradient of a batch split into parts: this process's env shards, each in
/// `steps` accumulation micro-batches, then the ranks. add() each part's gradients in order
/// (shard by shard, micro-batch by micro-batch); reduce() all-reduces the sum over the ranks (in
/// rank order, or the library's own order) and writes sum / parts() back into the gradient
/// arrays. A shard's micro-batches are added first and the shards' sums then, as ranks add
/// theirs, so that one process with S shards gives the bits of S ranks. With one part in all,
/// both calls do nothing and the arrays keep the one part's gradients.
template <class T, class Backend>
class gradient_parts {
 public:
  /// @param elements the gradient arrays' elements together
  /// @param shards env shards of this process; @param steps micro-batches per shard
  /// @param comm the job's ranks
  gradient_parts(Backend backend, std::size_t elements, std::size_t shards, std::size_t steps, communicator& comm)
      : backend_(backend), shards_(shards), steps_(steps), parts_(shards * steps * std::size_t(comm.size())),
        sum_(backend, parts_ > 1 ? elements : 0), shard_sum_(backend, shards > 1 && steps > 1 ? elements : 0) {}
  /// Parts one step sums over all ranks.
  std::size_t parts() const noexcept { return parts_; }
  /// Adds micro-batch `step` of shard `shard`'s gradients (call in order).
  void add(std::initializer_list<view<const T>> grads, std::size_t shard, std::size_t step) {
    if (parts_ == 1) return;
    const bool nested = shards_ > 1 && steps_ > 1;
    pack(nested ? shard_sum_.view() : sum_.view(), grads, nested ? step == 0 : (shard == 0 && step == 0));
    if (nested && step + 1 == steps_) {
      if (shard == 0) {
        copy(backend_, shard_sum_.cview(), sum_.view());
      } else {
        for_each_index(backend_, sum_.size(), axpy_kernel<T>{T(1), shard_sum_.data(), sum_.data()});
      }
    }
  }
  /// All-reduces the sum over the ranks and writes sum / parts() into the gradient arrays.
  void reduce(communicator& comm, reduction_order order, std::initializer_list<view<T>> grads, const char* what) {
    if (parts_ == 1) return;
    all_reduce(comm, backend_, sum_.view(), reduce_op::sum, order, what);
    const T scale = T(1) / T(parts_);
    std::size_t at = 0;
    for (view<T> g : grads) {
      if (g.size() == 0) continue;
      for_each_index(backend_, g.size(), scaled_copy_kernel<T>{sum_.data() + at, g.data(), scale});
      at += g.size();
    }
  }

 private:
  void pack(view<T> dst, std::initializer_list<view<const T>> grads, bool first) {
    std::size_t at = 0;
    for (view<const T> g : grads) {
      if (g.size() == 0) continue;
      if (first) {
        copy(backend_, g, dst.subview(at, g.size()));
      } else {
        for_each_index(backend_, g.size(), axpy_kernel<T>{T(1), g.data(), dst.data() + at});
      }
      at += g.size();
    }
  }

  Backend backend_;
  std::size_t shards_, steps_, parts_;
  buffer<T, Backend> sum_, shard_sum_;
};

/// Adds host values part by part as gradient_parts adds arrays (a shard's micro-batches, then
/// the shards), for a scalar gradient such as SAC's temperature.
class host_parts {
 public:
  host_parts(std::size_t shards, std::size_t steps) : shards_(shards), steps_(steps) {}
  void add(double x, std::size_t shard, std::size_t step) {
    const bool nested = shards_ > 1 && steps_ > 1;
    double& acc = nested ? shard_sum_ : sum_;
    acc = (nested ? step == 0 : (shard == 0 && step == 0)) ? x : acc + x;
    if (nested && step + 1 == steps_) sum_ = shard == 0 ? shard_sum_ : sum_ + shard_sum_;
  }
  /// The sum over this process's parts.
  double sum() const noexcept { return sum_; }

 private:
  std::size_t shards_, steps_;
  double sum_ = 0, shard_sum_ = 0;
};

/// The batch sampling keys of this process's shards: its rank's (data parallel), or every env
/// shard's; shard s's key derives from `base`, and shard 0's is `base` itself (what a one-shard
/// run has always used).
inline std::vector<std::uint64_t> shard_seeds(std::uint64_t base, std::size_t env_shards, const communicator& comm) {
  const auto key = [&](std::size_t s) { return s == 0 ? base : derive_key(base, s); };
  std::vector<std::uint64_t> seeds;
  if (comm.size() > 1) {
    seeds.push_back(key(std::size_t(comm.rank())));
  } else {
    for (std::size_t s = 0; s < env_shards; ++s) seeds.push_back(key(s));
  }
  return seeds;
}

/// Calls fn(shard, micro-batch, first row in this process's batch, first row in the whole batch
/// of all ranks) for every part of a batch of `batch` rows per rank, in order.
template <class Fn>
void for_each_batch_part(const data_parallel_settings& c, std::size_t batch, const communicator& comm, Fn&& fn) {
  const std::size_t steps = c.gradient_accumulation_steps, b = batch / c.gradient_parts();
  const std::uint64_t base = std::uint64_t(comm.rank()) * batch;
  for (std::size_t s = 0; s < c.env_shards; ++s)
    for (std::size_t k = 0; k < steps; ++k) {
      const std::size_t first = (s * steps + k) * b;
      fn(s, k, first, base + first);
    }
}

/// The trainers' one-part loss functions (a whole batch in one pass) refuse a config whose
/// workspaces hold one part of a batch, or a data-parallel run.
/// @throw std::logic_error naming `who`
inline void check_one_part(const data_parallel_settings& c, const communicator& comm, const char* who) {
  RLK_EXPECTS(c.gradient_parts() == 1 && comm.size() == 1, std::logic_error, who,
              ": computes a whole batch in one part; with env_shards or gradient_accumulation_steps > 1, or "
              "several ranks, the workspaces hold one part (the training loop adds the parts)");
}

/// The ranks check that they run the same config and that each is one shard.
/// @throw std::invalid_argument on every rank otherwise
inline void join_ranks(communicator& comm, const std::string& hyperparameters, std::size_t env_shards,
                       const char* who) {
  check_same_config(comm, hyperparameters, who);
  RLK_EXPECTS(env_shards == 1, std::invalid_argument, who, ": ", comm.where_am_i(), ": env_shards is ", env_shards,
              "; with ", comm.size(), " ranks every rank is one shard (leave env_shards at 1)");
}

/// A data-parallel checkpoint: rank 0 gathers every rank's own state (`bind_local`, saved to
/// memory; each rank sends its section to rank 0 alone, in chunks: gather_bytes) and writes one
/// file holding the shared state (`bind_shared`), the constant
/// "world_size" and each rank's state as the section "rank/<r>", to `path` or as the next
/// checkpoint of `dir` (rank 0's; null elsewhere). Rank 0's success is broadcast, so every rank
/// throws if the write failed. Returns the path written (rank 0) or "".
template <class BindShared, class BindLocal>
std::string save_distributed_checkpoint(communicator& comm, BindShared&& bind_shared, BindLocal&& bind_local,
                                        const std::string& path, const checkpoint_directory* dir,
                                        std::uint64_t step, const char* who) {
  checkpoint local;
  bind_local(local);
  std::vector<std::vector<std::uint8_t>> parts = comm.gather_bytes(local.save_to_memory(), 0, "checkpoint");
  std::uint64_t ok = 1;
  std::string failure, written;
  if (comm.rank() == 0) {
    try {
      checkpoint c;
      bind_shared(c);
      c.bind_constant("world_size", std::to_string(comm.size()));
      for (std::size_t r = 0; r < parts.size(); ++r)
        c.bind("rank/" + std::to_string(r), serial_backend{}, view<std::uint8_t>(parts[r].data(), parts[r].size()));
      written = dir ? dir->save(c, step) : (c.save(path), path);
    } catch (const std::exception& e) {
      ok = 0;
      failure = e.what();
    }
  }
  comm.broadcast_raw(&ok, sizeof(ok), 0, {}, "checkpoint status");
  if (comm.rank() == 0 && !ok) throw error(failure);
  RLK_EXPECTS(ok, error, who, ": ", comm.where_am_i(), ": rank 0 could not write the checkpoint");
  return written;
}

/// Loads a checkpoint written by save_distributed_checkpoint with the same number of ranks, all
/// or nothing: rank 0 reads the file (no shared file system needed) and splits it; the shared
/// state (with "world_size") is broadcast, and each rank is sent its own section "rank/<r>" alone
/// (scatter_bytes: no rank receives another's envs or replay buffer). Every rank checks the
/// shared state and its section against what it binds; only when every rank accepts does any
/// rank load.
/// @throw checkpoint_error on every rank if rank 0 cannot read or split the file, or if any rank
///        refuses its part (another config or world size, damaged): the refusing rank throws its
///        own reason, the others name it; no rank's state has changed then
template <class BindShared, class BindLocal>
void load_distributed_checkpoint(communicator& comm, BindShared&& bind_shared, BindLocal&& bind_local,
                                 const std::string& path, const char* who) {
  const std::size_t ranks = std::size_t(comm.size()), me = std::size_t(comm.rank());
  std::vector<std::uint8_t> file, shared;
  std::vector<view<const std::uint8_t>> sections;
  std::uint64_t shared_size = 0;
  std::string failure;
  if (me == 0) {
    try {
      file = checkpoint::read_bytes(path);
      checkpoint::split_sections split = checkpoint::split_from_memory(
          file.data(), file.size(), [](const std::string& name) { return name.compare(0, 5, "rank/") != 0; }, path);
      for (std::size_t r = 0; r < ranks; ++r) {
        const auto it = split.payloads.find("rank/" + std::to_string(r));
        if (it == split.payloads.end() || split.payloads.size() != ranks)
          throw checkpoint_error("rlkernels::checkpoint::load: '" + path + "': holds the sections of " +
                                 std::to_string(split.payloads.size()) + " ranks ('rank/<r>'); this run has " +
                                 std::to_string(ranks) + " (a data-parallel checkpoint resumes on as many ranks as "
                                 "wrote it)");
        sections.push_back(it->second);
      }
      shared = std::move(split.kept);
      shared_size = shared.size();
    } catch (const std::exception& e) {
      failure = e.what();
      shared_size = ~0ull;
    }
  }
  comm.broadcast_raw(&shared_size, sizeof(shared_size), 0, {}, "checkpoint shared state size");
  if (shared_size == ~0ull) {
    if (me == 0) throw checkpoint_error(failure);
    throw checkpoint_error(std::string(who) + ": " + comm.where_am_i() + ": rank 0 could not read the checkpoint '" +
                           path + "', or refused it (see its message); nothing was loaded");
  }
  shared.resize(std::size_t(shared_size));
  comm.broadcast_raw(shared.data(), shared.size(), 0, {}, "checkpoint shared state");
  const std::vector<std::uint8_t> mine = comm.scatter_bytes(sections, 0, "checkpoint sections");
  file.clear();
  file.shrink_to_fit();
  checkpoint c, local;
  bind_shared(c);
  c.bind_constant("world_size", std::to_string(ranks));
  bind_local(local);
  const std::string source = path + " (rank " + std::to_string(me) + ")";
  std::string refusal;
  try {
    c.check_from_memory(shared.data(), shared.size(), path);
    local.check_from_memory(mine.data(), mine.size(), source);
  } catch (const checkpoint_error& e) {
    refusal = e.what();
  }
  const std::vector<std::uint64_t> refused =
      all_gather(comm, std::uint64_t(refusal.empty() ? 0 : 1), "checkpoint acceptance");
  if (!refusal.empty()) throw checkpoint_error(refusal);
  std::string others;
  for (std::size_t r = 0; r < ranks; ++r)
    if (refused[r]) others += (others.empty() ? "" : ", ") + std::to_string(r);
  if (!others.empty())
    throw checkpoint_error(std::string(who) + ": " + comm.where_am_i() + ": rank(s) " + others +
                           " refused the checkpoint '" + path + "' (see their messages); no rank loaded it");
  c.load_from_memory(shared.data(), shared.size(), path);
  local.load_from_memory(mine.data(), mine.size(), source);
}

/// A trainer's checkpoint in two halves, the state every rank holds alike (`shared`) and each
/// rank's own (`local`: its envs, its replay buffer), saved and loaded as one process's file or
/// as a data-parallel one (save_distributed_checkpoint). The trainers' save_checkpoint and
/// load_checkpoint are these calls.
template <class Shared, class Local>
class trainer_state {
 public:
  trainer_state(communicator& comm, Shared shared, Local local, const char* who)
      : comm_(comm), shared_(shared), local_(local), who_(who) {}
  /// Writes `path` atomically (rank 0 of a data-parallel run; every rank calls it).
  void save(const std::string& path, std::uint64_t step) {
    if (comm_.size() > 1) {
      save_distributed_checkpoint(comm_, shared_, local_, path, nullptr, step, who_);
      return;
    }
    checkpoint c;
    bind(c);
    c.save(path);
  }
  /// Writes the checkpoint of `step` in `dir`; returns its path (rank 0) or "".
  std::string save(const checkpoint_directory& dir, std::uint64_t step) { return save_to(&dir, step); }
  /// save(dir, step) where only rank 0 of a data-parallel run need have the directory (null elsewhere).
  std::string save_to(const checkpoint_directory* dir, std::uint64_t step) {
    if (comm_.size() > 1) return save_distributed_checkpoint(comm_, shared_, local_, "", dir, step, who_);
    checkpoint c;
    bind(c);
    return dir->save(c, step);
  }
  /// The automatic checkpoint of `step` in the directory `dir` (created on rank 0 only).
  void save_automatic(const std::string& dir, const char* prefix, std::size_t keep, std::uint64_t step) {
    if (comm_.rank() != 0) {
      save_to(nullptr, step);
      return;
    }
    save(checkpoint_directory(dir, prefix, keep), step);
  }
  /// Loads `path` (rank 0 reads it and sends the others the shared state and their sections in a
  /// data-parallel run; all or nothing).
  void load(const std::string& path) {
    if (comm_.size() > 1) {
      load_distributed_checkpoint(comm_, shared_, local_, path, who_);
      return;
    }
    checkpoint c;
    bind(c);
    c.load(path);
  }

 private:
  void bind(checkpoint& c) {
    shared_(c);
    local_(c);
  }
  communicator& comm_;
  Shared shared_;
  Local local_;
  const char* who_;
};

}  // namespace detail
}  // namespace rlkernels
