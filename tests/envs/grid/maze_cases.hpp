// Test cases for rlkernels::maze (include/rlkernels/envs/grid/maze.hpp): generated mazes are
// perfect and solvable, observations match a plain MiniGrid-style reference (slice the grid, rotate
// it into the agent's frame), turn/forward semantics, the reward and termination at the goal, and
// the env inside vec_env (truncation, reproducible and plausible episode statistics).
// Included by a test source after tests/test_backend.hpp.
#pragma once

#include <rlkernels/core/random.hpp>
#include <rlkernels/envs/env.hpp>
#include <rlkernels/envs/grid/maze.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <deque>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace rlk_maze_test {

using rlkernels::maze;
using rlkernels::maze_actions;
using rlkernels::maze_full_view;

/// The maze as a plain 2-D array of chars ('#' wall, '.' open), read from the documented bitmap.
template <class Env>
std::vector<std::string> grid_of(const typename Env::State& s, int n) {
  std::vector<std::string> g(std::size_t(n), std::string(std::size_t(n), '.'));
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const int bit = y * Env::max_size + x;
      if ((s.walls[bit / 32] >> (bit % 32)) & 1u) g[std::size_t(y)][std::size_t(x)] = '#';
    }
  return g;
}

/// Shortest-path distances (BFS over open cells, 4-connected) from (sx, sy); -1 where unreachable.
inline std::vector<std::vector<int>> bfs(const std::vector<std::string>& g, int sx, int sy) {
  const int n = int(g.size());
  std::vector<std::vector<int>> dist(std::size_t(n), std::vector<int>(std::size_t(n), -1));
  std::deque<std::pair<int, int>> queue;
  dist[std::size_t(sy)][std::size_t(sx)] = 0;
  queue.emplace_back(sx, sy);
  const int dx[4] = {1, 0, -1, 0}, dy[4] = {0, 1, 0, -1};
  while (!queue.empty()) {
    const auto [x, y] = queue.front();
    queue.pop_front();
    for (int d = 0; d < 4; ++d) {
      const int nx = x + dx[d], ny = y + dy[d];
      if (nx < 0 || ny < 0 || nx >= n || ny >= n) continue;
      if (g[std::size_t(ny)][std::size_t(nx)] == '#' || dist[std::size_t(ny)][std::size_t(nx)] >= 0) continue;
      dist[std::size_t(ny)][std::size_t(nx)] = dist[std::size_t(y)][std::size_t(x)] + 1;
      queue.emplace_back(nx, ny);
    }
  }
  return dist;
}

/// Checks one generated maze of side n: walled border, rooms open at odd (x, y), walls at even
/// (x, y), all open cells connected and exactly rooms - 1 passages (a spanning tree: perfect), the
/// agent and goal on distinct rooms. Returns the BFS distance from agent to goal.
template <class Env>
int check_maze(const typename Env::State& s, int n, bool random_start_goal) {
  const auto g = grid_of<Env>(s, n);
  int open_cells = 0, passages = 0;
  bool border_ok = true, rooms_ok = true, posts_ok = true;
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const bool wall = g[std::size_t(y)][std::size_t(x)] == '#';
      open_cells += !wall;
      if (x == 0 || y == 0 || x == n - 1 || y == n - 1) border_ok &= wall;
      if (x % 2 == 1 && y % 2 == 1) rooms_ok &= !wall;
      if (x % 2 == 0 && y % 2 == 0) posts_ok &= wall;
      if ((x + y) % 2 == 1) passages += !wall;
    }
  CHECK(border_ok);
  CHECK(rooms_ok);
  CHECK(posts_ok);
  const int rooms = ((n - 1) / 2) * ((n - 1) / 2);
  CHECK(passages == rooms - 1);  // a tree over the rooms (with connectivity below): one path between any two
  // Everything beyond the grid is wall in the bitmap too.
  bool outside_ok = true;
  constexpr int M = Env::max_size;
  for (int y = 0; y < M; ++y)
    for (int x = 0; x < M; ++x)
      if (x >= n || y >= n) {
        const int bit = y * M + x;
        outside_ok &= ((s.walls[bit / 32] >> (bit % 32)) & 1u) != 0;
      }
  CHECK(outside_ok);

  CHECK(s.x % 2 == 1);
  CHECK(s.y % 2 == 1);
  CHECK(s.goal_x % 2 == 1);
  CHECK(s.goal_y % 2 == 1);
  CHECK(int(s.x) < n);
  CHECK(int(s.y) < n);
  CHECK(int(s.goal_x) < n);
  CHECK(int(s.goal_y) < n);
  CHECK(!(s.x == s.goal_x && s.y == s.goal_y));
  CHECK(int(s.dir) < 4);
  CHECK(s.steps == 0);
  if (!random_start_goal) {
    CHECK(int(s.x) == 1);
    CHECK(int(s.y) == 1);
    CHECK(int(s.dir) == 0);
    CHECK(int(s.goal_x) == n - 2);
    CHECK(int(s.goal_y) == n - 2);
  }

  const auto dist = bfs(g, s.x, s.y);
  int reached = 0;
  for (const auto& row : dist)
    for (int d : row) reached += d >= 0;
  CHECK(reached == open_cells);  // connected
  const int to_goal = dist[s.goal_y][s.goal_x];
  CHECK(to_goal > 0);
  return to_goal;
}

