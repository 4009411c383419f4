// Trains a PPO agent (rlkernels/algorithms/ppo.hpp) on an environment chosen by its Gymnasium id,
// entirely in C++ on the chosen backend, then evaluates the deterministic policy over 100 episodes.
//
//   train_ppo [--env ID] [--backend serial|openmp|cuda] [--seed S] [--total-steps N] [options]
//
// While training it shows one updating progress line (plain lines when stdout is not a terminal).
// At the end it writes the learning curve as CSV and, when python3 with matplotlib is present, a
// PNG plot of it (scripts/plot_learning_curve.py), and says where. --help lists every option; the
// hyperparameters start from the env's preset (rlkernels::ppo_preset) that options override.
// The user interface is shared with the other training examples (training_ui.hpp).
//
// Data parallel (docs/distributed.md): under mpirun / srun (MPI) or a torchrun-style launcher
// (NCCL, in train_ppo_cuda) every rank trains --num-envs envs of its own and rank 0 reports:
//
//   mpirun -np 4 train_ppo --env Hopper-v5 --num-envs 8
//
// and one process gives the same run, bit for bit, with --env-shards (the envs in 4 shards that
// reduce as the 4 ranks do):
//
//   train_ppo --env Hopper-v5 --num-envs 32 --env-shards 4

#include <rlkernels/rlkernels.hpp>

#include "ppo_program.hpp"

#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

using namespace rlk_example::ppo_program;


int main(int argc, char** argv) {
  return rlk_example::training_main<rlk_example::classic_control_or_locomotion>(
      argc, argv, program, hyperparameters(), preset,
      "train_ppo trains the classic-control envs (CartPole, Acrobot, MountainCar, Pendulum) and the MuJoCo "
      "locomotion envs (HalfCheetah-v5, Hopper-v5, Walker2d-v5)",
      [](auto&&... args) { return run(args...); });
}
