// rlkernels/algorithms/data_parallel.hpp
// What the data-parallel trainers (PPO, SAC, TD3, DQN) share on top of a communicator: the
// check that every rank runs the same config, the gradient of a batch as a sum of parts (this
// process's env shards times its accumulation micro-batches, then the ranks in rank order), the
// gathered episode statistics, the parameter checksum comparison, and checkpoints in which every
// rank writes its own state to a shard file and rank 0 commits a manifest last
// (docs/distributed.md, docs/checkpoints.md).
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
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

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

/// The shard file of rank `rank` of a data-parallel checkpoint whose manifest is `manifest`:
/// beside it, "<stem>.<token, 16 hex digits>.rank<r>", where `stem` is the file name the save
/// was given (the manifest's own, unless a rotating directory chose another) and `token` the
/// number that save drew.
inline std::string checkpoint_shard_path(const std::string& manifest, const std::string& stem, std::uint64_t token,
                                         std::size_t rank) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(token));
  return (std::filesystem::path(manifest).parent_path() / (stem + "." + hex + ".rank" + std::to_string(rank))).string();
}

/// The step of a rotating directory's checkpoint name "<family><digits>[-<n>].rlkc", or nullopt.
inline std::optional<std::uint64_t> rotating_checkpoint_step(const std::string& name, const std::string& family) {
  const std::string tail = ".rlkc";
  if (family.empty() || name.size() <= family.size() + tail.size() || name.compare(0, family.size(), family) != 0 ||
      name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
    return std::nullopt;
  std::string digits = name.substr(family.size(), name.size() - family.size() - tail.size());
  const std::size_t dash = digits.find('-');
  if (dash != std::string::npos) digits.resize(dash);
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (digits.empty() || digits.size() > 20 || !std::all_of(digits.begin(), digits.end(), digit)) return std::nullopt;
  if (dash != std::string::npos) {
    const std::string n = name.substr(family.size() + dash + 1, name.size() - tail.size() - family.size() - dash - 1);
    if (n.empty() || !std::all_of(n.begin(), n.end(), digit)) return std::nullopt;
  }
  return std::uint64_t(std::strtoull(digits.c_str(), nullptr, 10));
}

/// Rank 0's `text` on every rank (its length, then its bytes).
inline std::string broadcast_text(communicator& comm, std::string text, const char* what) {
  std::uint64_t size = text.size();
  comm.broadcast_raw(&size, sizeof(size), 0, {}, what);
  text.resize(std::size_t(size));
  if (size) comm.broadcast_raw(&text[0], text.size(), 0, {}, what);
  return text;
}

/// The last 8 bytes of the checkpoint file at `path`: its CRC-64 (io/checkpoint_format.hpp), which
/// a manifest records to tell this shard from another save's.
/// @throw rlkernels::error if the file cannot be read
inline std::uint64_t checkpoint_file_checksum(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  std::uint8_t tail[8];
  const bool ok = file && std::fseek(file, -8, SEEK_END) == 0 && std::fread(tail, 1, 8, file) == 8;
  if (file) std::fclose(file);
  RLK_EXPECTS(ok, error, "rlkernels::checkpoint: cannot read the checksum of '", path, "'");
  return get_le<std::uint64_t>(tail);
}

/// A save's token: a number no earlier save to the same path drew (the clock, the process and the
/// step), so that a new save's shards never replace the shards a committed manifest names.
inline std::uint64_t checkpoint_token(std::uint64_t step) {
  const std::uint64_t parts[3] = {std::uint64_t(std::chrono::system_clock::now().time_since_epoch().count()),
                                  std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()), step};
  std::uint64_t h = fnv1a(parts, sizeof(parts));
#if defined(__unix__) || defined(__APPLE__)
  const long pid = long(::getpid());
  h = fnv1a(&pid, sizeof(pid), h);
#endif
  return h;
}