/// A plain copy of MiniGrid's gen_obs_grid (minigrid/minigrid_env.py): take the View x View slice
/// whose extents get_view_exts() gives for the agent's direction (out-of-grid cells are walls),
/// then rotate it left dir + 1 times (Grid.rotate_left: new(j, h-1-i) = old(i, j)). Returns
/// view[x][y] as chars: '#' wall, 'G' goal, '.' empty.
template <class Env>
std::vector<std::string> minigrid_view(const typename Env::State& s, int n, int view) {
  const auto g = grid_of<Env>(s, n);
  const int ax = s.x, ay = s.y;
  int top_x = 0, top_y = 0;
  switch (s.dir) {
    case 0: top_x = ax; top_y = ay - view / 2; break;
    case 1: top_x = ax - view / 2; top_y = ay; break;
    case 2: top_x = ax - view + 1; top_y = ay - view / 2; break;
    default: top_x = ax - view / 2; top_y = ay - view + 1; break;
  }
  // slice[i][j] = world (top_x + i, top_y + j)
  std::vector<std::string> grid(std::size_t(view), std::string(std::size_t(view), '#'));
  for (int i = 0; i < view; ++i)
    for (int j = 0; j < view; ++j) {
      const int x = top_x + i, y = top_y + j;
      char c = '#';
      if (x >= 0 && y >= 0 && x < n && y < n) c = g[std::size_t(y)][std::size_t(x)];
      if (x == s.goal_x && y == s.goal_y) c = 'G';
      grid[std::size_t(i)][std::size_t(j)] = c;
    }
  for (int r = 0; r < int(s.dir) + 1; ++r) {
    std::vector<std::string> rotated(std::size_t(view), std::string(std::size_t(view), '?'));
    for (int i = 0; i < view; ++i)
      for (int j = 0; j < view; ++j) rotated[std::size_t(j)][std::size_t(view - i - 1)] = grid[std::size_t(i)][std::size_t(j)];
    grid = rotated;
  }
  return grid;
}

/// A random state: random wall bits (not a maze: observe must not care), agent and goal anywhere
/// in the grid, including the border (so the view reaches far outside it); the goal's cell is open.
template <class Env>
typename Env::State random_state(rlkernels::rng& gen, int n) {
  typename Env::State s;
  std::memset(&s, 0, sizeof(s));
  for (auto& w : s.walls) w = gen.next_u32();
  s.x = std::uint8_t(gen.uniform_int(std::uint32_t(n)));
  s.y = std::uint8_t(gen.uniform_int(std::uint32_t(n)));
  s.dir = std::uint8_t(gen.uniform_int(4));
  s.goal_x = std::uint8_t(gen.uniform_int(std::uint32_t(n)));
  s.goal_y = std::uint8_t(gen.uniform_int(std::uint32_t(n)));
  s.steps = std::int32_t(gen.uniform_int(100));
  const int goal_bit = s.goal_y * Env::max_size + s.goal_x;  // as in every real episode, the goal is not a wall
  s.walls[goal_bit / 32] &= ~(1u << (goal_bit % 32));
  return s;
}

