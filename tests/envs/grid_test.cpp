// Grid envs beyond MinAtar: the procedural maze (tests/envs/grid/maze_cases.hpp) and Snake with
// Jumanji's rules (tests/envs/grid/snake_cases.hpp), in one translation unit (each CUDA translation
// unit costs CI half a minute).
#include "../test_backend.hpp"

#include "grid/maze_cases.hpp"
#include "grid/snake_cases.hpp"

#include <rlkernels/envs/registry.hpp>

#include <catch2/catch.hpp>

TEST_CASE("grid: registry ids Snake-v1 (Jumanji's) and Maze-v0") {
  const rlkernels::env_info snake = rlkernels::visit_env("Snake-v1", [](auto entry) { return entry.info; });
  CHECK(snake.num_actions == 4);
  CHECK(snake.observation_size == 12 * 12 * 5);
  CHECK(snake.max_episode_steps == 4000);
  const rlkernels::env_info maze = rlkernels::visit_env("Maze-v0", [](auto entry) { return entry.info; });
  CHECK(maze.num_actions == 3);
  CHECK(maze.max_episode_steps > 0);
}
