"""rlkernels.make_vec: the Gymnasium VectorEnv contract, exactness against Gymnasium, zero copy,
reproducibility and bad input."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import rlkernels


# ---- registry and spaces ----

def test_registered_envs_lists_every_id():
    ids = rlkernels.registered_envs()
    for want in ("CartPole-v1", "Pendulum-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0",
                 "HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5", "HumanoidStandup-v5",
                 "InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Swimmer-v5", "Reacher-v5", "Pusher-v5", "MinAtar/Breakout-v1", "Snake-v1",
                 "Maze-v0"):
        assert want in ids
    assert len(ids) == len(set(ids))
    for env_id in ids:  # every id makes an env that steps
        envs = rlkernels.make_vec(env_id, 3, seed=0)
        obs, _ = envs.reset(seed=1)
        assert obs.shape == envs.observation_space.shape
        assert envs.single_observation_space.contains(obs[0].copy()) or env_id.startswith(("Snake", "Maze", "MinAtar"))
        out = envs.step(envs.action_space.sample())
        assert len(out) == 5


# (id, dtype that makes the observation dtype Gymnasium's)
GYMNASIUM_IDS = [("CartPole-v0", "float32"), ("CartPole-v1", "float32"), ("MountainCar-v0", "float32"),
                 ("MountainCarContinuous-v0", "float32"), ("Pendulum-v1", "float32"), ("Acrobot-v1", "float32")]
MUJOCO_IDS = [("HalfCheetah-v5", "float64"), ("Hopper-v5", "float64"), ("Walker2d-v5", "float64"), ("Ant-v5", "float64"),
              ("Humanoid-v5", "float64"), ("HumanoidStandup-v5", "float64"), ("InvertedPendulum-v5", "float64"), ("Swimmer-v5", "float64"),
              ("InvertedDoublePendulum-v5", "float64"), ("Reacher-v5", "float64"), ("Pusher-v5", "float64")]


def _mujoco_available():
    """Gymnasium's MuJoCo envs can be made (pip install "gymnasium[mujoco]": mujoco and imageio)."""
    try:
        gym.make("Hopper-v5").close()
        return True
    except Exception:  # ImportError, DependencyNotInstalled, ...
        return False


@pytest.mark.parametrize("env_id,dtype", GYMNASIUM_IDS + (MUJOCO_IDS if _mujoco_available() else []))
def test_spaces_equal_gymnasium(env_id, dtype):
    ref = gym.make(env_id)
    envs = rlkernels.make_vec(env_id, 4, seed=0, dtype=dtype)
    assert envs.single_observation_space == ref.observation_space
    assert envs.single_action_space == ref.action_space
    ref_vec = gym.make_vec(env_id, num_envs=4, vectorization_mode="sync")
    assert envs.observation_space == ref_vec.observation_space
    assert envs.action_space == ref_vec.action_space
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert rlkernels.env_info(env_id)["max_episode_steps"] == ref.spec.max_episode_steps
    ref.close()
    ref_vec.close()


def test_params_are_gymnasium_kwargs_for_mujoco():
    if not _mujoco_available():
        pytest.skip("Gymnasium's MuJoCo envs are not installed: pip install \"mujoco==3.12.0\" \"gymnasium[mujoco]==1.4.0\" (as .ci/run)")
    hopper = gym.make("Hopper-v5").unwrapped
    p = rlkernels.default_params("Hopper-v5")
    assert p["healthy_z_range"] == pytest.approx(hopper._healthy_z_range)
    assert p["healthy_angle_range"] == pytest.approx(hopper._healthy_angle_range)
    assert p["ctrl_cost_weight"] == pytest.approx(hopper._ctrl_cost_weight)
    assert p["frame_skip"] == hopper.frame_skip
    envs = rlkernels.make_vec("Hopper-v5", 2, seed=0, ctrl_cost_weight=0.5, healthy_z_range=(0.5, 3.0))
    assert envs.params["ctrl_cost_weight"] == 0.5
    assert envs.params["healthy_z_range"] == (0.5, 3.0)
    # the 3D robots: every Params field is a keyword of Gymnasium's constructor, with its default
    import inspect
    for env_id in ("Ant-v5", "Humanoid-v5", "HumanoidStandup-v5", "InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Swimmer-v5",
                   "Reacher-v5", "Pusher-v5"):
        ref = gym.make(env_id).unwrapped
        kwargs = inspect.signature(type(ref).__init__).parameters
        for name, value in rlkernels.default_params(env_id).items():
            if name == "max_episode_steps":
                continue
            assert name in kwargs, (env_id, name)
            default = kwargs[name].default
            if isinstance(value, tuple):
                assert value == pytest.approx(tuple(default)), (env_id, name)
            else:
                assert value == pytest.approx(default), (env_id, name)


