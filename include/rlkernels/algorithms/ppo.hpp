// rlkernels/algorithms/ppo.hpp
// Proximal Policy Optimization (Schulman et al. 2017) as CleanRL's ppo.py / ppo_continuous_action.py
// compute it, composed only of public rlkernels pieces: vec_env (the batch of envs), rollout_buffer
// and gae (the rollout and its advantages), the PPO losses and distributions, two MLPs (actor and
// critic) and Adam. Everything stays in the backend's memory: on CUDA a whole training run never
// copies a batch to the host. Read `iterate()` top to bottom to see one PPO iteration; it is the
// loop you would write yourself.
#pragma once

#include "ppo_config.hpp"
#include "ppo_kernels.hpp"
#include "ppo_trainer.hpp"