/// After a committed save of the stem `stem` with `token`: removes this rank's (`rank`) shard
/// files beside the manifest `manifest` that no manifest can name any more. Without a rotating
/// directory (`family` ""): the older saves' shards of `stem` (another token). In a rotating
/// directory whose checkpoint names start with `family` ("<prefix>-"), given the names of the
/// checkpoints it keeps (`live`): the shards of steps no kept checkpoint has (rotated away, or
/// an interrupted save's), and, when this save's checkpoint is the only one of its step, the
/// older shards of its stem. Best effort: a file that stays is harmless. Each rank removes its
/// own, so that this works without a shared file system.
inline void remove_stale_shards(const std::string& manifest, const std::string& stem, std::uint64_t token,
                                std::size_t rank, const std::string& family, const std::vector<std::string>& live) {
  namespace fs = std::filesystem;
  const fs::path m(manifest);
  const fs::path dir = m.parent_path().empty() ? fs::path(".") : m.parent_path();
  const std::string suffix = ".rank" + std::to_string(rank);
  const std::optional<std::uint64_t> my_step = rotating_checkpoint_step(stem, family);
  const auto kept_of_step = [&](std::uint64_t step) {
    std::size_t n = 0;
    for (const std::string& name : live) n += rotating_checkpoint_step(name, family) == step;
    return n;
  };
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= suffix.size() + 17 || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string rest = name.substr(0, name.size() - suffix.size());
    const std::string hex = rest.substr(rest.size() - 16), owner = rest.substr(0, rest.size() - 17);
    if (rest[rest.size() - 17] != '.' || !std::all_of(hex.begin(), hex.end(), [](char c) {
          return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        }))
      continue;
    const bool older = owner == stem && std::strtoull(hex.c_str(), nullptr, 16) != token;
    if (family.empty()) {
      if (older) stale.push_back(it->path());
      continue;
    }
    const std::optional<std::uint64_t> step = rotating_checkpoint_step(owner, family);
    if (!step || owner.find('-', family.size()) != std::string::npos) continue;  // not a stem this directory gives
    const std::size_t kept = kept_of_step(*step);
    if (kept == 0 || (older && my_step == step && kept == 1)) stale.push_back(it->path());
  }
  for (const fs::path& p : stale) fs::remove(p, ec);
}