/// observe() against the references for `count` random states of each grid side in `sizes`.
template <class Env>
void check_observations(const std::vector<int>& sizes, int count) {
  using Scalar = typename Env::scalar_type;
  constexpr int M = Env::max_size;
  rlkernels::rng gen(2024, 7);
  for (int n : sizes) {
    typename Env::Params p;
    p.size = n;
    int mismatches = 0;
    for (int t = 0; t < count; ++t) {
      const auto s = random_state<Env>(gen, n);
      std::vector<Scalar> obs(Env::observation_size, Scalar(-1));
      Env::observe(p, s, obs.data());
      std::vector<Scalar> expected(Env::observation_size, Scalar(0));
      if constexpr (Env::full_view) {
        const auto g = grid_of<Env>(s, n);
        for (int y = 0; y < M; ++y)
          for (int x = 0; x < M; ++x) {
            const bool wall = x >= n || y >= n || g[std::size_t(y)][std::size_t(x)] == '#';
            expected[std::size_t((y * M + x) * 3 + 0)] = wall ? Scalar(1) : Scalar(0);
            expected[std::size_t((y * M + x) * 3 + 1)] = (x == s.goal_x && y == s.goal_y) ? Scalar(1) : Scalar(0);
            expected[std::size_t((y * M + x) * 3 + 2)] = (x == s.x && y == s.y) ? Scalar(1) : Scalar(0);
          }
        expected[std::size_t(M * M * 3 + s.dir)] = Scalar(1);
      } else {
        constexpr int V = Env::view_side;
        const auto view = minigrid_view<Env>(s, n, V);
        for (int row = 0; row < V; ++row)
          for (int col = 0; col < V; ++col) {
            // The reference is indexed [x = col][y = row]; the agent's own cell holds the agent in
            // MiniGrid and is reported as what lies under it here (never a wall in a real episode).
            const char c = view[std::size_t(col)][std::size_t(row)];
            const bool wall = c == '#';
            const bool goal = (row == V - 1 && col == V / 2) ? (s.x == s.goal_x && s.y == s.goal_y) : c == 'G';
            expected[std::size_t((row * V + col) * 2 + 0)] = wall ? Scalar(1) : Scalar(0);
            expected[std::size_t((row * V + col) * 2 + 1)] = goal ? Scalar(1) : Scalar(0);
          }
        expected[std::size_t(V * V * 2 + s.dir)] = Scalar(1);
      }
      if (obs != expected) {
        ++mismatches;
        if (mismatches <= 3) {
          std::size_t first_diff = 0;
          while (obs[first_diff] == expected[first_diff]) ++first_diff;
          INFO("size " << n << " state " << t << " agent (" << int(s.x) << ", " << int(s.y) << ") dir " << int(s.dir)
                       << " first difference at " << first_diff);
          CHECK(obs == expected);
        }
      }
    }
    INFO("size " << n);
    CHECK(mismatches == 0);
  }
}

/// Actions that walk the BFS shortest path from the agent to the goal (turning as needed).
template <class Env>
std::vector<std::int32_t> shortest_path_actions(const typename Env::State& s, int n) {
  const auto g = grid_of<Env>(s, n);
  const auto dist = bfs(g, s.goal_x, s.goal_y);  // distances to the goal
  const int dx[4] = {1, 0, -1, 0}, dy[4] = {0, 1, 0, -1};
  std::vector<std::int32_t> actions;
  int x = s.x, y = s.y, dir = s.dir;
  while (!(x == s.goal_x && y == s.goal_y)) {
    int want = -1;
    for (int d = 0; d < 4; ++d) {
      const int nx = x + dx[d], ny = y + dy[d];
      if (nx >= 0 && ny >= 0 && nx < n && ny < n && dist[std::size_t(ny)][std::size_t(nx)] >= 0 &&
          dist[std::size_t(ny)][std::size_t(nx)] == dist[std::size_t(y)][std::size_t(x)] - 1)
        want = d;
    }
    REQUIRE(want >= 0);
    if constexpr (Env::num_actions == 3) {
      if ((dir + 1) % 4 == want) {
        actions.push_back(1);
      } else {
        while (dir != want) {
          actions.push_back(0);
          dir = (dir + 3) % 4;
        }
      }
      dir = want;
      actions.push_back(2);
    } else {
      actions.push_back(want);
    }
    x += dx[want];
    y += dy[want];
  }
  return actions;
}

}  // namespace rlk_maze_test

