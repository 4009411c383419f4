// Snake (rlkernels/envs/grid/snake.hpp) against Jumanji: the recording of tests/reference/
// snake_jumanji.py is replayed step for step (its random choices fed back as draws), a brute-force
// snake written here checks the rules on many random episodes, hand-made states check the mask,
// growth, collisions and a full board, and vec_env runs the env with masked random actions.
// Included by a test source that includes "test_backend.hpp" first (rlk_test::backend()).
#pragma once

#include "../../reference_dir.hpp"

#include <rlkernels/core/random.hpp>
#include <rlkernels/envs/grid/snake.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <deque>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rlk_snake_test {

// ---- The Jumanji recording ---------------------------------------------------------------------

struct record {
  char kind = 'S';  ///< 'R' reset, 'S' step
  std::int32_t action = 0;
  int reward = 0;
  bool done = false;
  bool legal = true;                                      ///< Jumanji's action_mask[action] before the step
  std::vector<std::pair<std::uint32_t, std::uint32_t>> draws;  ///< (n, k): uniform_int(n) returned k
  std::string mask;                                       ///< the new state's mask, "1101"
  int head = -1;                                          ///< head cell of the grid, -1 if none
  int fruit = 0;                                          ///< fruit cell of the grid
  std::vector<std::pair<int, int>> body;                  ///< (cell, body_state) where body_state > 0
};

struct run {
  int rows = 12, cols = 12, seed = 0;
  std::vector<record> records;
};

/// Parses tests/reference/snake_jumanji.txt (format: see snake_jumanji.py).
inline std::vector<run> load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<run> runs;
  int rows = 12, cols = 12;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    std::string tag;
    is >> tag;
    if (tag == "board") {
      is >> rows >> cols;
    } else if (tag == "seed") {
      run r;
      r.rows = rows;
      r.cols = cols;
      is >> r.seed;
      runs.push_back(r);
    } else if (tag == "R" || tag == "S") {
      record x;
      x.kind = tag[0];
      if (x.kind == 'S') {
        int d = 0, v = 0;
        is >> x.action >> x.reward >> d >> v;
        x.done = d != 0;
        x.legal = v != 0;
      }
      std::size_t count = 0;
      is >> count;
      for (std::size_t i = 0; i < count; ++i) {
        std::string kind;
        std::uint32_t n = 0, k = 0;
        is >> kind >> n >> k;
        x.draws.emplace_back(n, k);
      }
      std::string bar;
      is >> bar >> x.mask >> x.head >> x.fruit >> count;
      for (std::size_t i = 0; i < count; ++i) {
        std::string pair;
        is >> pair;
        const auto colon = pair.find(':');
        x.body.emplace_back(std::stoi(pair.substr(0, colon)), std::stoi(pair.substr(colon + 1)));
      }
      if (!is || bar != "|" || runs.empty()) throw std::runtime_error("bad line in " + path + ": " + line);
      runs.back().records.push_back(std::move(x));
    }
  }
  return runs;
}

/// Hands out recorded uniform_int results in order; a call with another range or past the end
/// sets `error` (and returns 0), like device code would.
struct replay_generator {
  // Plain data with RLK_HOST_DEVICE calls, so that the env's host/device functions may call it.
  const std::pair<std::uint32_t, std::uint32_t>* draws = nullptr;  ///< (n, k) per recorded uniform_int
  std::size_t count = 0;
  std::size_t pos = 0;
  int error = 0;  ///< 0 none, 1 drew past the end, 2 range differs
  std::uint32_t wanted_n = 0;

  RLK_HOST_DEVICE std::uint32_t uniform_int(std::uint32_t n) {
    if (error != 0) return 0;
    wanted_n = n;
    if (pos >= count) {
      error = 1;
      return 0;
    }
    if (draws[pos].first != n) {
      error = 2;
      return 0;
    }
    return draws[pos++].second;
  }
  /// Empty when every call matched.
  std::string message() const {
    if (error == 1) return "the env drew more numbers than the reference (uniform_int(" + std::to_string(wanted_n) + "))";
    if (error == 2)
      return "draw " + std::to_string(pos) + ": the env called uniform_int(" + std::to_string(wanted_n) +
             "), the reference drew over " + std::to_string(draws[pos].first) + " values";
    return "";
  }
};

