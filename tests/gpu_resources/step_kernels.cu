// tests/gpu_resources/step_kernels.cu
// The env step kernels whose GPU resources (registers, stack, spills) scripts/gpu_resources.py
// reads from ptxas and checks against tests/gpu_resource_budget.txt. Compiled for sm_90 only, to a
// cubin (device code only): nothing here runs. Each line of RLK_RESOURCE_ENVS instantiates the
// kernel vec_env<Env, cuda_backend>::step launches (for_each_index_kernel<step_kernel<Env>>)
// through a probe type named after the line, so that ptxas's report names the env; the probe adds
// nothing to step_kernel, so its code and resources are the real kernel's.
#include <rlkernels/envs/cartpole.hpp>
#include <rlkernels/envs/mujoco/ant.hpp>
#include <rlkernels/envs/mujoco/half_cheetah.hpp>
#include <rlkernels/envs/mujoco/hopper.hpp>
#include <rlkernels/envs/mujoco/humanoid.hpp>
#include <rlkernels/envs/mujoco/humanoid_standup.hpp>
#include <rlkernels/envs/mujoco/inverted_double_pendulum.hpp>
#include <rlkernels/envs/mujoco/inverted_pendulum.hpp>
#include <rlkernels/envs/mujoco/pusher.hpp>
#include <rlkernels/envs/mujoco/reacher.hpp>
#include <rlkernels/envs/mujoco/swimmer.hpp>
#include <rlkernels/envs/mujoco/walker2d.hpp>
#include <rlkernels/envs/quadrotor.hpp>
#include <rlkernels/envs/vec_env.hpp>

#include "../../examples/my_robot/my_robot_task.hpp"  // mujoco_env<Task> with position servos

// One line per kernel: X(name in the budget file and docs/gpu-resources.md, env type).
// RLK_RESOURCE_ENVS: checked against the budget (the CTest), one kernel of each kind: a classic env,
// the quadrotor, a planar robot (Hopper; Walker2d, at 255 registers, moved to the unchecked list
// when Pusher came, to keep the test command's time), a 3D robot with floor
// contacts (Ant), the largest model (Humanoid) and Pusher: three kinematic trees (constraint
// islands) and cylinder contacts (GJK/EPA with its polytope on the stack). Reacher's islands and
// Swimmer's fluid forces are in the unchecked list, to keep the test command's time.
// RLK_RESOURCE_MORE_ENVS: only with RLK_RESOURCE_MORE=1 (scripts/gpu_resources.py --more, for
// docs/gpu-resources.md), reported and not checked, kept out of the test command because each
// adds about 10 s of nvcc.
#define RLK_RESOURCE_ENVS(X)                            \
  X(cartpole_float, rlkernels::cartpole<float>)         \
  X(quadrotor_float, rlkernels::quadrotor<float>)       \
  X(hopper_float, rlkernels::hopper<float>)             \
  X(ant_float, rlkernels::ant<float>)                   \
  X(humanoid_float, rlkernels::humanoid<float>)         \
  X(pusher_float, rlkernels::pusher<float>)
#if RLK_RESOURCE_MORE
#define RLK_RESOURCE_MORE_ENVS(X)                       \
  X(walker2d_float, rlkernels::walker2d<float>)         \
  X(hopper_double, rlkernels::hopper<double>)           \
  X(half_cheetah_float, rlkernels::half_cheetah<float>) \
  X(walker2d_double, rlkernels::walker2d<double>)       \
  X(half_cheetah_double, rlkernels::half_cheetah<double>) \
  X(ant_double, rlkernels::ant<double>)                   \
  X(humanoid_double, rlkernels::humanoid<double>)         \
  X(humanoid_standup_float, rlkernels::humanoid_standup<float>) \
  X(inverted_pendulum_float, rlkernels::inverted_pendulum<float>) \
  X(inverted_double_pendulum_float, rlkernels::inverted_double_pendulum<float>) \
  X(swimmer_float, rlkernels::swimmer<float>) \
  X(swimmer_double, rlkernels::swimmer<double>) \
  X(reacher_float, rlkernels::reacher<float>) \
  X(reacher_double, rlkernels::reacher<double>) \
  X(pusher_double, rlkernels::pusher<double>) \
  X(my_robot_float, my_robot_env<float>)
#else
#define RLK_RESOURCE_MORE_ENVS(X)
#endif

namespace rlk_resource_probe {
#define RLK_RESOURCE_PROBE(name, ...) \
  struct name : rlkernels::detail::step_kernel<__VA_ARGS__> {};
RLK_RESOURCE_ENVS(RLK_RESOURCE_PROBE)
RLK_RESOURCE_MORE_ENVS(RLK_RESOURCE_PROBE)
#undef RLK_RESOURCE_PROBE
}  // namespace rlk_resource_probe

// Taking each kernel's address instantiates it as for_each_index(cuda_backend, ...) does.
#define RLK_RESOURCE_INSTANTIATE(name, ...)                                                \
  const void* rlk_resource_kernel_##name() {                                               \
    return reinterpret_cast<const void*>(&rlkernels::detail::for_each_index_kernel<rlk_resource_probe::name>); \
  }
RLK_RESOURCE_ENVS(RLK_RESOURCE_INSTANTIATE)
RLK_RESOURCE_MORE_ENVS(RLK_RESOURCE_INSTANTIATE)
#undef RLK_RESOURCE_INSTANTIATE
