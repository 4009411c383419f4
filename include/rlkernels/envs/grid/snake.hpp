// rlkernels/envs/grid/snake.hpp
// Snake as Jumanji's Snake-v1 (jumanji/environments/routing/snake/env.py, jumanji 1.1.2), step for
// step: a snake on a 12x12 board eats fruit and grows; the episode ends when it leaves the board,
// bites itself, or fills the board. Also provides the legal-action mask (see vec_env::action_masks).
#pragma once

#include "../../core/config.hpp"
#include "../env.hpp"

#include <cstdint>
#include <type_traits>

namespace rlkernels {

/// @brief Jumanji's Snake (Snake-v1: 12x12 board, time limit 4000).
///
/// Actions: 0 up (row - 1), 1 right (col + 1), 2 down (row + 1), 3 left (col - 1). A move is legal
/// when the new head cell is on the board and is empty or the current tail (which moves away in
/// the same step). There is no separate rule against reversing: a snake of length 2 may move onto
/// its tail, as in Jumanji; longer snakes cannot reverse because the cell behind the head is body.
///
/// Dynamics (Jumanji's step): the head moves; if it lands on the fruit the snake grows by one (the
/// tail stays) and a new fruit is placed uniformly among the free cells, else every body cell ages
/// by one and the tail cell empties. Reward 1 per fruit, else 0. `terminated` when the move was
/// illegal (wall or body) or the snake now fills the board. The time limit (4000 steps in Jumanji,
/// where it also ends the episode) is vec_env's truncation via Params::max_episode_steps.
/// Like Jumanji, a trapped snake is not ended until it makes its (necessarily illegal) next move.
///
/// Observation: the board as [MaxRows, MaxCols, 5] (row-major, channels last), Jumanji's grid:
/// - 0 body:  1 on every snake cell (head and tail included), else 0
/// - 1 head:  1 on the head cell
/// - 2 tail:  1 on the tail cell (the head cell when the length is 1)
/// - 3 fruit: 1 on the fruit cell
/// - 4 order: body age, b / max(b) with b = length on the head down to 1 on the tail (so 1 at the
///            head, 1/length at the tail), 0 off the snake. Computed as b * (1 / max b), the way
///            XLA evaluates Jumanji's division (one ulp from b / max b for some values, e.g. 5/6).
/// On a board smaller than MaxRows x MaxCols (Params::num_rows/num_cols) the board occupies the
/// top-left corner and the other cells are 0 in every channel.
///
/// After an illegal move the state is Jumanji's: the head is off the board (row or column -1, or
/// num_rows / num_cols) or on a body cell. Its observation follows JAX's indexing as Jumanji's
/// does: an index of -1 wraps to the last row/column, an index past the end is dropped.
///
/// Randomness: reset draws the head cell with uniform_int(rows * cols), then the fruit; a fruit is
/// the k-th free cell in row-major order with k = uniform_int(number of free cells). When no cell
/// is free (the board is full: the episode has ended) there is no draw and the fruit goes to cell
/// (0, 0), which is where Jumanji's sampling from an all-zero distribution puts it.
///
/// @tparam Scalar observation and reward type (float or double)
/// @tparam MaxRows, MaxCols largest board (and the observation's shape); Params picks the board
template <class Scalar = float, int MaxRows = 12, int MaxCols = 12>
struct snake {
  static_assert(MaxRows >= 1 && MaxCols >= 1 && MaxRows <= 126 && MaxCols <= 126,
                "rlkernels::snake: MaxRows and MaxCols must be in [1, 126]");

  using scalar_type = Scalar;  ///< observation and reward type
  static constexpr int max_rows = MaxRows;                            ///< board rows the observation holds
  static constexpr int max_cols = MaxCols;                            ///< board columns the observation holds
  static constexpr int channels = 5;                                  ///< body, head, tail, fruit, order
  static constexpr int observation_size = MaxRows * MaxCols * channels;  ///< 720 for 12x12
  static constexpr action_kind action_space = action_kind::discrete;  ///< discrete
  static constexpr int num_actions = 4;                               ///< up, right, down, left

  /// Settings (defaults: Jumanji's Snake-v1).
  struct Params {
    int num_rows = MaxRows;         ///< board rows, in [1, MaxRows] (values outside are clamped)
    int num_cols = MaxCols;         ///< board columns, in [1, MaxCols] (values outside are clamped)
    int max_episode_steps = 4000;   ///< time limit (truncation); 0 = none
  };

  /// Body age of a cell: 0 empty, 1 tail ... length at the head.
  using cell_type = std::conditional_t<(MaxRows * MaxCols <= 255), std::uint8_t, std::uint16_t>;

  /// The game state (Jumanji's body_state, head, fruit and length; body and tail follow from them).
  struct State {
    cell_type body[MaxRows][MaxCols];  ///< body age per cell (Jumanji's body_state)
    std::int16_t head_row;             ///< head row; off the board (-1 or num_rows) after an illegal move
    std::int16_t head_col;             ///< head column; off the board (-1 or num_cols) after an illegal move
    std::int16_t fruit_row;            ///< fruit row
    std::int16_t fruit_col;            ///< fruit column
    std::int16_t length;               ///< snake cells
  };

  /// Board rows and columns in use (Params clamped to [1, Max]).
  RLK_HOST_DEVICE static constexpr int rows(const Params& p) {
    return p.num_rows < 1 ? 1 : (p.num_rows > MaxRows ? MaxRows : p.num_rows);
  }
  /// Board columns in use: Params::num_cols clamped to [1, MaxCols].
  RLK_HOST_DEVICE static constexpr int cols(const Params& p) {
    return p.num_cols < 1 ? 1 : (p.num_cols > MaxCols ? MaxCols : p.num_cols);
  }