/// Jumanji's grid for a record, laid out as Env's [MaxRows, MaxCols, 5] observation.
template <class Env>
std::vector<typename Env::scalar_type> expected_observation(const run& r, const record& x) {
  using S = typename Env::scalar_type;
  std::vector<S> obs(Env::observation_size, S(0));
  const auto at = [&](int cell, int ch) -> S& {
    return obs[std::size_t(((cell / r.cols) * Env::max_cols + cell % r.cols) * Env::channels + ch)];
  };
  int top = 1;
  for (const auto& b : x.body) top = b.second > top ? b.second : top;
  const S inv = S(1) / S(top);  // as XLA computes Jumanji's body_state / max
  for (const auto& b : x.body) {
    at(b.first, 0) = S(1);
    if (b.second == 1) at(b.first, 2) = S(1);
    at(b.first, 4) = S(b.second) * inv;
  }
  if (x.head >= 0) at(x.head, 1) = S(1);
  at(x.fruit, 3) = S(1);
  return obs;
}

inline std::string mask_string(const std::uint8_t* m) {
  std::string s;
  for (int a = 0; a < 4; ++a) s += m[a] ? '1' : '0';
  return s;
}

/// Replays every run whose board fits Env and checks each record; returns the steps compared.
template <class Env>
std::size_t replay(const std::vector<run>& runs) {
  std::size_t steps = 0;
  for (const run& r : runs) {
    if (r.rows > Env::max_rows || r.cols > Env::max_cols) continue;
    typename Env::Params params;
    params.num_rows = r.rows;
    params.num_cols = r.cols;
    typename Env::State s{};
    for (std::size_t i = 0; i < r.records.size(); ++i) {
      const record& x = r.records[i];
      INFO("board " << r.rows << "x" << r.cols << " seed " << r.seed << " record " << i << " (" << x.kind
                    << ", action " << x.action << ")");
      replay_generator gen{x.draws.data(), x.draws.size()};
      if (x.kind == 'R') {
        Env::reset(params, s, gen);
      } else {
        std::uint8_t before[4];
        Env::action_mask(params, s, before);
        REQUIRE(bool(before[x.action]) == x.legal);
        const auto result = Env::step(params, s, x.action, gen);
        REQUIRE(result.reward == typename Env::scalar_type(x.reward));
        REQUIRE(result.terminated == x.done);
        ++steps;
      }
      REQUIRE(gen.message() == "");
      REQUIRE(gen.pos == x.draws.size());  // drew exactly what the reference drew
      if (x.legal) {  // after an illegal move Jumanji's mask indexes off the board: not comparable
        std::uint8_t mask[4];
        Env::action_mask(params, s, mask);
        REQUIRE(mask_string(mask) == x.mask);
      }
      std::vector<typename Env::scalar_type> obs(Env::observation_size);
      Env::observe(params, s, obs.data());
      const auto want = expected_observation<Env>(r, x);
      if (obs != want) {
        std::string diff;
        for (std::size_t k = 0; k < obs.size(); ++k)
          if (obs[k] != want[k])
            diff += " (cell " + std::to_string(k / Env::channels) + ", ch " + std::to_string(k % Env::channels) +
                    "): ours " + std::to_string(double(obs[k])) + " ref " + std::to_string(double(want[k])) + ";";
        FAIL("observation differs:" << diff);
      }
    }
  }
  return steps;
}

// ---- A brute-force snake: the body as a list of cells, head first --------------------------------

struct reference_snake {
  int rows, cols;
  std::deque<std::pair<int, int>> body;  // front: head, back: tail
  int fruit_row = 0, fruit_col = 0;

