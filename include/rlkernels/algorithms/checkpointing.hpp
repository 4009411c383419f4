// rlkernels/algorithms/checkpointing.hpp
// How the trainers save, load and rotate checkpoints: each trainer binds its state into a
// rlkernels::checkpoint (bind_checkpoint), and these three functions do the rest.
#pragma once

#include "../io/checkpoint.hpp"

#include <cstdint>
#include <string>

namespace rlkernels {
namespace detail {

/// Binds `trainer`'s state and writes it atomically to `path`.
template <class Trainer>
void save_trainer_checkpoint(Trainer& trainer, const std::string& path) {
  checkpoint c;
  trainer.bind_checkpoint(c);
  c.save(path);
}

/// Binds `trainer`'s state and loads `path` into it (all or nothing).
template <class Trainer>
void load_trainer_checkpoint(Trainer& trainer, const std::string& path) {
  checkpoint c;
  trainer.bind_checkpoint(c);
  c.load(path);
}

/// Writes dir/<prefix>-<step>.rlkc and keeps the newest `keep`.
template <class Trainer>
std::string auto_checkpoint(Trainer& trainer, const std::string& dir, const std::string& prefix, std::size_t keep,
                            std::uint64_t step) {
  checkpoint c;
  trainer.bind_checkpoint(c);
  checkpoint_directory d(dir, prefix, keep);
  return d.save(c, step);
}

}  // namespace detail
}  // namespace rlkernels