/// A data-parallel checkpoint, written by every rank in parallel: each rank writes its own state
/// (`bind_local`: its envs, its replay buffer) to a shard file of its own, streamed from its
/// memory as a one-process checkpoint is (no copy, nothing sent to another rank); when every
/// shard is written, rank 0 commits the manifest at `path` (or as the next checkpoint of `dir`,
/// rank 0's; null elsewhere): the shared state (`bind_shared`), the constant "world_size" and the
/// section "shards" (uint8: this save's token, the number of ranks R, each rank's shard size and
/// CRC-64, all little-endian uint64, then the shards' stem). Without a committed manifest the
/// checkpoint does not exist, and a
/// manifest only ever names shards that were written before it: a crash at any point leaves the
/// previous checkpoint (its manifest names its own shards, which the new save does not touch)
/// or the new one. After the commit each rank removes its shards that no manifest names any
/// more (an older save of the same path, or checkpoints `dir` rotated away). Shards lie beside
/// the manifest: "<stem>.<token>.rank<r>" (checkpoint_shard_path; the stem is the manifest's
/// file name as given, dir->path_for(step)'s for a directory). If any rank fails, every rank
/// throws and no manifest is written. Returns the manifest's path (rank 0) or "".
template <class BindShared, class BindLocal>
std::string save_distributed_checkpoint(communicator& comm, BindShared&& bind_shared, BindLocal&& bind_local,
                                        const std::string& path, const checkpoint_directory* dir,
                                        std::uint64_t step, const char* who) {
  const std::size_t ranks = std::size_t(comm.size()), me = std::size_t(comm.rank());
  std::uint64_t plan[2] = {0, 0};  // the token, and whether `dir` rotates the manifests
  std::string manifest;
  if (me == 0) {
    manifest = dir ? dir->path_for(step) : path;
    plan[0] = checkpoint_token(step);
    plan[1] = dir != nullptr;
  }
  comm.broadcast_raw(plan, sizeof(plan), 0, {}, "checkpoint token");
  manifest = broadcast_text(comm, manifest, "checkpoint path");
  RLK_EXPECTS(!manifest.empty(), std::invalid_argument, who, ": ", comm.where_am_i(),
              ": the checkpoint's path is empty");
  // Every rank writes its shard (atomically: checkpoint::save), streamed from its own memory.
  const std::string stem = std::filesystem::path(manifest).filename().string();
  const std::string shard = checkpoint_shard_path(manifest, stem, plan[0], me);
  std::uint64_t entry[3] = {1, 0, 0};  // written, bytes, CRC-64
  std::string failure;
  try {
    checkpoint local;
    bind_local(local);
    local.save(shard);
    entry[1] = local.file_size();
    entry[2] = checkpoint_file_checksum(shard);
  } catch (const std::exception& e) {
    entry[0] = 0;
    failure = e.what();
  }
  std::vector<std::uint64_t> entries(3 * ranks);
  comm.all_gather_raw(entry, sizeof(entry), entries.data(), "checkpoint shards");
  std::string failed;
  for (std::size_t r = 0; r < ranks; ++r)
    if (!entries[3 * r]) failed += (failed.empty() ? "" : ", ") + std::to_string(r);
  std::error_code ignored;
  if (!failed.empty()) {
    std::filesystem::remove(shard, ignored);  // no manifest will name it
    if (!entry[0]) throw error(failure);
    throw error(std::string(who) + ": " + comm.where_am_i() + ": rank(s) " + failed +
                " could not write their shard of the checkpoint '" + manifest +
                "' (see their messages); no checkpoint was written");
  }
  // Rank 0 commits the manifest, the last file of the checkpoint.
  std::uint64_t ok = 1;
  std::string written, live;
  if (me == 0) {
    try {
      std::vector<std::uint8_t> table;
      put_le<std::uint64_t>(table, plan[0]);
      put_le<std::uint64_t>(table, ranks);
      for (std::size_t r = 0; r < ranks; ++r) {
        put_le<std::uint64_t>(table, entries[3 * r + 1]);
        put_le<std::uint64_t>(table, entries[3 * r + 2]);
      }
      table.insert(table.end(), stem.begin(), stem.end());
      checkpoint c;
      bind_shared(c);
      c.bind_constant("world_size", std::to_string(ranks));
      c.bind("shards", serial_backend{}, view<std::uint8_t>(table.data(), table.size()));
      written = dir ? dir->save(c, step) : (c.save(manifest), manifest);
      if (dir)
        for (const std::string& p : dir->list()) live += std::filesystem::path(p).filename().string() + "\n";
    } catch (const std::exception& e) {
      ok = 0;
      failure = e.what();
    }
  }
  comm.broadcast_raw(&ok, sizeof(ok), 0, {}, "checkpoint status");
  if (!ok) {
    std::filesystem::remove(shard, ignored);
    if (me == 0) throw error(failure);
    throw error(std::string(who) + ": " + comm.where_am_i() + ": rank 0 could not write the checkpoint's manifest '" +
                manifest + "' (see its message); no checkpoint was written");
  }
  // Committed: each rank removes its own shards that no manifest names any more.
  std::vector<std::string> names;
  std::string family;
  if (plan[1]) {
    live = broadcast_text(comm, live, "checkpoints kept");
    for (std::size_t at = 0, end; (end = live.find('\n', at)) != std::string::npos; at = end + 1)
      names.push_back(live.substr(at, end - at));
    family = stem.substr(0, stem.rfind('-') + 1);  // "<prefix>-"
  }
  remove_stale_shards(manifest, stem, plan[0], me, family, names);
  return written;
}

