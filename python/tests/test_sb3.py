"""rlkernels.sb3: Stable-Baselines3's VecEnv conventions, and a short PPO run (when SB3 is installed)."""

import numpy as np
import pytest

sb3 = pytest.importorskip("stable_baselines3")

import rlkernels  # noqa: E402
import rlkernels.sb3  # noqa: E402


def test_vecenv_conventions():
    from stable_baselines3.common.env_checker import check_env  # noqa: F401  (single-env checker; not for VecEnv)
    venv = rlkernels.sb3.make_vec_env("CartPole-v1", n_envs=4, seed=0, max_episode_steps=15)
    venv.seed(3)
    obs = venv.reset()
    assert obs.shape == (4, 4)
    seen_truncated = seen_terminated = False
    for _ in range(100):
        prev = obs
        venv.step_async(np.array([venv.action_space.sample() for _ in range(4)]))
        obs, rew, dones, infos = venv.step_wait()
        assert not np.shares_memory(prev, obs)
        assert rew.dtype == np.float32 and dones.dtype == np.bool_
        for i, d in enumerate(dones):
            if d:
                assert infos[i]["terminal_observation"].shape == (4,)
                seen_truncated |= infos[i]["TimeLimit.truncated"]
                seen_terminated |= not infos[i]["TimeLimit.truncated"]
                assert infos[i]["episode"]["l"] <= 15
            else:
                assert "terminal_observation" not in infos[i]
    assert seen_truncated and seen_terminated
    assert venv.get_attr("render_mode") == [None] * 4
    assert venv.env_is_wrapped(object) == [False] * 4


def test_ppo_trains_through_the_adapter():
    from stable_baselines3 import PPO
    venv = rlkernels.sb3.make_vec_env("CartPole-v1", n_envs=8, seed=0)
    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=128, n_epochs=4, seed=0, device="cpu", verbose=0)
    model.learn(total_timesteps=8 * 64 * 6)
    assert len(model.ep_info_buffer) > 0
    obs = venv.reset()
    action, _ = model.predict(obs, deterministic=True)
    assert action.shape == (8,)


def test_a_step_the_engine_cannot_take_is_a_truncation_for_sb3():
    venv = rlkernels.sb3.make_vec_env("Hopper-v5", n_envs=2, seed=0, backend="serial", dtype="float64")
    venv.reset()
    envs = venv.envs_rlk
    s = envs.get_states()
    s.view(np.float64)[1, 6] = 1e11  # env 1's qvel[0] above MuJoCo's 1e10 bound: its next step fails
    envs.set_states(s)
    kept = envs.final_observations[1].copy()
    with pytest.warns(RuntimeWarning, match="truncated"):
        venv.step_async(np.zeros((2, 3)))
        _, _, dones, infos = venv.step_wait()
    assert dones.tolist() == [False, True]
    assert infos[1]["TimeLimit.truncated"] is True  # SB3 bootstraps from the kept state
    assert infos[1]["failed_step"] is True
    np.testing.assert_array_equal(infos[1]["terminal_observation"], kept)
    assert "failed_step" not in infos[0]
