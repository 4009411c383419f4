// An env that forgot observe(): vec_env<...> must fail with check_env's one-line message.
#include <rlkernels/envs/vec_env.hpp>

struct incomplete_env {
  using scalar_type = float;
  static constexpr int observation_size = 1;
  static constexpr rlkernels::action_kind action_space = rlkernels::action_kind::discrete;
  static constexpr int num_actions = 2;
  struct State {
    float x;
  };
  struct Params {
    int max_episode_steps = 10;
  };
  static void reset(const Params&, State& s, rlkernels::rng&) { s.x = 0; }
  static rlkernels::step_result<float> step(const Params&, State& s, std::int32_t a, rlkernels::rng&) {
    s.x += float(a);
    return {1.0f, false};
  }
};

int main() {
  rlkernels::vec_env<incomplete_env, rlkernels::serial_backend> env(rlkernels::serial, 4, 0);
  return static_cast<int>(env.num_envs());
}
