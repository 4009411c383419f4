// MinAtar games against the reference package: every recorded random draw of minatar 1.0.15
// (tests/reference/minatar_record.py) is replayed into our env and every observation, reward and
// terminal flag is compared; then the games run in vec_env on the backend.
#include "../test_backend.hpp"
#include "minatar/replay.hpp"

#include <rlkernels/envs/minatar/breakout.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include <catch2/catch.hpp>

#include <string>

namespace {
std::string reference(const std::string& file) { return std::string(RLK_REFERENCE_DIR) + "/" + file; }
}  // namespace

TEST_CASE("minatar breakout: replays the reference step for step") {
  const rlk_minatar_test::recording rec = rlk_minatar_test::load(reference("minatar_breakout.txt"));
  CHECK(rlk_minatar_test::replay<rlkernels::minatar_breakout<float>>(rec) >= 4000);
  CHECK(rlk_minatar_test::replay<rlkernels::minatar_breakout<double>>(rec) >= 4000);
  rlkernels::minatar_breakout<float>::Params channels_first;
  channels_first.channels_first = true;
  CHECK(rlk_minatar_test::replay<rlkernels::minatar_breakout<float>>(rec, channels_first) >= 4000);
}