  bool occupied(int r, int c) const {
    for (const auto& b : body)
      if (b.first == r && b.second == c) return true;
    return false;
  }
  template <class Gen>
  void place_fruit(Gen& gen) {
    std::vector<int> free;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        if (!occupied(r, c)) free.push_back(r * cols + c);
    fruit_row = fruit_col = 0;
    if (free.empty()) return;
    const int cell = free[gen.uniform_int(std::uint32_t(free.size()))];
    fruit_row = cell / cols;
    fruit_col = cell % cols;
  }
  template <class Gen>
  void reset(Gen& gen) {
    body.clear();
    const int cell = int(gen.uniform_int(std::uint32_t(rows * cols)));
    body.emplace_front(cell / cols, cell % cols);
    place_fruit(gen);
  }
  static int dr(int a) { return a == 0 ? -1 : a == 2 ? 1 : 0; }
  static int dc(int a) { return a == 1 ? 1 : a == 3 ? -1 : 0; }
  bool legal(int a) const {
    const int r = body.front().first + dr(a), c = body.front().second + dc(a);
    if (r < 0 || r >= rows || c < 0 || c >= cols) return false;
    return !occupied(r, c) || std::make_pair(r, c) == body.back();  // the tail moves away
  }
  /// A legal move: returns the reward; `full` tells whether the snake now fills the board.
  template <class Gen>
  int step(int a, Gen& gen, bool& full) {
    const std::pair<int, int> next{body.front().first + dr(a), body.front().second + dc(a)};
    const bool eaten = next.first == fruit_row && next.second == fruit_col;
    if (!eaten) body.pop_back();
    body.push_front(next);
    if (eaten) place_fruit(gen);
    full = int(body.size()) == rows * cols;
    return eaten ? 1 : 0;
  }
};

/// Our state equals the brute-force snake: every cell's age, head, fruit, length and mask.
template <class Env>
void require_same(const typename Env::Params& p, const typename Env::State& s, const reference_snake& ref) {
  REQUIRE(int(s.length) == int(ref.body.size()));
  REQUIRE(int(s.head_row) == ref.body.front().first);
  REQUIRE(int(s.head_col) == ref.body.front().second);
  REQUIRE(int(s.fruit_row) == ref.fruit_row);
  REQUIRE(int(s.fruit_col) == ref.fruit_col);
  std::vector<int> age(std::size_t(Env::max_rows * Env::max_cols), 0), ours(age.size());
  for (std::size_t i = 0; i < ref.body.size(); ++i)
    age[std::size_t(ref.body[i].first * Env::max_cols + ref.body[i].second)] = int(ref.body.size() - i);
  for (int r = 0; r < Env::max_rows; ++r)
    for (int c = 0; c < Env::max_cols; ++c) ours[std::size_t(r * Env::max_cols + c)] = int(s.body[r][c]);
  REQUIRE(ours == age);
  std::uint8_t mask[4];
  Env::action_mask(p, s, mask);
  std::string want;
  for (int a = 0; a < 4; ++a) want += ref.legal(a) ? '1' : '0';
  REQUIRE(mask_string(mask) == want);
}

/// Structural checks of one observation of a board in play (R x C used, MaxRows x MaxCols shown).
template <class Env>
void check_observation(const typename Env::scalar_type* obs, int rows, int cols) {
  using S = typename Env::scalar_type;
  int body = 0, heads = 0, tails = 0, fruits = 0, order_max_cells = 0;
  std::string problems;  // one REQUIRE per observation, naming the first bad cell
  const auto bad = [&](int r, int c, const char* what) {
    if (problems.empty()) problems = "cell (" + std::to_string(r) + ", " + std::to_string(c) + "): " + what;
  };
  for (int r = 0; r < Env::max_rows; ++r)
    for (int c = 0; c < Env::max_cols; ++c) {
      const S* o = obs + (r * Env::max_cols + c) * Env::channels;
      if (r >= rows || c >= cols) {
        for (int ch = 0; ch < Env::channels; ++ch)
          if (o[ch] != S(0)) bad(r, c, "off the board but not 0");
        continue;
      }
      for (int ch = 0; ch < 4; ++ch)
        if (o[ch] != S(0) && o[ch] != S(1)) bad(r, c, "a binary channel is not 0 or 1");
      if (!(o[4] >= S(0) && o[4] <= S(1))) bad(r, c, "order outside [0, 1]");
      if ((o[4] > S(0)) != (o[0] == S(1))) bad(r, c, "order positive off the body or 0 on it");
      if (o[1] == S(1) && o[4] != S(1)) bad(r, c, "the head is not the newest cell");
      if (o[2] == S(1) && o[0] != S(1)) bad(r, c, "the tail is not body");
      if (o[3] == S(1) && o[0] == S(1)) bad(r, c, "the fruit is on the body");
      body += o[0] == S(1);
      heads += o[1] == S(1);
      tails += o[2] == S(1);
      fruits += o[3] == S(1);
      order_max_cells += o[4] == S(1);
    }
  INFO(problems);
  REQUIRE(problems.empty());
  REQUIRE((heads == 1 && tails == 1 && fruits == 1 && body >= 1 && order_max_cells == 1));
}