# ---- exactness against Gymnasium (CartPole in double, both kinds of episode end) ----

def _cartpole_states(envs):
    return envs.get_states().view(np.float64).reshape(envs.num_envs, 4)


def test_cartpole_bit_identical_to_gymnasium_same_step_autoreset():
    n, limit = 8, 25  # a short time limit, so that both terminations and truncations happen
    ours = rlkernels.make_vec("CartPole-v1", n, seed=7, dtype="float64", max_episode_steps=limit)
    ref = SyncVectorEnv([lambda: gym.make("CartPole-v1", max_episode_steps=limit) for _ in range(n)],
                        autoreset_mode=AutoresetMode.SAME_STEP)
    obs, _ = ours.reset(seed=7)
    ref.reset(seed=0)
    for i, s in enumerate(_cartpole_states(ours)):
        ref.envs[i].unwrapped.state = s.copy()
    rng = np.random.default_rng(0)
    ends = {"terminated": 0, "truncated": 0}
    for step in range(400):
        actions = rng.integers(0, 2, size=n)
        obs, rew, term, trunc, info = ours.step(actions)
        r_obs, r_rew, r_term, r_trunc, r_info = ref.step(actions)
        np.testing.assert_array_equal(rew, r_rew)
        np.testing.assert_array_equal(term, r_term)
        np.testing.assert_array_equal(trunc, r_trunc)
        done = term | trunc
        if done.any():
            np.testing.assert_array_equal(info["_final_obs"], r_info["_final_obs"])
            assert set(info) >= {"final_obs", "_final_obs", "final_info", "_final_info"}
            for i in np.flatnonzero(done):
                # Gymnasium observes float32(state); ours is the double state itself
                assert info["final_obs"][i].astype(np.float32).tobytes() == r_info["final_obs"][i].tobytes()
            ends["terminated"] += int(term.sum())
            ends["truncated"] += int((trunc & ~term).sum())
        # where no episode ended, Gymnasium's state must equal ours bit for bit
        states = _cartpole_states(ours)
        for i in range(n):
            if done[i]:  # the reset states come from different generators: hand ours to Gymnasium
                ref.envs[i].unwrapped.state = states[i].copy()
            else:
                assert np.asarray(ref.envs[i].unwrapped.state, dtype=np.float64).tobytes() == states[i].tobytes()
                assert obs[i].astype(np.float32).tobytes() == r_obs[i].tobytes()
    assert ends["terminated"] > 20 and ends["truncated"] > 5, ends


def test_final_obs_array_layout_holds_the_same_observations():
    objects = rlkernels.make_vec("CartPole-v1", 32, seed=4)
    arrays = rlkernels.make_vec("CartPole-v1", 32, seed=4, final_obs="array")
    objects.reset(seed=4)
    arrays.reset(seed=4)
    rng = np.random.default_rng(1)
    ended = 0
    for _ in range(100):
        a = rng.integers(0, 2, size=32)
        _, _, _, _, io = objects.step(a)
        _, _, _, _, ia = arrays.step(a)
        assert ("final_obs" in io) == ("final_obs" in ia)
        if "final_obs" in io:
            np.testing.assert_array_equal(io["_final_obs"], ia["_final_obs"])
            mask = io["_final_obs"]
            np.testing.assert_array_equal(np.stack(io["final_obs"][mask]), ia["final_obs"][mask])
            assert all(x is None for x in io["final_obs"][~mask])
            ended += int(mask.sum())
    assert ended > 50
    with pytest.raises(ValueError, match="final_obs must be"):
        rlkernels.make_vec("CartPole-v1", 2, final_obs="list")


# ---- zero copy ----

