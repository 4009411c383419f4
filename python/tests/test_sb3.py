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