namespace rlk_maze_test {

/// Runs N envs for T steps of a fixed random policy (action of env i at step t drawn from
/// rng(policy_seed, i, t)) and returns the episode statistics and the number of terminations.
template <class Env, class Backend>
std::pair<rlkernels::episode_statistics, std::uint64_t> random_policy_run(Backend backend, std::size_t n, int steps,
                                                                          std::uint64_t seed,
                                                                          typename Env::Params params = {}) {
  rlkernels::vec_env<Env, Backend> env(backend, n, seed, params);
  std::uint64_t terminations = 0;
  std::vector<std::int32_t> actions(n);
  for (int t = 0; t < steps; ++t) {
    for (std::size_t i = 0; i < n; ++i)
      actions[i] = std::int32_t(rlkernels::rng(99, i, std::uint64_t(t)).uniform_int(std::uint32_t(Env::num_actions)));
    const rlkernels::buffer<std::int32_t, Backend> a(backend, actions);
    env.step(a.cview());
    for (std::uint8_t f : env.terminated().to_host()) terminations += f;
  }
  return {env.get_episode_statistics(), terminations};
}

inline bool same_statistics(const rlkernels::episode_statistics& a, const rlkernels::episode_statistics& b) {
  return a.count == b.count && a.mean_return == b.mean_return && a.mean_length == b.mean_length &&
         a.min_return == b.min_return && a.max_return == b.max_return;
}

}  // namespace rlk_maze_test

TEST_CASE("maze: satisfies the env concept with a small trivially copyable state") {
  using namespace rlk_maze_test;
  STATIC_REQUIRE(rlkernels::check_env<maze<float>>());
  STATIC_REQUIRE(rlkernels::check_env<maze<double, 9, 5>>());
  STATIC_REQUIRE(rlkernels::check_env<maze<float, 25, maze_full_view>>());
  STATIC_REQUIRE(rlkernels::check_env<maze<float, 15, 7, maze_actions::move4>>());
  STATIC_REQUIRE(std::is_trivially_copyable_v<maze<float>::State>);
  STATIC_REQUIRE(sizeof(maze<float>::State) <= 96);  // 625 wall bits + position, goal, steps
  STATIC_REQUIRE(maze<float>::observation_size == 7 * 7 * 2 + 4);
  STATIC_REQUIRE(maze<float, 9, 5>::observation_size == 5 * 5 * 2 + 4);
  STATIC_REQUIRE(maze<float, 25, maze_full_view>::observation_size == 25 * 25 * 3 + 4);
  STATIC_REQUIRE(maze<float>::num_actions == 3);
  STATIC_REQUIRE(maze<float, 25, 7, maze_actions::move4>::num_actions == 4);
  maze<float>::Params p;
  CHECK(p.size == 25);
  CHECK(p.max_episode_steps == 4 * 25 * 25);
  // Sizes are made odd and clamped into [5, MaxSize].
  const int sizes[] = {1, 3, 5, 6, 9, 10, 25, 26, 99};
  const int expect[] = {5, 5, 5, 5, 9, 9, 25, 25, 25};
  for (int k = 0; k < 9; ++k) {
    p.size = sizes[k];
    CHECK(maze<float>::grid_size(p) == expect[k]);
  }
}