def test_observations_are_views_of_the_same_memory():
    envs = rlkernels.make_vec("CartPole-v1", 64, seed=0)
    obs, _ = envs.reset(seed=0)
    address = obs.__array_interface__["data"][0]
    for _ in range(10):
        obs2, rew, term, trunc, _ = envs.step(envs.action_space.sample())
        assert obs2.__array_interface__["data"][0] == address
        assert not obs2.flags.owndata
    assert np.shares_memory(obs2, envs.final_observations) is False  # two buffers
    # a DLPack round trip through NumPy shares the memory
    assert np.shares_memory(np.from_dlpack(obs2), obs2)
    # copy=True returns fresh arrays
    fresh = rlkernels.make_vec("CartPole-v1", 4, seed=0, copy=True)
    a, _ = fresh.reset(seed=0)
    b, *_ = fresh.step(np.zeros(4, dtype=np.int64))
    assert not np.shares_memory(a, b)


def test_actions_of_the_right_dtype_are_not_copied():
    envs = rlkernels.make_vec("Pendulum-v1", 16, seed=0)
    a = np.zeros((16, 1), dtype=np.float32)
    assert envs._as_actions(a) is a
    d = rlkernels.make_vec("CartPole-v1", 16, seed=0)
    i32 = np.ones(16, dtype=np.int32)
    assert d._as_actions(i32) is i32


def test_jax_round_trip():
    jax = pytest.importorskip("jax")
    envs = rlkernels.make_vec("CartPole-v1", 8, seed=0)
    obs, _ = envs.reset(seed=0)
    x = jax.dlpack.from_dlpack(obs)
    np.testing.assert_array_equal(np.asarray(x), obs)
    envs.step(jax.numpy.zeros(8, dtype=jax.numpy.int32))


def test_torch_round_trip():
    torch = pytest.importorskip("torch")
    envs = rlkernels.make_vec("Pendulum-v1", 8, seed=0)
    obs, _ = envs.reset(seed=0)
    t = torch.from_dlpack(obs)
    assert t.data_ptr() == obs.__array_interface__["data"][0]
    envs.step(torch.zeros((8, 1), dtype=torch.float32))


# ---- reproducibility ----

def _rollout(envs, steps=200, seed=0):
    rng = np.random.default_rng(seed)
    envs.reset(seed=123)
    out = []
    for _ in range(steps):
        a = rng.uniform(-1, 1, size=envs.action_space.shape).astype(np.float32)
        obs, rew, term, trunc, _ = envs.step(a)
        out.append((obs.copy(), rew.copy(), term.copy(), trunc.copy()))
    return out


@pytest.mark.parametrize("env_id", ["Pendulum-v1", "Hopper-v5"])
def test_serial_and_openmp_bit_identical(env_id):
    a = _rollout(rlkernels.make_vec(env_id, 32, backend="serial"))
    b = _rollout(rlkernels.make_vec(env_id, 32, backend="openmp", num_threads=2))
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            assert u.tobytes() == v.tobytes()


def test_seeded_reset_reproduces_and_unseeded_reset_moves_on():
    envs = rlkernels.make_vec("CartPole-v1", 16, seed=5)
    first, _ = envs.reset(seed=5)
    first = first.copy()
    again, _ = envs.reset(seed=5)
    np.testing.assert_array_equal(first, again)
    other, _ = envs.reset()
    assert not np.array_equal(first, other)
    # the unseeded sequence is itself determined by the last seed
    envs2 = rlkernels.make_vec("CartPole-v1", 16, seed=99)
    envs2.reset(seed=5)
    other2, _ = envs2.reset()
    np.testing.assert_array_equal(other, other2)


# ---- Gymnasium's tools on our envs ----

def test_gymnasium_env_checker_on_single_env():
    from gymnasium.utils.env_checker import check_env
    for env_id in ("CartPole-v1", "Pendulum-v1", "MountainCarContinuous-v0"):
        check_env(rlkernels.make(env_id, seed=0), skip_render_check=True)