/// A state on a board of `p`'s size from a body given head first as (row, col) cells.
template <class Env>
typename Env::State make_state(const std::vector<std::pair<int, int>>& body, int fruit_row, int fruit_col) {
  typename Env::State s{};
  const int n = int(body.size());
  for (int i = 0; i < n; ++i) s.body[body[std::size_t(i)].first][body[std::size_t(i)].second] = typename Env::cell_type(n - i);
  s.head_row = std::int16_t(body.front().first);
  s.head_col = std::int16_t(body.front().second);
  s.fruit_row = std::int16_t(fruit_row);
  s.fruit_col = std::int16_t(fruit_col);
  s.length = std::int16_t(n);
  return s;
}

/// A generator that must not be called (steps that eat no fruit draw nothing).
struct no_draws {  // plain data with an RLK_HOST_DEVICE call, as the env's functions need
  int calls = 0;
  RLK_HOST_DEVICE std::uint32_t uniform_int(std::uint32_t) {
    ++calls;
    return 0;
  }
};

/// Returns k for uniform_int(n) and records n.
struct fixed_draw {  // plain data with an RLK_HOST_DEVICE call, as the env's functions need
  std::uint32_t k = 0;
  std::uint32_t range_list[8] = {};
  int count = 0;
  RLK_HOST_DEVICE std::uint32_t uniform_int(std::uint32_t n) {
    if (count < 8) range_list[count] = n;
    ++count;
    return k < n ? k : n - 1;
  }
  std::vector<std::uint32_t> ranges() const {
    return std::vector<std::uint32_t>(range_list, range_list + (count < 8 ? count : 8));
  }
};

inline std::string reference(const std::string& file) { return rlk_test::reference_dir() + "/" + file; }

}  // namespace rlk_snake_test

TEST_CASE("snake: replays Jumanji's Snake step for step") {
  using namespace rlk_snake_test;
  const std::vector<run> runs = load(reference("snake_jumanji.txt"));
  REQUIRE(runs.size() >= 8);
  // All boards (12x12 Snake-v1, 4x4, 4x6, 3x5) in the 12x12 env with Params choosing the board.
  CHECK(replay<rlkernels::snake<float>>(runs) >= 4000);
  CHECK(replay<rlkernels::snake<double>>(runs) >= 4000);
  // A 4x4 env: the same 4x4 games, with an unpadded [4, 4, 5] observation.
  CHECK(replay<rlkernels::snake<float, 4, 4>>(runs) >= 500);
  // Sanity of the recording itself: it has full-board endings and wall/body endings.
  int full = 0, crashes = 0, fruits = 0;
  for (const run& r : runs)
    for (const record& x : r.records) {
      full += x.done && x.legal;
      crashes += x.done && !x.legal;
      fruits += x.reward;
    }
  CHECK(full >= 5);
  CHECK(crashes >= 20);
  CHECK(fruits >= 300);
}

