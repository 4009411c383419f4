"""rlkernels.load_policy / Policy: the policy-file format read in Python, its three action maps
checked against hand-computed values, refusals naming the line, and the bundled Crazyflie policy
(train_td3 --export-policy) flying L2F-Crazyflie-v0 from Python."""

import pathlib

import numpy as np
import pytest

import rlkernels

REFERENCE = pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference"
CRAZYFLIE_POLICY = REFERENCE / "l2f_crazyflie_td3_policy.txt"
HUMANOID_POLICY = REFERENCE / "mujoco_humanoid_v5_policy.txt"


def write(tmp_path, lines, name="p.txt"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


# y = W x + b with W = [[1, -2], [0.5, 0.25]], b = [0.125, -3]; x = [1, 0.5] gives y = [0.125, -2.375].
LAYER = ["layer 2 2", "0x1p+0 -0x1p+1", "0x1p-1 0x1p-2", "0x1p-3 -0x1.8p+1"]


def test_rescale_clip_and_discrete_maps(tmp_path):
    head = ["rlkernels-policy 2", "env Test-v0", "observation 2"]
    tail = ["normalize 0 0x1.4p+3 0x1.5798ee2308c3ap-27", "mlp 1 identity identity"] + LAYER
    x = np.array([1.0, 0.5])
    rescale = rlkernels.load_policy(write(tmp_path, head + ["action continuous 2 -2 6 rescale"] + tail))
    assert rescale.rescale and rescale.continuous
    # clip(y, -1, 1) = [0.125, -1] onto [-2, 6]: -2 + (u + 1) * 4
    np.testing.assert_array_equal(rescale(x), [-2 + 1.125 * 4, -2.0])
    clip = rlkernels.load_policy(write(tmp_path, head + ["action continuous 2 -2 6 clip"] + tail))
    np.testing.assert_array_equal(clip(x), [0.125, -2.0])
    # version 1: no action map, clip
    v1 = rlkernels.load_policy(write(tmp_path, ["rlkernels-policy 1"] + head[1:] + ["action continuous 2 -2 6"] + tail))
    assert not v1.rescale
    np.testing.assert_array_equal(v1(np.stack([x, x])), [[0.125, -2.0]] * 2)
    discrete = rlkernels.load_policy(write(tmp_path, head + ["action discrete 2"] + tail))
    assert discrete(x) == 0 and discrete(np.array([0.0, 1.0])).dtype == np.int64
    np.testing.assert_array_equal(discrete(np.array([[1.0, 0.5], [0.0, 0.0]])), [0, 0])
    assert "rescale" in repr(rescale)


def test_hidden_activations(tmp_path):
    # Two layers: h = f(W x + b) = f([0.125, -2.375]), then the identity layer y = h.
    ident = ["layer 2 2", "0x1p+0 0x0p+0", "0x0p+0 0x1p+0", "0x0p+0 0x0p+0"]
    x = np.array([1.0, 0.5])
    want = {"identity": [0.125, -2.375], "tanh": np.tanh([0.125, -2.375]), "relu": [0.125, 0.0],
            "elu": [0.125, np.expm1(-2.375)]}  # ELU (alpha 1): z above 0, exp(z) - 1 below
    for name, y in want.items():
        lines = ["rlkernels-policy 2", "env Test-v0", "observation 2", "action continuous 2 -10 10 clip",
                 "normalize 0 0x1.4p+3 0x1.5798ee2308c3ap-27", f"mlp 2 {name} identity"] + LAYER + ident
        np.testing.assert_allclose(rlkernels.load_policy(write(tmp_path, lines))(x), y, rtol=0, atol=1e-15)


def test_normalised_observations(tmp_path):
    lines = ["rlkernels-policy 2", "env Test-v0", "observation 2", "action continuous 2 -10 10 clip",
             "normalize 1 0x1p+1 0x0p+0", "0x1p+0 0x0p+0", "0x1p+2 0x1p+0", "mlp 1 identity identity"] + LAYER
    p = rlkernels.load_policy(write(tmp_path, lines))
    # z = clip(([3, 5] - [1, 0]) / [2, 1], -2, 2) = [1, 2]; y = [1 - 4 + 0.125, 0.5 + 0.5 - 3]
    np.testing.assert_array_equal(p(np.array([3.0, 5.0])), [-2.875, -2.0])


def test_refusals_name_the_line(tmp_path):
    good = ["rlkernels-policy 2", "env Test-v0", "observation 2", "action continuous 2 -2 6 rescale",
            "normalize 0 0x1.4p+3 0x1.5798ee2308c3ap-27", "mlp 1 identity identity"] + LAYER
    cases = [
        (["rlkernels-policy 3"] + good[1:], "line 1: format version 3"),
        (good[:3] + ["action continuous 2 -2 6 squash"] + good[4:], "line 4: the action map is 'clip' or 'rescale'"),
        (good[:7] + ["0x1p+0 nan"] + good[8:], "line 8: 'nan' is not a finite number"),
        (good[:7] + ["0x1p+0"] + good[8:], "line 8: expected 2 weights, got 1"),
        (good[:-1], "the file ends before biases"),
        (good[:5] + ["mlp 1 identity softplus"] + good[6:], "line 6: unknown activation 'softplus'"),
    ]
    for lines, message in cases:
        with pytest.raises(ValueError, match=message):
            rlkernels.load_policy(write(tmp_path, lines, "bad.txt"))
    p = rlkernels.load_policy(write(tmp_path, good))
    with pytest.raises(ValueError, match=r"shape \[2\] or \[B, 2\]"):
        p(np.zeros(3))


def test_the_crazyflie_policy_flies_in_python():
    """The bundled policy (docs/quadrotor.md, "Using the policy") on 100 episodes of the unchanged
    l2f.Environment() in float64: learning-to-fly's settling fraction (the share of episodes that run
    all 500 steps and end within 0.2 m of the origin) is at least 0.9."""
    policy = rlkernels.load_policy(CRAZYFLIE_POLICY)
    assert policy.env == "L2F-Crazyflie-v0" and policy.rescale
    assert (policy.observation_size, policy.action_size) == (82, 4)
    n = 100
    envs = rlkernels.make_vec("L2F-Crazyflie-v0", n, seed=20261205, dtype="float64", copy=True)
    obs, _ = envs.reset(seed=20261205)
    ended = np.zeros(n, dtype=bool)
    settled = np.zeros(n, dtype=bool)
    for step in range(500):
        obs, _, terminated, truncated, infos = envs.step(policy(obs))
        for i in np.flatnonzero((terminated | truncated) & ~ended):
            ended[i] = True
            final = infos["final_obs"][i]
            settled[i] = bool(truncated[i] and not terminated[i] and np.linalg.norm(final[:3]) < 0.2)
            assert not truncated[i] or step == 499  # l2f's time limit: 500 steps
    assert ended.all()
    assert settled.mean() >= 0.9, f"settling fraction {settled.mean():.2f}"


def test_the_humanoid_policy_walks_in_python():
    """The bundled Humanoid-v5 policy (docs/training.md, "Humanoid-v5: walking within an hour on two
    cores"; 256-256 ELU) on 8 episodes of the package's Humanoid-v5 in float64: each stays up for
    its 1000 steps and scores above 5500 (standing still earns 5000), and the robot ends them
    metres ahead of where it started (the policy walks at about 2.6 m/s)."""
    policy = rlkernels.load_policy(HUMANOID_POLICY)
    assert policy.env == "Humanoid-v5" and not policy.rescale and policy.hidden_activation == "elu"
    assert (policy.observation_size, policy.action_size) == (348, 17)
    n = 8
    envs = rlkernels.make_vec("Humanoid-v5", n, seed=20261207, backend="serial", dtype="float64", copy=True)
    obs, _ = envs.reset(seed=20261207)
    x0 = envs.get_states().view(np.float64)[:, 0].copy()  # qpos[0], the torso's x (the State's first double)
    returns = np.zeros(n)
    for step in range(1000):
        obs, rewards, terminated, truncated, _ = envs.step(policy(obs))
        returns += rewards
        assert not terminated.any(), f"an episode fell at step {step}"
        if step < 999:  # the 1000th step ends the episodes and resets them
            x = envs.get_states().view(np.float64)[:, 0].copy()
        assert truncated.all() == (step == 999)
    assert (returns > 5500).all(), returns
    assert (x - x0 > 0.5 * 0.015 * 999).all(), x - x0  # more than 0.5 m/s over 999 steps of 15 ms