def test_record_episode_statistics_wrapper_agrees_with_ours():
    from gymnasium.wrappers.vector import RecordEpisodeStatistics
    envs = RecordEpisodeStatistics(rlkernels.make_vec("CartPole-v1", 16, seed=3), buffer_length=10_000)
    envs.reset(seed=3)
    envs.unwrapped.clear_episode_statistics()
    returns = []
    for _ in range(300):
        _, _, _, _, info = envs.step(envs.action_space.sample())
        if "episode" in info:
            returns.extend(info["episode"]["r"][info["_episode"]].tolist())
    stats = envs.unwrapped.episode_statistics()
    assert stats["count"] == len(returns) > 50
    assert stats["mean_return"] == pytest.approx(np.mean(returns), rel=1e-6)
    assert stats["max_return"] == pytest.approx(max(returns))


def test_action_masks_for_snake():
    envs = rlkernels.make_vec("Snake-v1", 8, seed=0)
    obs, info = envs.reset(seed=0)
    assert info["action_mask"].shape == (8, 4) and info["action_mask"].dtype == np.bool_
    masks = info["action_mask"]
    actions = np.array([np.flatnonzero(m)[0] for m in masks])
    _, _, _, _, info = envs.step(actions)
    np.testing.assert_array_equal(info["action_mask"], envs.action_masks())
    with pytest.raises(ValueError, match="no action mask"):
        rlkernels.make_vec("CartPole-v1", 2, seed=0).action_masks()


# ---- bad input: a clear exception, and the envs unchanged ----

def _snapshot(envs):
    return envs.get_states().copy(), envs.final_observations.copy()


def test_unknown_id_suggests_the_closest():
    with pytest.raises(KeyError, match="did you mean 'CartPole-v1'"):
        rlkernels.make_vec("cartpole-v1", 4)
    with pytest.raises(KeyError, match="Pendulum-v1"):
        rlkernels.make_vec("Pendulum-v0", 4)


def test_bad_sizes_and_options():
    with pytest.raises(ValueError, match="num_envs must be >= 1"):
        rlkernels.make_vec("CartPole-v1", 0)
    with pytest.raises(TypeError, match="num_envs must be an int"):
        rlkernels.make_vec("CartPole-v1", 2.5)
    with pytest.raises(ValueError, match="backend"):
        rlkernels.make_vec("CartPole-v1", 2, backend="gpu")
    with pytest.raises(ValueError, match="dtype"):
        rlkernels.make_vec("CartPole-v1", 2, dtype="float16")
    with pytest.raises(ValueError, match="unknown keyword argument 'gravityy'.*gravity"):
        rlkernels.make_vec("CartPole-v1", 2, gravityy=9.8)
    with pytest.raises(ValueError, match="'max_episode_steps' must be an int"):
        rlkernels.make_vec("CartPole-v1", 2, max_episode_steps=1.5)
    with pytest.raises(ValueError, match="'terminate_when_unhealthy' must be a bool"):
        rlkernels.make_vec("Hopper-v5", 2, terminate_when_unhealthy=1)
    with pytest.raises(TypeError, match="seed must be an int"):
        rlkernels.make_vec("CartPole-v1", 2, seed=[1, 2])
    envs = rlkernels.make_vec("CartPole-v1", 2, seed=0)
    with pytest.raises(ValueError, match="no options"):
        envs.reset(options={"reset_mask": np.ones(2, dtype=bool)})


@pytest.mark.parametrize("backend", ["serial", "openmp"])
def test_bad_actions_change_nothing(backend):
    envs = rlkernels.make_vec("CartPole-v1", 8, seed=0, backend=backend)
    envs.reset(seed=0)
    envs.step(np.ones(8, dtype=np.int64))
    before = _snapshot(envs)
    with pytest.raises(ValueError, match=r"shape \(8,\)"):
        envs.step(np.zeros(7, dtype=np.int64))
    with pytest.raises(TypeError, match="integer actions"):
        envs.step(np.zeros(8, dtype=np.float32))
    bad = np.zeros(8, dtype=np.int64)
    bad[5] = 2
    with pytest.raises(ValueError, match="env 5"):
        envs.step(bad)
    bad[5] = 2**40
    with pytest.raises(ValueError, match="env 5"):
        envs.step(bad)
    after = _snapshot(envs)
    for x, y in zip(before, after):
        assert x.tobytes() == y.tobytes()

    cont = rlkernels.make_vec("Pendulum-v1", 4, seed=0, backend=backend)
    cont.reset(seed=0)
    before = _snapshot(cont)
    a = np.zeros((4, 1), dtype=np.float32)
    a[2, 0] = np.nan
    with pytest.raises(ValueError, match="env 2"):
        cont.step(a)
    with pytest.raises(ValueError, match=r"shape \(4, 1\)"):
        cont.step(np.zeros(4, dtype=np.float32))
    with pytest.raises(TypeError, match="floating-point"):
        cont.step(np.zeros((4, 1), dtype=np.int32))
    after = _snapshot(cont)
    for x, y in zip(before, after):
        assert x.tobytes() == y.tobytes()