TEST_CASE("snake: rules match a brute-force snake on random episodes") {
  using namespace rlk_snake_test;
  using Env = rlkernels::snake<float>;
  const std::pair<int, int> boards[] = {{12, 12}, {5, 7}, {3, 3}, {2, 2}, {1, 4}, {4, 1}, {1, 1}, {2, 3}};
  int full_boards = 0, crashes = 0, fruits = 0;
  for (const auto& board : boards) {
    Env::Params p;
    p.num_rows = board.first;
    p.num_cols = board.second;
    reference_snake ref{board.first, board.second, {}, 0, 0};
    rlkernels::rng ours(7, std::uint64_t(board.first * 100 + board.second)), theirs = ours;
    std::mt19937 policy(std::uint32_t(board.first * 31 + board.second));
    Env::State s{};
    Env::reset(p, s, ours);
    ref.reset(theirs);
    require_same<Env>(p, s, ref);
    for (int t = 0; t < 20000; ++t) {
      INFO("board " << board.first << "x" << board.second << " step " << t);
      std::vector<int> legal;
      for (int a = 0; a < 4; ++a)
        if (ref.legal(a)) legal.push_back(a);
      // Mostly a legal move, now and then any move (walls and self-bites).
      const bool any = legal.empty() || policy() % 20 == 0;
      const int a = any ? int(policy() % 4) : legal[policy() % legal.size()];
      const auto result = Env::step(p, s, a, ours);
      if (!ref.legal(a)) {
        REQUIRE(result.terminated);
        REQUIRE(result.reward == 0.0f);
        ++crashes;
      } else {
        bool full = false;
        const int reward = ref.step(a, theirs, full);
        REQUIRE(result.reward == float(reward));
        REQUIRE(result.terminated == full);
        fruits += reward;
        full_boards += full;
        require_same<Env>(p, s, ref);
        std::vector<float> obs(Env::observation_size);
        Env::observe(p, s, obs.data());
        if (!full) check_observation<Env>(obs.data(), board.first, board.second);
      }
      if (result.terminated) {
        Env::reset(p, s, ours);
        ref.reset(theirs);
        require_same<Env>(p, s, ref);
      }
    }
  }
  CHECK(full_boards >= 20);  // small boards fill up under a random walk
  CHECK(crashes >= 100);
  CHECK(fruits >= 1000);
}

TEST_CASE("snake: action mask") {
  using namespace rlk_snake_test;
  using Env = rlkernels::snake<float>;
  const Env::Params p;
  std::uint8_t m[4];
  SECTION("walls: a length-1 snake in a corner") {
    Env::action_mask(p, make_state<Env>({{0, 0}}, 5, 5), m);
    CHECK(mask_string(m) == "0110");  // right and down
    Env::action_mask(p, make_state<Env>({{11, 11}}, 5, 5), m);
    CHECK(mask_string(m) == "1001");  // up and left
    Env::action_mask(p, make_state<Env>({{6, 6}}, 5, 5), m);
    CHECK(mask_string(m) == "1111");
  }
  SECTION("length 2 may reverse onto its tail (Jumanji masks only cells that stay body)") {
    Env::action_mask(p, make_state<Env>({{5, 5}, {5, 4}}, 0, 0), m);
    CHECK(mask_string(m) == "1111");
  }
  SECTION("length 3 cannot reverse") {
    Env::action_mask(p, make_state<Env>({{5, 5}, {5, 4}, {5, 3}}, 0, 0), m);
    CHECK(mask_string(m) == "1110");
  }
  SECTION("the tail cell is legal: it moves away") {
    // A 2x2 loop: head (5,5), then (6,5), (6,4), tail (5,4) left of the head.
    Env::action_mask(p, make_state<Env>({{5, 5}, {6, 5}, {6, 4}, {5, 4}}, 0, 0), m);
    CHECK(mask_string(m) == "1101");
    Env::State s = make_state<Env>({{5, 5}, {6, 5}, {6, 4}, {5, 4}}, 0, 0);
    no_draws gen;
    const auto r = Env::step(p, s, 3, gen);  // chase the tail
    CHECK_FALSE(r.terminated);
    CHECK(r.reward == 0.0f);
    CHECK(gen.calls == 0);
    CHECK(int(s.body[5][4]) == 4);  // the new head
    CHECK(int(s.body[6][4]) == 1);  // the new tail
    CHECK(int(s.length) == 4);
  }
  SECTION("a smaller board moves the walls") {
    Env::Params small;
    small.num_rows = 3;
    small.num_cols = 4;
    Env::action_mask(small, make_state<Env>({{2, 3}}, 0, 0), m);
    CHECK(mask_string(m) == "1001");
  }
}