TEST_CASE("maze: every generated maze is perfect and solvable from start to goal") {
  using namespace rlk_maze_test;
  SECTION("MaxSize 25, sizes 5..25, random start and goal") {
    using Env = maze<float>;
    for (int n : {5, 7, 9, 11, 13, 17, 21, 25}) {
      Env::Params p;
      p.size = n;
      std::set<std::vector<std::uint32_t>> distinct;
      long path_sum = 0;
      const int count = 1500;
      for (int i = 0; i < count; ++i) {
        rlkernels::rng gen(11, std::uint64_t(1000 * n + i));
        Env::State s;
        Env::reset(p, s, gen);
        INFO("size " << n << " maze " << i);
        path_sum += check_maze<Env>(s, n, true);
        distinct.insert(std::vector<std::uint32_t>(std::begin(s.walls), std::end(s.walls)));
      }
      INFO("size " << n);
      // Small mazes repeat (a 3x3 of rooms has 192 spanning trees, and the backtracker favours
      // long corridors); from 13x13 on (6x6 rooms) 1500 draws never repeat.
      if (n == 5) {
        CHECK(distinct.size() == 4);  // all four spanning trees of the 2x2 rooms
      } else if (n == 7) {
        CHECK(distinct.size() > 60);
      } else if (n == 9) {
        CHECK(distinct.size() > 1000);
      } else if (n == 11) {
        CHECK(distinct.size() > 1450);
      } else {
        CHECK(distinct.size() == std::size_t(count));
      }
      CHECK(double(path_sum) / count > double(n - 1) / 2);  // far more than adjacent rooms on average
    }
  }
  SECTION("fixed start (1, 1) and goal (size-2, size-2); other MaxSize, view and action templates") {
    using Env = maze<double, 9, 5, maze_actions::move4>;
    for (int n : {5, 7, 9}) {
      Env::Params p;
      p.size = n;
      p.random_start_goal = false;
      for (int i = 0; i < 1000; ++i) {
        rlkernels::rng gen(5, std::uint64_t(i));
        Env::State s;
        Env::reset(p, s, gen);
        INFO("size " << n << " maze " << i);
        check_maze<Env>(s, n, false);
      }
    }
    using Big = maze<float, 41, maze_full_view>;
    Big::Params p;
    for (int i = 0; i < 300; ++i) {
      rlkernels::rng gen(6, std::uint64_t(i));
      Big::State s;
      Big::reset(p, s, gen);
      INFO("41x41 maze " << i);
      check_maze<Big>(s, 41, true);
    }
  }
  SECTION("start, goal and direction are spread over the rooms") {
    using Env = maze<float, 25, 7>;
    Env::Params p;
    p.size = 5;  // 4 rooms: 12 ordered (start, goal) pairs
    std::vector<int> pairs(16, 0), dirs(4, 0);
    const int count = 12000;
    for (int i = 0; i < count; ++i) {
      rlkernels::rng gen(8, std::uint64_t(i));
      Env::State s;
      Env::reset(p, s, gen);
      const int start = (s.y / 2) * 2 + s.x / 2, goal = (s.goal_y / 2) * 2 + s.goal_x / 2;
      ++pairs[std::size_t(start * 4 + goal)];
      ++dirs[s.dir];
    }
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b) {
        INFO("start room " << a << " goal room " << b);
        if (a == b) {
          CHECK(pairs[std::size_t(a * 4 + b)] == 0);
        } else {
          CHECK(pairs[std::size_t(a * 4 + b)] > 800);  // expected 1000 each
          CHECK(pairs[std::size_t(a * 4 + b)] < 1200);
        }
      }
    for (int d = 0; d < 4; ++d) {
      CHECK(dirs[std::size_t(d)] > 2700);  // expected 3000 each
      CHECK(dirs[std::size_t(d)] < 3300);
    }
  }
}

TEST_CASE("maze: observations equal a plain reference (MiniGrid's slice-and-rotate) for random states") {
  using namespace rlk_maze_test;
  check_observations<maze<float, 25, 7>>({5, 9, 15, 25}, 2000);
  check_observations<maze<double, 25, 7>>({7, 25}, 500);
  check_observations<maze<float, 25, 5>>({5, 11, 25}, 2000);
  check_observations<maze<float, 13, 3, maze_actions::move4>>({5, 13}, 1000);
  check_observations<maze<float, 11, 11>>({5, 11}, 1000);  // view wider than the grid
  check_observations<maze<float, 25, maze_full_view>>({5, 9, 25}, 500);
  check_observations<maze<double, 9, maze_full_view>>({9}, 500);

  SECTION("a hand-made example: a corridor east of the agent, the goal at its end") {
    using Env = maze<float, 9, 3>;
    Env::Params p;
    p.size = 9;
    Env::State s;
    std::memset(&s, 0, sizeof(s));
    for (auto& w : s.walls) w = ~0u;
    for (int x = 1; x <= 4; ++x) {
      const int bit = 1 * 9 + x;  // row y = 1
      s.walls[bit / 32] &= ~(1u << (bit % 32));
    }
    s.x = 2;
    s.y = 1;
    s.dir = 0;  // facing east along the corridor
    s.goal_x = 3;
    s.goal_y = 1;
    std::vector<float> obs(Env::observation_size);
    Env::observe(p, s, obs.data());
    // 3x3 view, rows far..near, columns left..right; left of an east-facing agent is north (the border).
    const float wall[9] = {1, 0, 1,   // two ahead: (4, 0) wall, (4, 1) open, (4, 2) wall
                           1, 0, 1,   // one ahead: the goal cell (3, 1)
                           1, 0, 1};  // the agent's row: (2, 0) and (2, 2) walls
    const float goal[9] = {0, 0, 0, 0, 1, 0, 0, 0, 0};
    for (int k = 0; k < 9; ++k) {
      INFO("view cell " << k);
      CHECK(obs[std::size_t(2 * k)] == wall[k]);
      CHECK(obs[std::size_t(2 * k + 1)] == goal[k]);
    }
    CHECK(obs[18] == 1.0f);  // direction east one-hot
    CHECK(obs[19] == 0.0f);
    CHECK(obs[20] == 0.0f);
    CHECK(obs[21] == 0.0f);
  }
}