def test_set_states_checks_its_input():
    envs = rlkernels.make_vec("CartPole-v1", 4, seed=0, dtype="float64")
    s = envs.get_states()
    with pytest.raises(ValueError, match=r"shape \(4, 32\)"):
        envs.set_states(s[:3])
    s.view(np.float64)[:, 0] = 1.0  # move every cart to x = 1
    envs.set_states(s)
    obs, _ = envs.reset(seed=0)
    envs.set_states(s)
    np.testing.assert_array_equal(envs._obs[:, 0], np.ones(4))


# ---- the physics engine's counters: nothing ends an episode unannounced ----

def test_engine_counters_are_read_and_a_rise_warns_once():
    envs = rlkernels.make_vec("Hopper-v5", 8, seed=0, backend="serial", dtype="float64")
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    terminated = 0
    for _ in range(300):
        _, _, term, _, infos = envs.step(rng.uniform(-1, 1, size=(8, 3)))
        terminated += int(term.sum())
        assert "failed_step" not in infos
    assert terminated > 0  # Hopper falls
    assert envs.unstable_steps() == 0
    assert envs.capacity_overflows() == 0
    assert not envs._engine_warned

    cartpole = rlkernels.make_vec("CartPole-v1", 4, seed=0, backend="serial")
    assert not cartpole._env.has_engine_counters
    assert cartpole.unstable_steps() == 0 and cartpole.capacity_overflows() == 0


def _explode(envs, which):
    """Sets qvel[0] of the envs `which` (Hopper-v5, float64) above MuJoCo's 1e10 bound: their next step fails."""
    s = envs.get_states()
    s.view(np.float64)[which, 6] = 1e11  # the State: qpos[6], qvel[6], ...
    envs.set_states(s)