TEST_CASE("snake: eating grows the snake and places a fruit on a free cell") {
  using namespace rlk_snake_test;
  using Env = rlkernels::snake<float>;
  Env::Params p;
  p.num_rows = 3;
  p.num_cols = 3;
  // Head (1,1), tail (1,0); fruit to the right of the head.
  Env::State s = make_state<Env>({{1, 1}, {1, 0}}, 1, 2);
  fixed_draw gen{4};
  const auto r = Env::step(p, s, 1, gen);
  CHECK(r.reward == 1.0f);
  CHECK_FALSE(r.terminated);
  CHECK(int(s.length) == 3);
  CHECK(int(s.body[1][2]) == 3);  // new head
  CHECK(int(s.body[1][1]) == 2);
  CHECK(int(s.body[1][0]) == 1);  // the tail stays
  // One draw over the 6 free cells; k = 4 is the 5th free cell in row-major order:
  // free cells (0,0) (0,1) (0,2) (2,0) (2,1) (2,2) -> (2,1).
  REQUIRE(gen.ranges() == std::vector<std::uint32_t>{6});
  CHECK(int(s.fruit_row) == 2);
  CHECK(int(s.fruit_col) == 1);
  // The next move eats nothing: the body ages, the tail cell empties, nothing is drawn.
  no_draws none;
  const auto r2 = Env::step(p, s, 0, none);
  CHECK(r2.reward == 0.0f);
  CHECK_FALSE(r2.terminated);
  CHECK(none.calls == 0);
  CHECK(int(s.body[0][2]) == 3);
  CHECK(int(s.body[1][2]) == 2);
  CHECK(int(s.body[1][1]) == 1);
  CHECK(int(s.body[1][0]) == 0);
  // Observation: order channel is age / length, computed as age * (1 / length).
  std::vector<float> obs(Env::observation_size);
  Env::observe(p, s, obs.data());
  const auto at = [&](int row, int col, int ch) { return obs[std::size_t((row * 12 + col) * 5 + ch)]; };
  CHECK(at(0, 2, 1) == 1.0f);  // head
  CHECK(at(1, 1, 2) == 1.0f);  // tail
  CHECK(at(2, 1, 3) == 1.0f);  // fruit
  CHECK(at(0, 2, 4) == 1.0f);
  CHECK(at(1, 2, 4) == 2.0f * (1.0f / 3.0f));
  CHECK(at(1, 1, 4) == 1.0f / 3.0f);
  check_observation<Env>(obs.data(), 3, 3);
}

TEST_CASE("snake: leaving the board or biting the body terminates") {
  using namespace rlk_snake_test;
  using Env = rlkernels::snake<float>;
  const Env::Params p;
  no_draws gen;
  std::vector<float> obs(Env::observation_size);
  const auto at = [&](int row, int col, int ch) { return obs[std::size_t((row * 12 + col) * 5 + ch)]; };
  SECTION("up through the top wall: Jumanji's head index -1 wraps to the last row in the observation") {
    Env::State s = make_state<Env>({{0, 3}, {1, 3}}, 6, 6);
    const auto r = Env::step(p, s, 0, gen);
    CHECK(r.terminated);
    CHECK(r.reward == 0.0f);
    Env::observe(p, s, obs.data());
    CHECK(at(11, 3, 1) == 1.0f);
    CHECK(at(11, 3, 4) == 1.0f);   // body_state.at[(-1, 3)].set(2)
    CHECK(at(0, 3, 4) == 0.5f);    // the old head aged to 1 of max 2
    CHECK(at(1, 3, 0) == 0.0f);    // the old tail emptied
  }
  SECTION("down through the bottom wall: the head index is past the end, its write is dropped") {
    Env::State s = make_state<Env>({{11, 3}, {10, 3}}, 6, 6);
    CHECK(Env::step(p, s, 2, gen).terminated);
    Env::observe(p, s, obs.data());
    float heads = 0;
    for (int k = 1; k < Env::observation_size; k += 5) heads += obs[std::size_t(k)];
    CHECK(heads == 0.0f);
    CHECK(at(11, 3, 4) == 1.0f);   // the aged old head (1) is now the maximum
  }
  SECTION("into the body") {
    // Head (5,5) facing right, body curling up and around: (5,4) (4,4) (4,5) (4,6) (5,6)...
    Env::State s = make_state<Env>({{5, 5}, {5, 4}, {4, 4}, {4, 5}, {4, 6}}, 0, 0);
    const auto r = Env::step(p, s, 0, gen);  // up into (4,5)
    CHECK(r.terminated);
    CHECK(r.reward == 0.0f);
    CHECK(gen.calls == 0);
  }
  SECTION("an action outside [0, 4) is an illegal move that changes nothing") {
    Env::State s = make_state<Env>({{5, 5}}, 0, 0);
    CHECK(Env::step(p, s, 4, gen).terminated);
    CHECK(Env::step(p, s, -1, gen).terminated);
    CHECK(int(s.head_row) == 5);
  }
}

