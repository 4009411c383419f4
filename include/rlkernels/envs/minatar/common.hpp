// rlkernels/envs/minatar/common.hpp
// What the MinAtar games share (Young & Tian 2019, the `minatar` package): the 10x10 grid, the
// 6-action set, sticky actions, and how a 10x10xC boolean game state becomes an observation.
//
// Randomness: every game draws through a generator `Gen` with the two calls MinAtar's numpy
// RandomState makes, in the same order as the reference:
//   gen.template uniform<double>()  <->  random.rand()            (one double in [0, 1))
//   gen.uniform_int(n)              <->  random.randint(low, low + n) - low
// vec_env passes its Philox rng; tests pass a generator that replays the reference's recorded draws.
#pragma once

#include "../../core/config.hpp"

#include <cstdint>

namespace rlkernels {

/// MinAtar's full action set (the index is the action id, as in minatar.Environment).
enum class minatar_action : std::int32_t {
  noop = 0,   ///< 'n'
  left = 1,   ///< 'l'
  up = 2,     ///< 'u'
  right = 3,  ///< 'r'
  down = 4,   ///< 'd'
  fire = 5,   ///< 'f'
};

/// @brief Which actions a MinAtar env takes: all six (minatar's `MinAtar/<Game>-v0`) or the
/// game's minimal set (`MinAtar/<Game>-v1`, gymnax's default), mapped to full-set ids by
/// `Env::full_action(a)`.
enum class minatar_action_set { full, minimal };

namespace detail {

/// Cells per side of every MinAtar grid.
inline constexpr int minatar_grid = 10;

/// Index of cell (y, x) in channel c of an observation: [10, 10, C] (MinAtar's state(), channels
/// last) or [C, 10, 10] when `channels_first` (the layout a convolutional policy wants, NCHW).
RLK_HOST_DEVICE inline int minatar_index(bool channels_first, int channels, int y, int x, int c) {
  return channels_first ? (c * minatar_grid + y) * minatar_grid + x : (y * minatar_grid + x) * channels + c;
}

/// Sets every element of an observation of C channels to 0.
template <class Scalar>
RLK_HOST_DEVICE inline void minatar_clear(Scalar* obs, int channels) {
  for (int i = 0; i < minatar_grid * minatar_grid * channels; ++i) obs[i] = Scalar(0);
}

/// MinAtar's sticky actions (minatar.Environment.act): one rand() per step, always drawn; below
/// `p` the previous action repeats. Returns the action the game executes and remembers it.
template <class Gen>
RLK_HOST_DEVICE inline std::int32_t minatar_sticky(double p, std::int32_t action, std::int32_t& last_action, Gen& gen) {
  if (gen.template uniform<double>() < p) action = last_action;
  last_action = action;
  return action;
}

}  // namespace detail
}  // namespace rlkernels
