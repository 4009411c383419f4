// examples/my_robot/my_robot_envs.hpp: the robot in the registry, for programs built with
// RLK_USER_ENVS_HEADER pointing here (the Python module, train_ppo, random_policy: docs/physics.md):
//   pip install . -C cmake.define.RLK_USER_ENVS_HEADER=$PWD/examples/my_robot/my_robot_envs.hpp
//   python -c "import rlkernels; envs = rlkernels.make_vec('MyRobot-v0', 64)"
#pragma once

#include "my_robot_task.hpp"

namespace rlkernels_user_envs {

/// f(entry) for each env of yours, by id; true when f said stop.
template <class Scalar, class F>
bool for_each_entry(F&& f) {
  return f(rlkernels::make_env_entry<my_robot_env<Scalar>>("MyRobot-v0"));
}

}  // namespace rlkernels_user_envs