TEST_CASE("snake: filling the board ends the episode with the fruit on cell (0, 0)") {
  using namespace rlk_snake_test;
  using Env = rlkernels::snake<float>;
  Env::Params p;
  p.num_rows = 2;
  p.num_cols = 2;
  // Head (0,1), then (0,0), tail (1,0); the last free cell (1,1) holds the fruit.
  Env::State s = make_state<Env>({{0, 1}, {0, 0}, {1, 0}}, 1, 1);
  no_draws gen;
  const auto r = Env::step(p, s, 2, gen);
  CHECK(r.reward == 1.0f);
  CHECK(r.terminated);
  CHECK(gen.calls == 0);  // no free cell: nothing drawn
  CHECK(int(s.length) == 4);
  CHECK(int(s.fruit_row) == 0);
  CHECK(int(s.fruit_col) == 0);
  std::uint8_t m[4];
  Env::action_mask(p, s, m);
  CHECK(mask_string(m) == "0001");  // only the tail (1,0) is enterable, as Jumanji reports
  // The same from a 1x2 board, starting with a reset: the head draws over 2 cells, the fruit over 1.
  Env::Params line;
  line.num_rows = 1;
  line.num_cols = 2;
  fixed_draw draws{1};
  Env::reset(line, s, draws);
  CHECK(draws.ranges() == std::vector<std::uint32_t>{2, 1});
  CHECK(int(s.head_col) == 1);
  CHECK(int(s.fruit_col) == 0);
  const auto r2 = Env::step(line, s, 3, gen);
  CHECK(r2.reward == 1.0f);
  CHECK(r2.terminated);
}

TEST_CASE("snake: a smaller board in the 12x12 env is the small env's board, zero-padded") {
  using namespace rlk_snake_test;
  using Big = rlkernels::snake<float>;
  using Small = rlkernels::snake<float, 5, 4>;
  Big::Params bp;
  bp.num_rows = 5;
  bp.num_cols = 4;
  const Small::Params sp;
  rlkernels::rng g1(3, 0), g2(3, 0);
  std::mt19937 policy(5);
  Big::State b{};
  Small::State s{};
  Big::reset(bp, b, g1);
  Small::reset(sp, s, g2);
  std::vector<float> big(Big::observation_size), small(Small::observation_size);
  for (int t = 0; t < 3000; ++t) {
    Big::observe(bp, b, big.data());
    Small::observe(sp, s, small.data());
    std::vector<float> padded(Big::observation_size, 0.0f);
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 4; ++c)
        for (int ch = 0; ch < 5; ++ch) padded[std::size_t((r * 12 + c) * 5 + ch)] = small[std::size_t((r * 4 + c) * 5 + ch)];
    REQUIRE(big == padded);
    std::uint8_t mb[4], ms[4];
    Big::action_mask(bp, b, mb);
    Small::action_mask(sp, s, ms);
    REQUIRE(mask_string(mb) == mask_string(ms));
    const int a = int(policy() % 4);
    const auto rb = Big::step(bp, b, a, g1);
    const auto rs = Small::step(sp, s, a, g2);
    REQUIRE(rb.reward == rs.reward);
    REQUIRE(rb.terminated == rs.terminated);
    if (rb.terminated) {
      Big::reset(bp, b, g1);
      Small::reset(sp, s, g2);
    }
  }
}

