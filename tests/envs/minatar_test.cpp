// MinAtar games against the reference package: every recorded random draw of minatar 1.0.15
// (tests/reference/minatar_record.py) is replayed into our env and every observation, reward and
// terminal flag is compared; then the games run in vec_env on the backend. One translation unit
// for all five games (each CUDA translation unit costs CI half a minute); the cases of each game
// are in tests/envs/minatar/<game>_cases.hpp.
#include "../test_backend.hpp"
#include "../reference_dir.hpp"
#include "minatar/replay.hpp"

#include "minatar/asterix_cases.hpp"
#include "minatar/freeway_cases.hpp"
#include "minatar/seaquest_cases.hpp"
#include "minatar/space_invaders_cases.hpp"

#include <rlkernels/core/memory.hpp>
#include <rlkernels/envs/minatar/breakout.hpp>
#include <rlkernels/envs/registry.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace {
std::string reference(const std::string& file) { return rlk_test::reference_dir() + "/" + file; }
}  // namespace

TEST_CASE("minatar breakout: replays the reference step for step") {
  const rlk_minatar_test::recording rec = rlk_minatar_test::load(reference("minatar_breakout.txt"));
  CHECK(rlk_minatar_test::replay<rlkernels::minatar_breakout<float>>(rec) >= 4000);
  CHECK(rlk_minatar_test::replay<rlkernels::minatar_breakout<double>>(rec) >= 4000);
  rlkernels::minatar_breakout<float>::Params channels_first;
  channels_first.channels_first = true;
  CHECK(rlk_minatar_test::replay<rlkernels::minatar_breakout<float>>(rec, channels_first) >= 4000);
}

TEST_CASE("minatar breakout: replays a scripted agent that clears the wall, and the refill") {
  // Recorded by tests/reference/minatar_record_breakout_extra.py: a look-ahead agent keeps the ball
  // in play until it has cleared all 30 bricks twice per run, so the refill (the ball reaching the
  // bottom row with no brick left adds the three rows again) is replayed, then it lets the ball drop.
  const rlk_minatar_test::recording rec = rlk_minatar_test::load(reference("minatar_breakout_extra.txt"));
  int refills = 0, cleared = 0;
  for (const rlk_minatar_test::run& run : rec.runs) {
    int before = -1;
    for (const rlk_minatar_test::record& r : run.records) {
      int bricks = 0;
      for (int cell = 0; cell < 100; ++cell) bricks += r.obs[std::size_t(cell) * 4 + 3];
      cleared += r.kind == 'S' && bricks == 0 && before > 0;
      refills += r.kind == 'S' && bricks == 30 && before == 0;
      before = bricks;
    }
  }
  CHECK(cleared >= 4);
  CHECK(refills >= 4);
  CHECK(rlk_minatar_test::replay<rlkernels::minatar_breakout<float>>(rec) >= 1200);
  CHECK(rlk_minatar_test::replay<rlkernels::minatar_breakout<double>>(rec) >= 1200);
  rlkernels::minatar_breakout<float>::Params channels_first;
  channels_first.channels_first = true;
  CHECK(rlk_minatar_test::replay<rlkernels::minatar_breakout<float>>(rec, channels_first) >= 1200);
}

TEST_CASE("minatar breakout: runs in vec_env; the minimal set maps onto the full one; uint8 observations") {
  using full_t = rlkernels::minatar_breakout<float>;
  using minimal_t = rlkernels::minatar_breakout<float, rlkernels::minatar_action_set::minimal>;
  static_assert(full_t::num_actions == 6 && minimal_t::num_actions == 3);
  CHECK(minimal_t::full_action(0) == 0);
  CHECK(minimal_t::full_action(1) == 1);
  CHECK(minimal_t::full_action(2) == 3);
  const std::size_t n = 32;
  rlkernels::vec_env<full_t, rlk_test::backend_t> full(rlk_test::backend(), n, 5);
  rlkernels::vec_env<minimal_t, rlk_test::backend_t> minimal(rlk_test::backend(), n, 5);
  rlkernels::rng agent(77, 0);
  std::uint64_t episodes = 0;
  for (int t = 0; t < 2000; ++t) {
    std::vector<std::int32_t> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = std::int32_t(agent.uniform_int(3));
      b[i] = minimal_t::full_action(a[i]);
    }
    const auto actions_min = rlk_test::make(a);
    const auto actions_full = rlk_test::make(b);
    minimal.step(actions_min.cview());
    full.step(actions_full.cview());
    const std::vector<float> obs = minimal.observations().to_host();
    REQUIRE(obs == full.observations().to_host());
    REQUIRE(minimal.rewards().to_host() == full.rewards().to_host());
    REQUIRE(minimal.terminated().to_host() == full.terminated().to_host());
    for (std::size_t i = 0; i < n; ++i) {
      int paddle = 0, ball = 0;
      for (int c = 0; c < 100; ++c) {
        paddle += obs[i * 400 + std::size_t(c) * 4 + 0] == 1.0f;
        ball += obs[i * 400 + std::size_t(c) * 4 + 1] == 1.0f;
      }
      REQUIRE(paddle == 1);
      REQUIRE(ball == 1);
    }
  }
  episodes = minimal.get_episode_statistics().count;
  CHECK(episodes > n);
  // uint8 observations: the same 0/1 values.
  auto bytes = rlk_test::zeros<std::uint8_t>(n * 400);
  rlkernels::convert(rlk_test::backend(), minimal.observations().cview(), bytes.view());
  const std::vector<std::uint8_t> b8 = bytes.to_host();
  const std::vector<float> f = minimal.observations().to_host();
  for (std::size_t k = 0; k < f.size(); ++k) REQUIRE(float(b8[k]) == f[k]);
}

TEST_CASE("minatar: registry ids as minatar registers them (v0 full action set, v1 minimal)") {
  struct expected {
    const char* id;
    int actions;
    int channels;
  };
  const expected table[] = {{"MinAtar/Asterix-v0", 6, 4},       {"MinAtar/Asterix-v1", 5, 4},
                            {"MinAtar/Breakout-v0", 6, 4},      {"MinAtar/Breakout-v1", 3, 4},
                            {"MinAtar/Freeway-v0", 6, 7},       {"MinAtar/Freeway-v1", 3, 7},
                            {"MinAtar/Seaquest-v0", 6, 10},     {"MinAtar/Seaquest-v1", 6, 10},
                            {"MinAtar/SpaceInvaders-v0", 6, 6}, {"MinAtar/SpaceInvaders-v1", 4, 6}};
  for (const expected& e : table) {
    INFO(e.id);
    REQUIRE(rlkernels::is_registered(e.id));
    const rlkernels::env_info info = rlkernels::visit_env(e.id, [](auto entry) { return entry.info; });
    CHECK(info.num_actions == e.actions);
    CHECK(info.observation_size == 100 * e.channels);
    CHECK(info.max_episode_steps == 0);
  }
}