  /// Row and column change of each action (Jumanji's MOVES).
  RLK_HOST_DEVICE static constexpr int move_row(int a) { return a == 0 ? -1 : (a == 2 ? 1 : 0); }
  /// Column change of action a: +1 right (1), -1 left (3), else 0.
  RLK_HOST_DEVICE static constexpr int move_col(int a) { return a == 1 ? 1 : (a == 3 ? -1 : 0); }

  /// Jumanji's reset: a uniform head cell, length 1, then a fruit on a free cell.
  template <class Gen>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Gen& gen) {
    const int R = rows(p), C = cols(p);
    for (int r = 0; r < MaxRows; ++r)
      for (int c = 0; c < MaxCols; ++c) s.body[r][c] = 0;
    const int cell = int(gen.uniform_int(std::uint32_t(R * C)));
    s.head_row = std::int16_t(cell / C);
    s.head_col = std::int16_t(cell % C);
    s.body[s.head_row][s.head_col] = 1;
    s.length = 1;
    place_fruit(R, C, s, gen);
  }

  /// @brief Writes the 4 legal-move flags (1 = legal) of state `s` to `mask` (Jumanji's
  /// action_mask): the new head cell must be on the board and empty or the tail.
  RLK_HOST_DEVICE static void action_mask(const Params& p, const State& s, std::uint8_t* mask) {
    for (int a = 0; a < num_actions; ++a) mask[a] = is_legal(p, s, a) ? 1 : 0;
  }

  /// One move (Jumanji's step). An action outside [0, 4) counts as an illegal move that leaves
  /// the state as it is.
  template <class Gen>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, std::int32_t action, Gen& gen) {
    if (action < 0 || action >= num_actions) return {Scalar(0), true};
    const int R = rows(p), C = cols(p);
    const bool legal = is_legal(p, s, action);
    const int nr = s.head_row + move_row(action);
    const int nc = s.head_col + move_col(action);
    const bool eaten = nr == s.fruit_row && nc == s.fruit_col;
    if (eaten) {
      ++s.length;
    } else {
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) s.body[r][c] = cell_type(s.body[r][c] > 0 ? s.body[r][c] - 1 : 0);
    }
    // Jumanji writes body_state.at[head].set(length) whether or not the move was legal; with JAX's
    // indexing an index of -1 wraps and one past the end is dropped.
    const int wr = wrap(nr, R), wc = wrap(nc, C);
    if (wr >= 0 && wc >= 0) s.body[wr][wc] = cell_type(s.length);
    s.head_row = std::int16_t(nr);
    s.head_col = std::int16_t(nc);
    if (eaten) place_fruit(R, C, s, gen);
    // After a legal move the snake has `length` cells, so it fills the board when length == R * C.
    const bool full = legal && s.length == R * C;
    return {eaten ? Scalar(1) : Scalar(0), !legal || full};
  }

  /// Writes the [MaxRows, MaxCols, 5] grid described in the class comment.
  RLK_HOST_DEVICE static void observe(const Params& p, const State& s, Scalar* obs) {
    const int R = rows(p), C = cols(p);
    for (int k = 0; k < observation_size; ++k) obs[k] = Scalar(0);
    int top = 1;  // Jumanji's max(1, body_state.max())
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) top = s.body[r][c] > top ? int(s.body[r][c]) : top;
    const Scalar inv = Scalar(1) / Scalar(top);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) {
        const int b = s.body[r][c];
        Scalar* o = obs + (r * MaxCols + c) * channels;
        o[0] = b > 0 ? Scalar(1) : Scalar(0);
        o[2] = b == 1 ? Scalar(1) : Scalar(0);
        o[4] = Scalar(b) * inv;
      }
    const int hr = wrap(s.head_row, R), hc = wrap(s.head_col, C);
    if (hr >= 0 && hc >= 0) obs[(hr * MaxCols + hc) * channels + 1] = Scalar(1);
    obs[(s.fruit_row * MaxCols + s.fruit_col) * channels + 3] = Scalar(1);
  }

private:
  /// JAX's index normalisation for a coordinate at most one off the board: -1 -> n - 1, and
  /// n -> -1 (the write is dropped).
  RLK_HOST_DEVICE static constexpr int wrap(int i, int n) { return i < 0 ? i + n : (i >= n ? -1 : i); }

  RLK_HOST_DEVICE static bool is_legal(const Params& p, const State& s, int a) {
    const int nr = s.head_row + move_row(a), nc = s.head_col + move_col(a);
    if (nr < 0 || nr >= rows(p) || nc < 0 || nc >= cols(p)) return false;
    return s.body[nr][nc] <= 1;  // empty, or the tail that moves away
  }

  /// Puts the fruit on the k-th free cell (row-major) with k = uniform_int(free cells), after the
  /// body has been updated; cell (0, 0) without a draw when the board is full.
  template <class Gen>
  RLK_HOST_DEVICE static void place_fruit(int R, int C, State& s, Gen& gen) {
    int free_cells = 0;
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) free_cells += s.body[r][c] == 0;
    s.fruit_row = 0;
    s.fruit_col = 0;
    if (free_cells == 0) return;
    int k = int(gen.uniform_int(std::uint32_t(free_cells)));
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c)
        if (s.body[r][c] == 0 && k-- == 0) {
          s.fruit_row = std::int16_t(r);
          s.fruit_col = std::int16_t(c);
          return;
        }
  }
};

}  // namespace rlkernels
