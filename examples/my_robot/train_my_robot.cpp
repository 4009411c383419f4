// examples/my_robot/train_my_robot.cpp: train_ppo on the quadruped of my_robot.xml with the task of
// my_robot_task.hpp, with train_ppo's options, progress line, curve, evaluation and policy export:
//
//   train_my_robot [--total-steps N] [--seed S] [--backend serial|openmp] [train_ppo's options]
//
// docs/physics.md ("Your own robot") walks through the three files of this folder.
#include "../ppo_program.hpp"
#include "my_robot_task.hpp"

namespace {

/// PPO's hyperparameters for the robot: CleanRL's continuous-control defaults with 16 envs of 128
/// steps a batch (the batch size of CleanRL's 1 x 2048), observation and reward normalisation.
rlkernels::ppo_config my_robot_preset(const std::string&) {
  rlkernels::ppo_config c = rlkernels::ppo_config::cleanrl_continuous();
  c.num_envs = 16;
  c.num_steps = 128;
  c.total_timesteps = 3000000;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  rlk_example::program program = rlk_example::ppo_program::program;
  program.name = "train_my_robot";
  program.default_env = "MyRobot-v0";
  return rlk_example::training_main_for(argc, argv, program, rlk_example::ppo_program::hyperparameters(),
                                        my_robot_preset, rlkernels::make_env_entry<my_robot_env<float>>("MyRobot-v0"),
                                        [](auto&&... args) { return rlk_example::ppo_program::run(args...); });
}