@pytest.mark.parametrize("final_obs", ["objects", "array"])
def test_a_step_the_engine_cannot_take_ends_the_episode_as_truncated(final_obs):
    envs = rlkernels.make_vec("Hopper-v5", 4, seed=0, backend="serial", dtype="float64", final_obs=final_obs)
    envs.reset(seed=0)
    _explode(envs, [1, 2])
    before = envs._obs.copy()
    with pytest.warns(RuntimeWarning, match=r"Hopper-v5: 2 env step\(s\) could not be computed .* truncated"):
        obs, rew, term, trunc, infos = envs.step(np.zeros((4, 3)))
    np.testing.assert_array_equal(term, [False, False, False, False])  # not a terminal state: bootstrap
    np.testing.assert_array_equal(trunc, [False, True, True, False])
    np.testing.assert_array_equal(infos["failed_step"], [False, True, True, False])
    np.testing.assert_array_equal(infos["_failed_step"], [False, True, True, False])
    for i in (1, 2):  # the final observation is the state the env kept, the one before the step
        np.testing.assert_array_equal(infos["final_obs"][i], before[i])
        assert not np.array_equal(obs[i], before[i])  # reset in the same step
    assert envs.unstable_steps() == 2
    assert envs.episode_statistics()["count"] == 2
    assert envs._engine_warned == {"unstable_steps"}

    # A later failure is marked again, without a second warning; time-limit truncations are not marked.
    _explode(envs, [3])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, _, term, trunc, infos = envs.step(np.zeros((4, 3)))
    np.testing.assert_array_equal(infos["failed_step"], [False, False, False, True])
    assert not term[3] and trunc[3]
    limited = rlkernels.make_vec("Hopper-v5", 2, seed=0, backend="serial", dtype="float64", max_episode_steps=1)
    limited.reset(seed=0)
    _, _, _, trunc, infos = limited.step(np.zeros((2, 3)))
    assert trunc.all() and "failed_step" not in infos

    # reset() clears the counters: the next failure is seen as one
    envs.reset(seed=1)
    _explode(envs, [0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, _, _, _, infos = envs.step(np.zeros((4, 3)))
    np.testing.assert_array_equal(infos["failed_step"], [True, False, False, False])


def test_one_env_reports_a_failed_step():
    env = rlkernels.make("Hopper-v5", seed=0, dtype="float64")
    env.reset(seed=0)
    _explode(env.unwrapped_vec, [0])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, _, term, trunc, info = env.step(np.zeros(3))
    assert not term and trunc and info["failed_step"] is True
    _, _, _, _, info = env.step(np.zeros(3))
    assert "failed_step" not in info



# ---- capacity: the MuJoCo envs' workspace, "measured", "full" (every contact) or "auto" ----

def _capacities(measured, full):
    return {"measured": measured, "full": full, "auto": {"serial": full, "openmp": full, "cuda": measured}}


def test_capacities_of_each_choice_are_reported():
    assert rlkernels.capacities("Hopper-v5") == _capacities((6, 20), (14, 44))
    assert rlkernels.capacities("Humanoid-v5") == _capacities((16, 36), (190, 311))
    assert rlkernels.capacities("Walker2d-v5") == _capacities((10, 36), (14, 68))
    assert rlkernels.capacities("HalfCheetah-v5") == _capacities((14, 47), (16, 76))
    assert rlkernels.capacities("Pusher-v5") == _capacities((25, 47), (25, 47))  # full already
    assert rlkernels.capacities("CartPole-v1") is None
    for env_id in ("Hopper-v5", "Ant-v5", "Walker2d-v5", "HalfCheetah-v5", "Pusher-v5"):
        c = rlkernels.capacities(env_id)
        for backend in ("serial", "openmp"):
            for capacity in ("measured", "full"):
                envs = rlkernels.make_vec(env_id, 2, seed=0, backend=backend, capacity=capacity)
                assert envs.capacities == c[capacity]
            assert rlkernels.make_vec(env_id, 2, seed=0, backend=backend).capacities == c["auto"][backend]
        # "default", the name of the measured capacities before "auto", still selects them
        assert rlkernels.make_vec(env_id, 2, seed=0, backend="serial", capacity="default").capacities == c["measured"]
    for backend in ("serial", "openmp"):
        assert rlkernels.make_vec("CartPole-v1", 2, seed=0, backend=backend).capacities is None
        assert rlkernels.make_vec("CartPole-v1", 2, seed=0, backend=backend, capacity="measured").capacities is None


def test_auto_capacity_is_full_on_the_host_and_measured_is_chosen_explicitly():
    assert rlkernels.make_vec("Humanoid-v5", 2, backend="serial").capacities == (190, 311)
    assert rlkernels.make_vec("Humanoid-v5", 2, backend="openmp", capacity="auto").capacities == (190, 311)
    assert rlkernels.make_vec("Humanoid-v5", 2, backend="serial", capacity="measured").capacities == (16, 36)
    assert rlkernels.make("Humanoid-v5", seed=0).unwrapped_vec.capacities == (190, 311)


def test_the_measured_capacities_refuse_settings_that_need_more_room():
    for env_id in ("Hopper-v5", "Walker2d-v5", "Humanoid-v5"):
        for capacity in ("measured", "default"):
            with pytest.raises(ValueError, match=rf"make_vec\('{env_id}', capacity='{capacity}'\): .*"
                                                 r"terminate_when_unhealthy = false"):
                rlkernels.make_vec(env_id, 2, backend="serial", capacity=capacity, terminate_when_unhealthy=False)
    with pytest.raises(ValueError, match="terminate_when_unhealthy = false"):
        rlkernels.make("Hopper-v5", capacity="measured", terminate_when_unhealthy=False)
    # "auto" on the host is full: room for a robot lying on the floor
    for env_id in ("Hopper-v5", "Walker2d-v5", "Humanoid-v5"):
        envs = rlkernels.make_vec(env_id, 2, backend="serial", capacity="auto", terminate_when_unhealthy=False)
        assert envs.capacities == rlkernels.capacities(env_id)["full"]
        assert envs.params["terminate_when_unhealthy"] is False
        envs.reset(seed=0)
        envs.step(np.zeros(envs.action_space.shape))
    # the default termination fits the measured capacities
    assert rlkernels.make_vec("Hopper-v5", 2, backend="serial", capacity="measured").capacities == (6, 20)


@pytest.mark.parametrize("env_id", ["Hopper-v5", "Walker2d-v5", "HalfCheetah-v5"])
def test_full_capacity_steps_the_same_bits_where_the_measured_holds(env_id):
    envs = {c: rlkernels.make_vec(env_id, 8, seed=3, backend="openmp", dtype="float64", capacity=c)
            for c in ("measured", "full")}
    assert envs["full"]._env.state_bytes == envs["measured"]._env.state_bytes  # the workspace is not in the State
    assert envs["full"]._env.params == envs["measured"]._env.params
    obs = {c: e.reset(seed=3)[0].copy() for c, e in envs.items()}
    np.testing.assert_array_equal(obs["measured"], obs["full"])
    rng = np.random.default_rng(0)
    for _ in range(400):
        a = rng.uniform(-1, 1, size=(8,) + envs["measured"].single_action_space.shape)
        out = {c: [x.copy() if isinstance(x, np.ndarray) else x for x in e.step(a)[:4]] for c, e in envs.items()}
        for k in range(4):
            np.testing.assert_array_equal(out["measured"][k], out["full"][k])
    assert envs["measured"].capacity_overflows() == 0 and envs["full"].capacity_overflows() == 0


def _lay_down(envs):
    """Humanoid-v5 (float64) lying on its side on the floor: 14 contacts, 58 rows (MuJoCo's mj_forward
    of this pose), more than the measured 36 rows."""
    s = envs.get_states()
    q = s.view(np.float64)
    q[:, 2] = 0.11                                   # torso height
    q[:, 3:7] = [np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0]  # rolled 90 degrees about x
    q[:, 7:24] = 0                                   # joints at 0, the limbs stretched
    q[:, 24:47] = 0                                  # at rest
    envs.set_states(s)


def test_a_humanoid_lying_down_overflows_the_measured_capacity_and_not_the_full_one():
    # With the default termination (the measured capacities refuse terminate_when_unhealthy=False):
    # the step overflows in the physics, before the task could check the pose, so it is a truncation.
    measured = rlkernels.make_vec("Humanoid-v5", 2, seed=0, backend="serial", dtype="float64", capacity="measured")
    full = rlkernels.make_vec("Humanoid-v5", 2, seed=0, backend="serial", dtype="float64",
                              terminate_when_unhealthy=False, capacity="full")
    assert measured.capacities == (16, 36) and full.capacities == (190, 311)
    for e in (measured, full):
        e.reset(seed=0)
        _lay_down(e)
    with pytest.warns(RuntimeWarning, match=r"Humanoid-v5: 2 env step\(s\) needed more contacts .*capacity='full'"):
        _, _, term, trunc, infos = measured.step(np.zeros((2, 17)))
    assert measured.capacity_overflows() == 2 and list(trunc) == [True, True] and not term.any()
    assert measured.unstable_steps() == 0 and list(infos["failed_step"]) == [True, True]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(20):
            _, _, term, trunc, infos = full.step(np.zeros((2, 17)))
            assert not trunc.any() and not term.any() and "failed_step" not in infos
    assert full.capacity_overflows() == 0 and full.unstable_steps() == 0


def test_capacity_is_checked():
    with pytest.raises(ValueError, match="capacity must be 'auto', 'measured' or 'full' .*, got 'huge'"):
        rlkernels.make_vec("Hopper-v5", 2, capacity="huge")
    with pytest.raises(ValueError, match="capacity must be 'auto', 'measured' or 'full'"):
        rlkernels.make_vec("CartPole-v1", 2, backend="serial", capacity="")
    with pytest.raises(TypeError, match="capacity must be 'auto', 'measured' or 'full'"):
        rlkernels.make_vec("Hopper-v5", 2, capacity=64)
    with pytest.raises(ValueError, match="capacity='full' is for the MuJoCo envs; CartPole-v1 has no physics"):
        rlkernels.make_vec("CartPole-v1", 2, capacity="full")
    one = rlkernels.make("Ant-v5", seed=0, capacity="full")  # the single-env wrapper passes it on
    assert one.unwrapped_vec.capacities == rlkernels.capacities("Ant-v5")["full"]