TEST_CASE("snake: vec_env with masked random actions") {
  using namespace rlk_snake_test;
  using Env = rlkernels::snake<float>;
  using Vec = rlkernels::vec_env<Env, rlk_test::backend_t>;
  static_assert(rlkernels::check_env<Env>());
  static_assert(rlkernels::detail::has_action_mask<Env>::value);
  static_assert(!rlkernels::detail::has_action_mask<rlkernels::detail::placeholder_env>::value);
  constexpr std::size_t n = 32;
  constexpr std::uint64_t seed = 11;
  Env::Params p;
  p.max_episode_steps = 300;  // short, so that some episodes are truncated
  Vec env(rlk_test::backend(), n, seed, p);
  auto masks = rlk_test::zeros<std::uint8_t>(n * 4);
  auto actions = rlk_test::zeros<std::int32_t>(n);
  std::mt19937 policy(123);

  // Host mirror of vec_env: env i draws from rng(seed, i) resumed from its block counter each step.
  std::vector<Env::State> mirror(n);
  std::vector<std::uint64_t> blocks(n);
  std::vector<int> elapsed(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    rlkernels::rng gen(seed, i, 0);
    Env::reset(p, mirror[i], gen);
    blocks[i] = gen.block();
  }
  int terminated = 0, truncated = 0, fruits = 0, illegal = 0;
  for (int t = 0; t < 3000; ++t) {
    env.action_masks(masks.view());
    const std::vector<std::uint8_t> m = masks.to_host();
    const std::vector<float> obs = env.observations().to_host();
    std::vector<std::int32_t> a(n);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint8_t want[4];
      Env::action_mask(p, mirror[i], want);
      REQUIRE(mask_string(&m[i * 4]) == mask_string(want));
      check_observation<Env>(obs.data() + i * Env::observation_size, 12, 12);
      std::vector<std::int32_t> legal;
      for (int k = 0; k < 4; ++k)
        if (m[i * 4 + std::size_t(k)]) legal.push_back(k);
      // Mostly a legal move; now and then any move, and any move when trapped.
      a[i] = (legal.empty() || policy() % 50 == 0) ? std::int32_t(policy() % 4) : legal[policy() % legal.size()];
      illegal += !m[i * 4 + std::size_t(a[i])];
    }
    actions.assign(a);
    env.step(actions.cview());
    const auto rewards = env.rewards().to_host();
    const auto term = env.terminated().to_host();
    const auto trunc = env.truncated().to_host();
    const auto next_obs = env.observations().to_host();
    const auto final_obs = env.final_observations().to_host();
    for (std::size_t i = 0; i < n; ++i) {
      INFO("step " << t << " env " << i);
      rlkernels::rng gen(seed, i, blocks[i]);
      const auto r = Env::step(p, mirror[i], a[i], gen);
      ++elapsed[i];
      REQUIRE(rewards[i] == r.reward);
      REQUIRE(bool(term[i]) == r.terminated);
      REQUIRE(bool(trunc[i]) == (elapsed[i] >= p.max_episode_steps));
      // A legal move ends the episode only by filling the 144 cells: not in 300 random steps.
      REQUIRE(r.terminated == !m[i * 4 + std::size_t(a[i])]);
      std::vector<float> want(Env::observation_size);
      Env::observe(p, mirror[i], want.data());
      const auto row = [&](const std::vector<float>& v) {
        return std::vector<float>(v.begin() + std::ptrdiff_t(i * Env::observation_size),
                                  v.begin() + std::ptrdiff_t((i + 1) * Env::observation_size));
      };
      REQUIRE(row(final_obs) == want);
      if (r.terminated || trunc[i]) {
        Env::reset(p, mirror[i], gen);
        elapsed[i] = 0;
        Env::observe(p, mirror[i], want.data());
      }
      REQUIRE(row(next_obs) == want);
      blocks[i] = gen.block();
      terminated += term[i];
      truncated += trunc[i] && !term[i];
      fruits += rewards[i] > 0;
    }
  }
  CHECK(terminated >= 20);
  CHECK(illegal == terminated);
  CHECK(truncated >= 20);
  CHECK(fruits >= 200);
  const auto stats = env.get_episode_statistics();
  CHECK(stats.count == std::uint64_t(terminated + truncated));

  // The mask view is checked like the actions.
  auto wrong = rlk_test::zeros<std::uint8_t>(n * 4 - 1);
  CHECK_THROWS_WITH(env.action_masks(wrong.view()), Catch::Contains("expected 128"));
}
