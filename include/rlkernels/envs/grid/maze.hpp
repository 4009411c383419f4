// rlkernels/envs/grid/maze.hpp
// A MiniGrid-style navigation task in a fresh random perfect maze per episode: the agent turns and
// walks (or moves in four directions) to a goal, seeing an egocentric window or the whole grid.
// Reward 1 - 0.9 * steps / max_episode_steps on reaching the goal, as MiniGrid's _reward().
#pragma once

#include "../../core/config.hpp"
#include "../env.hpp"

#include <cstdint>

namespace rlkernels {

/// @brief How the maze agent acts.
enum class maze_actions {
  turn,  ///< MiniGrid's navigation actions: 0 turn left, 1 turn right, 2 forward
  move4  ///< 0 east (+x), 1 south (+y), 2 west, 3 north: face that way, then step forward
};

/// View size that makes `maze` observe the whole grid instead of an egocentric window.
inline constexpr int maze_full_view = 0;

/// @brief Navigation in a random perfect maze (one path between any two cells), regenerated at
/// every reset with a randomized depth-first search (the recursive backtracker, run iteratively).
///
/// Grid: `Params::size` x `Params::size` cells (odd, 5..MaxSize); x is the column, y the row, y
/// grows downwards (MiniGrid's convention). Rooms sit at odd (x, y), the border is wall, and the
/// cells between rooms are wall or passage. Directions are MiniGrid's: 0 east (+x), 1 south (+y),
/// 2 west, 3 north.
///
/// Observation (channels last, binary, then a one-hot of the agent's direction):
/// - egocentric (`View` > 0): [View, View, 2] indexed [row][col][channel], channel 0 wall, 1 goal.
///   As MiniGrid's agent view, the agent sits at row View-1, column View/2, facing row 0; the cell
///   ahead is (View-2, View/2) and columns right of View/2 are to its right. Cells outside the
///   grid read as wall. Walls do not hide what lies behind them (MiniGrid's see_through_walls).
/// - full (`View` == maze_full_view): [MaxSize, MaxSize, 3] indexed [y][x][channel], channel 0
///   wall (cells beyond `size` are wall), 1 goal, 2 agent.
/// - then 4 values: the agent's direction, one-hot.
///
/// Actions: see maze_actions. Moving into a wall leaves the agent in place. Entering the goal ends
/// the episode (terminated) with reward 1 - 0.9 * steps / max_episode_steps, where steps counts
/// this step (1 when max_episode_steps is 0); every other step gives 0. The time limit
/// (truncation) is vec_env's, from Params::max_episode_steps.
///
/// @tparam Scalar observation and reward type (float or double)
/// @tparam MaxSize largest grid side (odd, >= 5); fixes observation_size and the State's size
/// @tparam View side of the egocentric window (odd, >= 3), or maze_full_view
/// @tparam Actions turn (3 actions, MiniGrid's) or move4 (4 actions)
template <class Scalar = float, int MaxSize = 25, int View = 7, maze_actions Actions = maze_actions::turn>
struct maze {
  static_assert(MaxSize >= 5 && MaxSize % 2 == 1 && MaxSize <= 255, "rlkernels::maze: MaxSize must be odd, 5..255");
  static_assert(View == maze_full_view || (View >= 3 && View % 2 == 1), "rlkernels::maze: View must be odd >= 3, or 0 (full)");

  using scalar_type = Scalar;  ///< observation and reward type
  static constexpr int max_size = MaxSize;                     ///< largest grid side
  static constexpr bool full_view = View == maze_full_view;  ///< true: the whole grid is observed (View == maze_full_view)
  static constexpr int channels = full_view ? 3 : 2;           ///< wall, goal (, agent)
  static constexpr int view_side = full_view ? MaxSize : View;  ///< side of the observed square
  static constexpr int observation_size = view_side * view_side * channels + 4;  ///< view cells x channels, then the direction one-hot (4)
  static constexpr action_kind action_space = action_kind::discrete;  ///< discrete
  static constexpr int num_actions = Actions == maze_actions::turn ? 3 : 4;  ///< 3 (turn) or 4 (move4)