TEST_CASE("maze: turn and forward semantics (walls block forward moves)") {
  using namespace rlk_maze_test;
  const int dx[4] = {1, 0, -1, 0}, dy[4] = {0, 1, 0, -1};
  SECTION("turn actions against a plain model, in random mazes") {
    using Env = maze<float, 25, 7>;
    Env::Params p;
    p.size = 11;
    p.max_episode_steps = 0;
    int moves = 0, blocked = 0;
    for (int e = 0; e < 200; ++e) {
      rlkernels::rng gen(3, std::uint64_t(e));
      Env::State s;
      Env::reset(p, s, gen);
      const auto g = grid_of<Env>(s, 11);
      for (int t = 0; t < 200; ++t) {
        const std::int32_t a = std::int32_t(gen.uniform_int(3));
        int x = s.x, y = s.y, dir = s.dir;
        if (a == 0) dir = (dir + 3) % 4;
        if (a == 1) dir = (dir + 1) % 4;
        if (a == 2) {
          const int nx = x + dx[dir], ny = y + dy[dir];
          if (g[std::size_t(ny)][std::size_t(nx)] != '#') {
            x = nx;
            y = ny;
            ++moves;
          } else {
            ++blocked;
          }
        }
        const bool at_goal = x == s.goal_x && y == s.goal_y;
        const auto r = Env::step(p, s, a, gen);
        INFO("maze " << e << " step " << t << " action " << a);
        REQUIRE(int(s.x) == x);
        REQUIRE(int(s.y) == y);
        REQUIRE(int(s.dir) == dir);
        REQUIRE(s.steps == t + 1);
        REQUIRE(r.terminated == at_goal);
        REQUIRE(r.reward == (at_goal ? 1.0f : 0.0f));
        if (at_goal) break;
      }
    }
    CHECK(moves > 1000);
    CHECK(blocked > 1000);
  }
  SECTION("move4 actions face the move's direction, then step unless a wall is there") {
    using Env = maze<float, 25, 7, maze_actions::move4>;
    Env::Params p;
    p.size = 9;
    p.max_episode_steps = 0;
    for (int e = 0; e < 200; ++e) {
      rlkernels::rng gen(4, std::uint64_t(e));
      Env::State s;
      Env::reset(p, s, gen);
      const auto g = grid_of<Env>(s, 9);
      for (int t = 0; t < 200; ++t) {
        const std::int32_t a = std::int32_t(gen.uniform_int(4));
        int x = s.x, y = s.y;
        if (g[std::size_t(y + dy[a])][std::size_t(x + dx[a])] != '#') {
          x += dx[a];
          y += dy[a];
        }
        const auto r = Env::step(p, s, a, gen);
        INFO("maze " << e << " step " << t << " action " << a);
        REQUIRE(int(s.x) == x);
        REQUIRE(int(s.y) == y);
        REQUIRE(int(s.dir) == a);
        REQUIRE(r.terminated == (x == s.goal_x && y == s.goal_y));
        if (r.terminated) break;
      }
    }
  }
  SECTION("left and right turns cycle through the four directions without moving") {
    using Env = maze<float, 9, 7>;
    Env::Params p;
    rlkernels::rng gen(1, 1);
    Env::State s;
    Env::reset(p, s, gen);
    const int x = s.x, y = s.y, d0 = s.dir;
    for (int k = 1; k <= 4; ++k) {
      Env::step(p, s, 1, gen);
      CHECK(int(s.dir) == (d0 + k) % 4);
      CHECK(int(s.x) == x);
      CHECK(int(s.y) == y);
    }
    for (int k = 1; k <= 4; ++k) {
      Env::step(p, s, 0, gen);
      CHECK(int(s.dir) == (d0 + 4 - k) % 4);
    }
  }
}

