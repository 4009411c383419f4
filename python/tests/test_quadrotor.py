"""L2F-Crazyflie-v0 from Python: spaces, the l2f configuration as keyword arguments, and a
hovering drone staying in the air while a falling one terminates."""

import numpy as np
import pytest

import rlkernels


def test_spaces_and_defaults():
    envs = rlkernels.make_vec("L2F-Crazyflie-v0", 8, seed=3)
    obs, _ = envs.reset(seed=3)
    assert obs.shape == (8, 82)
    assert envs.single_action_space.shape == (4,)
    assert np.all(envs.single_action_space.low == -1) and np.all(envs.single_action_space.high == 1)
    p = rlkernels.default_params("L2F-Crazyflie-v0")
    # l2f.Environment()'s reward: the value its comments call "action" is the angular-acceleration weight
    assert p["reward_angular_acceleration"] == pytest.approx(2.0)
    assert p["reward_action"] == 0
    assert p["reward_position"] == pytest.approx(10.0)
    assert p["max_episode_steps"] == 500
    # at reset the action history (the last 64 numbers) holds the rotor speeds as actions, in [-1, 0]
    history = obs[:, 18:].reshape(8, 16, 4)
    assert np.all(history <= 0) and np.all(history >= -1)
    assert np.all(history == history[:, :1, :])


def test_keyword_arguments_change_the_reward():
    a = rlkernels.make_vec("L2F-Crazyflie-v0", 4, seed=1, dtype="float64")
    b = rlkernels.make_vec("L2F-Crazyflie-v0", 4, seed=1, dtype="float64", reward_constant=2.1)
    a.reset(seed=1)
    b.reset(seed=1)
    action = np.full((4, 4), 0.612)
    _, ra, ta, _, _ = a.step(action)
    _, rb, tb, _, _ = b.step(action)
    live = ~ta
    assert np.array_equal(ta, tb)
    np.testing.assert_allclose(rb[live] - ra[live], 1.0, rtol=0, atol=1e-12)


def test_motors_off_terminates_and_the_history_records_actions():
    envs = rlkernels.make_vec("L2F-Crazyflie-v0", 16, seed=5, dtype="float64")
    envs.reset(seed=5)
    ended = np.zeros(16, dtype=bool)
    for t in range(200):
        obs, reward, terminated, truncated, _ = envs.step(np.full((16, 4), -1.0))
        assert not truncated.any()
        assert np.all(reward[terminated] == 0)
        ended |= terminated
        running = ~terminated
        assert np.all(obs[running, 18:22] == -1.0)  # newest action first
    assert ended.all()


def test_domain_randomisation_keywords():
    p = rlkernels.default_params("L2F-Crazyflie-v0")
    assert p["randomize_mass"] is False or p["randomize_mass"] == 0
    # with the thrust-to-weight ratio randomised, one action accelerates the airframes of the batch
    # differently
    n = 64
    a = rlkernels.make_vec("L2F-Crazyflie-v0", n, seed=2, dtype="float64", init_guidance=1.0)
    b = rlkernels.make_vec("L2F-Crazyflie-v0", n, seed=2, dtype="float64", init_guidance=1.0,
                           randomize_thrust_to_weight=True, randomize_thrust_to_weight_min=2.0,
                           randomize_thrust_to_weight_max=5.0)
    a.reset(seed=2)
    b.reset(seed=2)
    action = np.full((n, 4), 0.612)
    for _ in range(10):
        oa, _, ta, _, _ = a.step(action)
        ob, _, tb, _, _ = b.step(action)
    assert not ta.any() and not tb.any()
    vz_a, vz_b = oa[:, 14], ob[:, 14]  # world-frame vertical velocity
    assert np.ptp(vz_b) > 3 * np.ptp(vz_a)
    with pytest.raises(ValueError, match="thrust_to_weight"):
        rlkernels.make_vec("L2F-Crazyflie-v0", 4, randomize_thrust_to_weight=True, randomize_thrust_to_weight_min=1.0)