  /// Rooms per side of the largest maze, and in all.
  static constexpr int max_rooms_side = (MaxSize - 1) / 2;
  static constexpr int max_rooms = max_rooms_side * max_rooms_side;  ///< rooms of the largest maze (reset's stack size)
  /// 32-bit words of the wall bitmap (bit y * MaxSize + x of the words, low bit first).
  static constexpr int wall_words = (MaxSize * MaxSize + 31) / 32;

  /// Settings. Change max_episode_steps with size: its default is MiniGrid-like, 4 * size * size.
  struct Params {
    int size = MaxSize;                             ///< grid side, odd, in [5, MaxSize] (see grid_size)
    int max_episode_steps = 4 * MaxSize * MaxSize;  ///< time limit; 0 = none (a success then returns 1)
    bool random_start_goal = true;  ///< start, goal and direction uniform over the rooms (goal != start);
                                    ///< false: start (1, 1) facing east, goal (size-2, size-2)
  };

  /// One episode: the maze and where the agent and goal are.
  struct State {
    std::uint32_t walls[wall_words];  ///< wall bitmap over MaxSize x MaxSize (cells beyond size: wall)
    std::int32_t steps;               ///< steps taken this episode
    std::uint8_t x;                   ///< agent column, in [1, size - 2]
    std::uint8_t y;                   ///< agent row, in [1, size - 2]
    std::uint8_t dir;                 ///< agent direction: 0 east (+x), 1 south (+y), 2 west, 3 north
    std::uint8_t goal_x;              ///< goal column
    std::uint8_t goal_y;              ///< goal row
  };

  /// The grid side actually used: params.size made odd and clamped to [5, MaxSize].
  RLK_HOST_DEVICE static constexpr int grid_size(const Params& p) {
    const int n = p.size < 5 ? 5 : (p.size > MaxSize ? MaxSize : p.size);
    return n % 2 == 1 ? n : n - 1;
  }

  /// True when (x, y) is a wall or outside the grid of side n.
  RLK_HOST_DEVICE static bool is_wall(const State& s, int n, int x, int y) {
    if (x < 0 || y < 0 || x >= n || y >= n) return true;
    const int bit = y * MaxSize + x;
    return (s.walls[bit >> 5] >> (bit & 31)) & 1u;
  }

  /// Step (dx, dy) of direction d (MiniGrid's DIR_TO_VEC).
  RLK_HOST_DEVICE static constexpr int dir_dx(int d) { return d == 0 ? 1 : (d == 2 ? -1 : 0); }
  /// Row step dy of direction d: +1 south, -1 north, 0 east or west.
  RLK_HOST_DEVICE static constexpr int dir_dy(int d) { return d == 1 ? 1 : (d == 3 ? -1 : 0); }

  /// Draws a new maze, start, direction and goal.
  template <class Gen>
  RLK_HOST_DEVICE static void reset(const Params& p, State& s, Gen& gen) {
    const int n = grid_size(p);
    const int rooms_side = (n - 1) / 2;
    const int rooms = rooms_side * rooms_side;
    for (int w = 0; w < wall_words; ++w) s.walls[w] = ~0u;

    // Recursive backtracker with an explicit stack (a local array: State stays small): from the
    // room on top, carve into a random unvisited neighbour (a room still walled in) or backtrack
    // when there is none. One draw for the first room and one per carve with two or more choices.
    std::uint16_t stack[max_rooms];
    int top = 0;
    const int first = int(gen.uniform_int(std::uint32_t(rooms)));
    stack[top++] = std::uint16_t(first);
    open(s, 2 * (first % rooms_side) + 1, 2 * (first / rooms_side) + 1);
    while (top > 0) {
      const int room = stack[top - 1];
      const int rx = room % rooms_side, ry = room / rooms_side;
      int choices[4];
      int k = 0;
      for (int d = 0; d < 4; ++d) {
        const int nx = rx + dir_dx(d), ny = ry + dir_dy(d);
        if (nx >= 0 && ny >= 0 && nx < rooms_side && ny < rooms_side && is_wall(s, n, 2 * nx + 1, 2 * ny + 1))
          choices[k++] = d;
      }
      if (k == 0) {
        --top;
        continue;
      }
      const int d = choices[k == 1 ? 0 : int(gen.uniform_int(std::uint32_t(k)))];
      open(s, 2 * rx + 1 + dir_dx(d), 2 * ry + 1 + dir_dy(d));
      const int nx = rx + dir_dx(d), ny = ry + dir_dy(d);
      open(s, 2 * nx + 1, 2 * ny + 1);
      stack[top++] = std::uint16_t(ny * rooms_side + nx);
    }

    if (p.random_start_goal) {
      const int start = int(gen.uniform_int(std::uint32_t(rooms)));
      int goal = int(gen.uniform_int(std::uint32_t(rooms - 1)));
      goal += goal >= start;  // uniform over the other rooms
      s.x = std::uint8_t(2 * (start % rooms_side) + 1);
      s.y = std::uint8_t(2 * (start / rooms_side) + 1);
      s.dir = std::uint8_t(gen.uniform_int(4u));
      s.goal_x = std::uint8_t(2 * (goal % rooms_side) + 1);
      s.goal_y = std::uint8_t(2 * (goal / rooms_side) + 1);
    } else {
      s.x = 1;
      s.y = 1;
      s.dir = 0;
      s.goal_x = std::uint8_t(n - 2);
      s.goal_y = std::uint8_t(n - 2);
    }
    s.steps = 0;
  }