TEST_CASE("maze: reward 1 - 0.9 steps/max_episode_steps and termination at the goal") {
  using namespace rlk_maze_test;
  SECTION("walking the shortest path (turn actions)") {
    using Env = maze<double, 25, 7>;
    for (int n : {5, 9, 25}) {
      Env::Params p;
      p.size = n;
      p.max_episode_steps = 4 * n * n;
      for (int e = 0; e < 100; ++e) {
        rlkernels::rng gen(21, std::uint64_t(e));
        Env::State s;
        Env::reset(p, s, gen);
        const auto actions = shortest_path_actions<Env>(s, n);
        for (std::size_t t = 0; t < actions.size(); ++t) {
          const auto r = Env::step(p, s, actions[t], gen);
          INFO("size " << n << " maze " << e << " step " << t);
          if (t + 1 < actions.size()) {
            REQUIRE(!r.terminated);
            REQUIRE(r.reward == 0.0);
          } else {
            REQUIRE(r.terminated);
            REQUIRE(r.reward == 1.0 - 0.9 * (double(actions.size()) / double(4 * n * n)));
          }
        }
      }
    }
  }
  SECTION("walking the shortest path (move4 actions), float") {
    using Env = maze<float, 15, 5, maze_actions::move4>;
    Env::Params p;
    p.max_episode_steps = 500;
    for (int e = 0; e < 100; ++e) {
      rlkernels::rng gen(22, std::uint64_t(e));
      Env::State s;
      Env::reset(p, s, gen);
      const auto actions = shortest_path_actions<Env>(s, 15);
      for (std::size_t t = 0; t < actions.size(); ++t) {
        const auto r = Env::step(p, s, actions[t], gen);
        REQUIRE(r.terminated == (t + 1 == actions.size()));
        REQUIRE(r.reward == (r.terminated ? float(1.0 - 0.9 * (double(actions.size()) / 500.0)) : 0.0f));
      }
    }
  }
  SECTION("the last allowed step gives 0.1; no time limit gives 1") {
    using Env = maze<float, 9, 7, maze_actions::move4>;
    Env::Params p;
    p.size = 9;
    p.random_start_goal = false;
    rlkernels::rng gen(1, 2);
    Env::State s;
    Env::reset(p, s, gen);
    // Put the goal next to the agent, on an open side.
    const int dx[4] = {1, 0, -1, 0}, dy[4] = {0, 1, 0, -1};
    const auto g = grid_of<Env>(s, 9);
    int d = 0;
    while (g[std::size_t(1 + dy[d])][std::size_t(1 + dx[d])] == '#') ++d;
    s.goal_x = std::uint8_t(1 + dx[d]);
    s.goal_y = std::uint8_t(1 + dy[d]);
    Env::State last = s;
    last.steps = p.max_episode_steps - 1;
    auto r = Env::step(p, last, d, gen);
    CHECK(r.terminated);
    CHECK(r.reward == float(1.0 - 0.9));
    Env::Params unlimited = p;
    unlimited.max_episode_steps = 0;
    Env::State free = s;
    free.steps = 12345;
    r = Env::step(unlimited, free, d, gen);
    CHECK(r.terminated);
    CHECK(r.reward == 1.0f);
    // A blocked move next to the goal gives nothing.
    Env::State blocked = s;
    int wall_dir = 0;
    while (g[std::size_t(1 + dy[wall_dir])][std::size_t(1 + dx[wall_dir])] != '#') ++wall_dir;
    r = Env::step(p, blocked, wall_dir, gen);
    CHECK(!r.terminated);
    CHECK(r.reward == 0.0f);
    CHECK(int(blocked.x) == 1);
    CHECK(int(blocked.y) == 1);
  }
}