/// Loads a data-parallel checkpoint with the same number of ranks, all or nothing. Rank 0 reads
/// the file at `path` (the path every rank uses is rank 0's) and broadcasts its shared state
/// (with "world_size"). A manifest (save_distributed_checkpoint) names each rank's shard: rank r
/// receives its own entry (token, size, checksum) and reads its shard itself, beside the manifest
/// (each rank's file system must hold its own shard: a shared one, or the disks of the machines
/// that wrote them); a shard that is missing, of another size or checksum (another save's) is
/// refused. A single file as earlier versions wrote it (each rank's state in a section
/// "rank/<r>") is split by rank 0, which sends each rank its own section alone (scatter_bytes).
/// Every rank checks the shared state and its own state against what it binds; only when every
/// rank accepts does any rank load.
/// @throw checkpoint_error on every rank if rank 0 cannot read or split the file, or if any rank
///        refuses its part (another config or world size, a missing or damaged shard): the
///        refusing rank throws its own reason, the others name it; no rank's state has changed then
template <class BindShared, class BindLocal>
void load_distributed_checkpoint(communicator& comm, BindShared&& bind_shared, BindLocal&& bind_local,
                                 const std::string& path, const char* who) {
  const std::size_t ranks = std::size_t(comm.size()), me = std::size_t(comm.rank());
  std::vector<std::uint8_t> file, shared;
  std::vector<view<const std::uint8_t>> sections;
  std::vector<std::vector<std::uint8_t>> shard_entries;  // rank 0, a manifest: each rank's token, size, checksum, stem
  std::uint64_t head[2] = {0, 0};           // the shared state's size (~0: refused), sharded (1) or not
  std::string failure;
  if (me == 0) {
    try {
      file = checkpoint::read_bytes(path);
      bool sharded = false;
      checkpoint::split_sections split = checkpoint::split_from_memory(
          file.data(), file.size(),
          [&sharded](const std::string& name) {
            if (name == "shards") sharded = true;
            return name != "shards" && name.compare(0, 5, "rank/") != 0;
          },
          path);
      if (sharded) {
        const view<const std::uint8_t> table = split.payloads.at("shards");
        const std::string prefix = "rlkernels::checkpoint::load: '" + path + "': ";
        const std::uint64_t held = table.size() >= 16 ? get_le<std::uint64_t>(table.data() + 8) : 0;
        if (split.payloads.size() != 1 || table.size() < 16 || held == 0 || held > (table.size() - 16) / 16 ||
            table.size() - 16 - 16 * held == 0)
          throw checkpoint_error(prefix + "corrupt: a manifest with a shard table of " +
                                 std::to_string(table.size()) + " bytes and " +
                                 std::to_string(split.payloads.size() - 1) + " 'rank/<r>' sections");
        if (held != ranks)
          throw checkpoint_error(prefix + "holds the shards of " + std::to_string(held) + " ranks; this run has " +
                                 std::to_string(ranks) +
                                 " (a data-parallel checkpoint resumes on as many ranks as wrote it)");
        const std::uint8_t* stem = table.data() + 16 + 16 * ranks;
        for (std::size_t r = 0; r < ranks; ++r) {
          std::vector<std::uint8_t> e(table.data(), table.data() + 8);  // token, size, checksum, stem
          e.insert(e.end(), table.data() + 16 + 16 * r, table.data() + 32 + 16 * r);
          e.insert(e.end(), stem, table.data() + table.size());
          shard_entries.push_back(std::move(e));
        }
        for (const auto& e : shard_entries) sections.push_back(view<const std::uint8_t>(e.data(), e.size()));
      } else {
        for (std::size_t r = 0; r < ranks; ++r) {
          const auto it = split.payloads.find("rank/" + std::to_string(r));
          if (it == split.payloads.end() || split.payloads.size() != ranks)
            throw checkpoint_error("rlkernels::checkpoint::load: '" + path + "': holds the sections of " +
                                   std::to_string(split.payloads.size()) + " ranks ('rank/<r>'); this run has " +
                                   std::to_string(ranks) + " (a data-parallel checkpoint resumes on as many ranks as "
                                   "wrote it)");
          sections.push_back(it->second);
        }
      }
      shared = std::move(split.kept);
      head[0] = shared.size();
      head[1] = sharded;
    } catch (const std::exception& e) {
      failure = e.what();
      head[0] = ~0ull;
    }
  }
  comm.broadcast_raw(head, sizeof(head), 0, {}, "checkpoint shared state size");
  if (head[0] == ~0ull) {
    if (me == 0) throw checkpoint_error(failure);
    throw checkpoint_error(std::string(who) + ": " + comm.where_am_i() + ": rank 0 could not read the checkpoint '" +
                           path + "', or refused it (see its message); nothing was loaded");
  }
  const std::string manifest = broadcast_text(comm, me == 0 ? path : std::string(), "checkpoint path");
  shared.resize(std::size_t(head[0]));
  comm.broadcast_raw(shared.data(), shared.size(), 0, {}, "checkpoint shared state");
  std::vector<std::uint8_t> mine = comm.scatter_bytes(sections, 0, "checkpoint sections");
  file.clear();
  file.shrink_to_fit();
  checkpoint c, local;
  bind_shared(c);
  c.bind_constant("world_size", std::to_string(ranks));
  bind_local(local);
  std::string source = manifest + " (rank " + std::to_string(me) + ")";
  std::string refusal;
  try {
    c.check_from_memory(shared.data(), shared.size(), manifest);
    if (head[1]) {
      // This rank's shard, checked against the manifest's entry: a shard of another save (one
      // interrupted after its shards, before its manifest) is never taken for this one.
      RLK_EXPECTS(mine.size() > 24, checkpoint_error, "rlkernels::checkpoint::load: '", manifest,
                  "': corrupt shard entry for rank ", me);
      const std::uint64_t token = get_le<std::uint64_t>(mine.data()), bytes = get_le<std::uint64_t>(mine.data() + 8),
                          crc = get_le<std::uint64_t>(mine.data() + 16);
      const std::string stem(mine.begin() + 24, mine.end());
      RLK_EXPECTS(stem.find('/') == std::string::npos && stem != "." && stem != "..", checkpoint_error,
                  "rlkernels::checkpoint::load: '", manifest, "': corrupt shard name '", stem, "'");
      source = checkpoint_shard_path(manifest, stem, token, me);
      std::vector<std::uint8_t> shard;
      try {
        shard = checkpoint::read_bytes(source);
      } catch (const checkpoint_error& e) {
        throw checkpoint_error(std::string(who) + ": " + comm.where_am_i() + ": the shard of rank " +
                               std::to_string(me) + " of the checkpoint '" + manifest +
                               "' is missing or unreadable (an incomplete checkpoint, or a file system this rank "
                               "does not share): " + e.what());
      }
      const std::uint64_t got = shard.size() >= 8 ? get_le<std::uint64_t>(shard.data() + shard.size() - 8) : 0;
      if (shard.size() != bytes || got != crc)
        throw checkpoint_error(std::string(who) + ": " + comm.where_am_i() + ": the shard '" + source +
                               "' does not belong to the checkpoint '" + manifest + "': " +
                               std::to_string(shard.size()) + " bytes with checksum " + std::to_string(got) +
                               ", the manifest records " + std::to_string(bytes) + " bytes with checksum " +
                               std::to_string(crc));
      mine = std::move(shard);
    }
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
                           " refused the checkpoint '" + manifest + "' (see their messages); no rank loaded it");
  c.load_from_memory(shared.data(), shared.size(), manifest);
  local.load_from_memory(mine.data(), mine.size(), source);
}

/// A trainer's checkpoint in two halves, the state every rank holds alike (`shared`) and each
/// rank's own (`local`: its envs, its replay buffer), saved and loaded as one process's file or
/// as a data-parallel manifest and shards (save_distributed_checkpoint). The trainers' save_checkpoint and
/// load_checkpoint are these calls.
template <class Shared, class Local>
class trainer_state {
 public:
  trainer_state(communicator& comm, Shared shared, Local local, const char* who)
      : comm_(comm), shared_(shared), local_(local), who_(who) {}
  /// Writes `path` atomically (a data-parallel run: every rank calls it, writes its shard beside
  /// `path`, and rank 0 commits the manifest `path` last).
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
  /// Loads `path` (a data-parallel run: rank 0 reads the manifest and sends the others the shared
  /// state, each rank reads its own shard; all or nothing).
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