  /// One action: turn, or move forward unless a wall is ahead; the goal ends the episode.
  template <class Gen>
  RLK_HOST_DEVICE static step_result<Scalar> step(const Params& p, State& s, std::int32_t action, Gen&) {
    const int n = grid_size(p);
    s.steps += s.steps < 0x7fffffff;
    bool forward = false;
    if constexpr (Actions == maze_actions::turn) {
      if (action == 0) {
        s.dir = std::uint8_t((s.dir + 3) & 3);
      } else if (action == 1) {
        s.dir = std::uint8_t((s.dir + 1) & 3);
      } else {
        forward = true;
      }
    } else {
      s.dir = std::uint8_t(action & 3);
      forward = true;
    }
    if (forward) {
      const int fx = s.x + dir_dx(s.dir), fy = s.y + dir_dy(s.dir);
      if (!is_wall(s, n, fx, fy)) {
        s.x = std::uint8_t(fx);
        s.y = std::uint8_t(fy);
      }
    }
    if (s.x == s.goal_x && s.y == s.goal_y) {
      const double r = p.max_episode_steps > 0 ? 1.0 - 0.9 * (double(s.steps) / double(p.max_episode_steps)) : 1.0;
      return {Scalar(r), true};
    }
    return {Scalar(0), false};
  }

  /// Writes the observation (see the struct's comment for the layout).
  RLK_HOST_DEVICE static void observe(const Params& p, const State& s, Scalar* obs) {
    const int n = grid_size(p);
    constexpr int cells = view_side * view_side * channels;
    for (int i = 0; i < observation_size; ++i) obs[i] = Scalar(0);
    if constexpr (full_view) {
      for (int y = 0; y < MaxSize; ++y)
        for (int x = 0; x < MaxSize; ++x)
          if (is_wall(s, n, x, y)) obs[(y * MaxSize + x) * channels] = Scalar(1);
      obs[(s.goal_y * MaxSize + s.goal_x) * channels + 1] = Scalar(1);
      obs[(s.y * MaxSize + s.x) * channels + 2] = Scalar(1);
    } else {
      // View cell (row, col) lies `View-1-row` cells ahead and `col-View/2` to the right; the
      // agent's right is the next direction clockwise.
      const int fx = dir_dx(s.dir), fy = dir_dy(s.dir);
      const int rx = dir_dx((s.dir + 1) & 3), ry = dir_dy((s.dir + 1) & 3);
      for (int row = 0; row < View; ++row) {
        const int ahead = View - 1 - row;
        for (int col = 0; col < View; ++col) {
          const int right = col - View / 2;
          const int x = s.x + ahead * fx + right * rx, y = s.y + ahead * fy + right * ry;
          Scalar* cell = obs + (row * View + col) * channels;
          if (is_wall(s, n, x, y)) cell[0] = Scalar(1);
          if (x == s.goal_x && y == s.goal_y) cell[1] = Scalar(1);
        }
      }
    }
    obs[cells + s.dir] = Scalar(1);
  }

private:
  RLK_HOST_DEVICE static void open(State& s, int x, int y) {
    const int bit = y * MaxSize + x;
    s.walls[bit >> 5] &= ~(1u << (bit & 31));
  }
};

}  // namespace rlkernels