TEST_CASE("maze: truncation through vec_env at max_episode_steps") {
  using namespace rlk_maze_test;
  using Env = maze<float, 9, 7>;
  using backend_t = rlk_test::backend_t;
  Env::Params p;
  p.size = 9;
  p.max_episode_steps = 10;
  const std::size_t n = 64;
  rlkernels::vec_env<Env, backend_t> env(rlk_test::backend(), n, 3, p);
  const auto first_states = env.states().to_host();
  auto turn_left = rlk_test::make(std::vector<std::int32_t>(n, 0));  // never moves: never reaches the goal
  for (int t = 1; t <= 10; ++t) {
    env.step(turn_left.cview());
    const auto term = env.terminated().to_host();
    const auto trunc = env.truncated().to_host();
    const auto states = env.states().to_host();
    const auto obs = env.observations().to_host();
    const auto final_obs = env.final_observations().to_host();
    for (std::size_t i = 0; i < n; ++i) {
      INFO("step " << t << " env " << i);
      CHECK(term[i] == 0);
      CHECK(trunc[i] == (t == 10 ? 1 : 0));
      // The observation to act on is the current state's (a new maze after the truncation).
      std::vector<float> expected(Env::observation_size);
      Env::observe(p, states[i], expected.data());
      CHECK(std::vector<float>(obs.begin() + std::ptrdiff_t(i * Env::observation_size),
                               obs.begin() + std::ptrdiff_t((i + 1) * Env::observation_size)) == expected);
      // The final observation is the old maze, turned t times to the left.
      Env::State old = first_states[i];
      old.dir = std::uint8_t((old.dir + 4 * 10 - t) % 4);
      Env::observe(p, old, expected.data());
      CHECK(std::vector<float>(final_obs.begin() + std::ptrdiff_t(i * Env::observation_size),
                               final_obs.begin() + std::ptrdiff_t((i + 1) * Env::observation_size)) == expected);
      if (t == 10) {
        CHECK(states[i].steps == 0);
        CHECK(std::memcmp(states[i].walls, first_states[i].walls, sizeof(states[i].walls)) != 0);  // a fresh maze
      }
    }
  }
  const rlkernels::episode_statistics stats = env.get_episode_statistics();
  CHECK(stats.count == n);
  CHECK(stats.mean_length == 10.0);
  CHECK(stats.mean_return == 0.0);
  CHECK(env.episode_lengths().to_host() == std::vector<std::int32_t>(n, 0));
}

TEST_CASE("maze: episode statistics of a fixed random policy are reproducible and plausible") {
  using namespace rlk_maze_test;
  using Env = maze<float, 25, 5>;
  Env::Params p;
  p.size = 9;
  p.max_episode_steps = 4 * 9 * 9;  // 324
  const std::size_t n = 200;
  const int steps = 1500;
  const auto a = random_policy_run<Env>(rlk_test::backend(), n, steps, 42, p);
  const auto b = random_policy_run<Env>(rlk_test::backend(), n, steps, 42, p);
  const auto other = random_policy_run<Env>(rlk_test::backend(), n, steps, 43, p);
  const rlkernels::episode_statistics& s = a.first;
  CHECK(same_statistics(a.first, b.first));
  CHECK(a.second == b.second);
  CHECK(!same_statistics(a.first, other.first));

  // The host backends step and sum in the same order: serial and OpenMP agree exactly; CUDA draws
  // the same bits and computes the same doubles, but CUB sums in another order.
  const auto serial = random_policy_run<Env>(rlkernels::serial, n, steps, 42, p);
  CHECK(serial.second == a.second);
  CHECK(serial.first.count == s.count);
  CHECK(serial.first.min_return == s.min_return);
  CHECK(serial.first.max_return == s.max_return);
  CHECK(serial.first.mean_return == Approx(s.mean_return).epsilon(1e-12));
  CHECK(serial.first.mean_length == Approx(s.mean_length).epsilon(1e-12));
  if (!rlk_test::on_cuda) CHECK(same_statistics(serial.first, s));
#if RLK_HAS_OPENMP
  rlkernels::openmp_backend threads;
  threads.num_threads = 3;
  threads.serial_below = 0;
  const auto parallel = random_policy_run<Env>(threads, n, steps, 42, p);
  CHECK(same_statistics(parallel.first, serial.first));
  CHECK(parallel.second == serial.second);
#endif

  // Plausible: every env finishes several episodes (at most 324 steps each). A uniformly random
  // turn/turn/forward walk in a 9x9 maze (16 rooms) reaches the goal in about 40% of episodes
  // (0.387 with these seeds); returns lie in [0, 1), a success's in [0.1, 1).
  INFO("count " << s.count << " terminations " << a.second << " mean return " << s.mean_return << " mean length "
                << s.mean_length << " min " << s.min_return << " max " << s.max_return);
  const double success = double(a.second) / double(s.count);
  CHECK(s.count >= n * (steps / 324));
  CHECK(a.second <= s.count);
  CHECK(success > 0.25);
  CHECK(success < 0.6);
  CHECK(s.mean_return <= success);        // each success returns < 1, each failure 0
  CHECK(s.mean_return >= 0.1 * success);  // each success returns >= 0.1
  CHECK(s.mean_length > 150);
  CHECK(s.mean_length <= 324);
  CHECK(s.min_return == 0.0);   // some episodes are truncated
  CHECK(s.max_return < 1.0);
  CHECK(s.max_return > 0.9);    // some start next to the goal
}
