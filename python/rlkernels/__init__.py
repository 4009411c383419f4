"""rlkernels from Python: the library's batched C++ environments as Gymnasium vector environments.

    import rlkernels
    envs = rlkernels.make_vec("CartPole-v1", num_envs=4096, seed=0)
    obs, info = envs.reset()
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())

Each ``step`` is one call into C++ that steps every env (on one thread with ``backend="serial"``,
over OpenMP threads with ``backend="openmp"``) and resets the envs whose episode ended in the same
step (Gymnasium's ``AutoresetMode.SAME_STEP``): the observation returned for such an env is the
first of its new episode, and the true last observation is in ``infos["final_obs"]``.

Lifetime rule: by default (``copy=False``) the returned observations, rewards, terminations and
truncations are NumPy arrays that *view the library's buffers*: no copy is made, the same memory
is returned by every call, and the next ``step`` or ``reset`` overwrites it. Copy what you keep
(``obs.copy()``, or ``torch.tensor(obs)``), or pass ``copy=True`` to get fresh arrays each step
as Gymnasium's own vector envs do by default. ``infos["final_obs"]`` holds copies (unless made with
``final_obs="array"``, which puts the ``[N, ...]`` view of every env's last observation there instead of
Gymnasium's object array).

The MuJoCo envs end an episode as *truncated* (never terminated) when their physics engine could not
take a step (an unstable state, or more contacts than the workspace holds): the env keeps the state
before the step (its observation is the final one) and the failure is the simulator's, not a
terminal state, so bootstrap from it as from a time limit. On the host backends
``infos["failed_step"]`` (with its mask ``infos["_failed_step"]``) marks such envs in the steps where
one happened; the first of each kind warns; ``envs.unstable_steps()`` and ``envs.capacity_overflows()``
count them.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import _rlkernels
from . import _spaces
from ._estimators import gae, lambda_returns, n_step_returns, vtrace
from ._policy import Policy, load_policy

__version__ = "0.1.0"

#: True when this build has the CUDA backend (make_vec(..., backend="cuda")).
has_cuda: bool = bool(_rlkernels.has_cuda)

__all__ = [
    "RlkVectorEnv",
    "DeviceArray",
    "has_cuda",
    "RlkEnv",
    "make_vec",
    "make",
    "registered_envs",
    "env_info",
    "default_params",
    "capacities",
    "gae",
    "lambda_returns",
    "n_step_returns",
    "vtrace",
    "Policy",
    "load_policy",
]

_BACKENDS = ("serial", "openmp")
_DTYPES = ("float32", "float64")


def registered_envs() -> list[str]:
    """Every environment id ``make_vec`` takes, in registration order."""
    return [e["id"] for e in _rlkernels.registered_envs()]


def env_info(env_id: str) -> dict:
    """What the registry knows about ``env_id``: sizes, action bounds, time limit, reward threshold."""
    for e in _rlkernels.registered_envs():
        if e["id"] == env_id:
            return dict(e)
    _rlkernels.default_params(env_id)  # raises KeyError naming the closest id
    raise KeyError(env_id)


def default_params(env_id: str) -> dict:
    """The keyword arguments ``make_vec(env_id, ...)`` accepts, with their defaults."""
    return _rlkernels.default_params(env_id)


def capacities(env_id: str) -> dict | None:
    """The contact and constraint-row capacities per env of a MuJoCo env for each ``capacity`` of
    :func:`make_vec`, and what ``"auto"`` (the default) picks on each backend::

        {"measured": (contacts, rows), "full": (contacts, rows),
         "auto": {"serial": full, "openmp": full, "cuda": measured}}

    e.g. ``(16, 36)`` and ``(190, 311)`` for Humanoid-v5 (the two are the same for the envs whose
    measured capacities are full already). ``capacity="default"`` is ``"measured"``. None for envs
    without a physics engine."""
    return _rlkernels.capacities(env_id)


def _seed_from(seed) -> int:
    if seed is None:
        return int.from_bytes(os.urandom(8), "little")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(
            f"rlkernels: seed must be an int or None, got {type(seed).__name__} (one seed keys every env's "
            "random stream; per-env seed lists are not supported: env i always draws from stream i)")
    if seed < 0 or seed >= 2**64:
        raise ValueError(f"rlkernels: seed must be in [0, 2**64), got {seed}")
    return int(seed)


class DeviceArray:
    """A CUDA array of the library (``backend="cuda"``), viewed without a copy: it speaks DLPack
    (``torch.from_dlpack``, ``jax.dlpack.from_dlpack``, ``cupy.from_dlpack``) and
    ``__cuda_array_interface__`` (CuPy, Numba). Valid while the env lives; the next ``step`` or
    ``reset`` overwrites it. The env's ``step`` and ``reset`` return after the GPU has finished, so
    the data is ready on any stream."""

    __slots__ = ("_dl", "_ptr", "shape", "dtype", "_device")

    def __init__(self, dl, ptr: int, shape: tuple, dtype, device: int):
        self._dl, self._ptr, self.shape, self.dtype, self._device = dl, int(ptr), tuple(shape), np.dtype(dtype), device

    def __dlpack__(self, *args, **kwargs):
        return self._dl.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return (2, self._device)  # kDLCUDA

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self._ptr, False), "version": 3,
                "strides": None, "stream": None}

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device=cuda:{self._device})"


class RlkVectorEnv(VectorEnv):
    """``num_envs`` rlkernels environments stepped together in C++; a Gymnasium ``VectorEnv``.

    Make one with :func:`make_vec`. Autoreset is ``AutoresetMode.SAME_STEP``. Seeding: one integer
    keys every env's random stream (env i draws from stream i), so a batch is bit-reproducible for
    every ``num_threads``. ``reset(seed=s)`` restarts every env from the beginning of its stream under
    ``s``; ``reset()`` without a seed starts new episodes under the next seed of a sequence that the
    last seed determines (so repeated unseeded resets differ, reproducibly).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, env_id: str, num_envs: int, seed=None, backend: str = "openmp", dtype: str = "float32",
                 *, copy: bool = False, num_threads: int = 0, final_obs: str = "objects", capacity: str = "auto",
                 **env_kwargs: Any):
        if final_obs not in ("objects", "array"):
            raise ValueError(f"rlkernels.make_vec: final_obs must be 'objects' (Gymnasium's layout) or 'array', "
                             f"got {final_obs!r}")
        self._final_obs_as_array = final_obs == "array"
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
            raise TypeError(f"rlkernels.make_vec: num_envs must be an int, got {type(num_envs).__name__}")
        if num_envs < 1:
            raise ValueError(f"rlkernels.make_vec('{env_id}'): num_envs must be >= 1, got {num_envs}")
        if backend not in _BACKENDS and backend != "cuda":
            raise ValueError(f"rlkernels.make_vec: backend must be one of {_BACKENDS + ('cuda',)}, got {backend!r}")
        if backend == "cuda" and copy:
            raise ValueError("rlkernels.make_vec: copy=True is for the host backends (on CUDA, copy with your "
                             "framework: torch.from_dlpack(obs).clone())")
        dtype = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
        if dtype not in _DTYPES:
            raise ValueError(f"rlkernels.make_vec: dtype must be 'float32' or 'float64', got {dtype!r}")
        first_seed = _seed_from(seed)
        if not isinstance(capacity, str):
            raise TypeError(f"rlkernels.make_vec: capacity must be 'auto', 'measured' or 'full', got {capacity!r}")
        self._env = _rlkernels.make(env_id, int(num_envs), first_seed, backend, dtype, int(num_threads),
                                    dict(env_kwargs), capacity)
        self._info = self._env.info
        self._params = self._env.params
        self._copy = bool(copy)
        self.num_envs = int(num_envs)
        self.single_observation_space = _spaces.observation_space(self._info, self._params, dtype)
        self.single_action_space = _spaces.action_space(self._info)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.render_mode = None
        self.spec = None
        self.metadata = dict(RlkVectorEnv.metadata)
        self._seed_sequence = np.random.default_rng(first_seed)
        self._np_random_seed = first_seed
        self._discrete = bool(self._info["discrete"])
        self._action_shape = (self.num_envs,) if self._discrete else (self.num_envs, self._info["action_size"])
        self._action_dtype = np.int32 if self._discrete else np.dtype(dtype)
        obs_shape = (self.num_envs, *self.single_observation_space.shape)
        # Views of the C++ buffers, made once: the buffers never move while the env lives.
        self._on_device = self._env.device >= 0
        if self._on_device:
            # CUDA: [N, observation_size] device arrays (reshape in your framework); final_obs is always
            # the [N, ...] array, since an object array of device rows would cost a copy each
            ptr = self._env.pointers()
            size = self._info["observation_size"]
            dev = self._env.device
            self._obs = DeviceArray(self._env.observations(), ptr["observations"], (self.num_envs, size), dtype, dev)
            self._final_obs = DeviceArray(self._env.final_observations(), ptr["final_observations"],
                                          (self.num_envs, size), dtype, dev)
            self._rewards = DeviceArray(self._env.rewards(), ptr["rewards"], (self.num_envs,), dtype, dev)
            self._terminated = DeviceArray(self._env.terminated(), ptr["terminated"], (self.num_envs,), np.bool_, dev)
            self._truncated = DeviceArray(self._env.truncated(), ptr["truncated"], (self.num_envs,), np.bool_, dev)
        else:
            self._obs = self._env.observations().reshape(obs_shape)
            self._final_obs = self._env.final_observations().reshape(obs_shape)
            self._rewards = self._env.rewards()
            self._terminated = self._env.terminated()
            self._truncated = self._env.truncated()
        # the MuJoCo envs count the steps their engine could not compute or hold: such a step ends the
        # episode as truncated; infos["failed_step"] marks it, and the first of each kind warns
        self._engine_counters = bool(self._env.has_engine_counters)
        self._engine_warned: set[str] = set()
        self._failed_counts = np.zeros(self.num_envs, dtype=np.uint64)  # per env, as of the last look
        self.closed = False

    # ---- Gymnasium API ----
    def reset(self, *, seed=None, options: dict | None = None):
        """Resets every env; returns ``(observations, infos)``."""
        if options:
            raise ValueError(f"rlkernels: reset() takes no options (got {sorted(options)}): every env is reset; "
                             "envs whose episode ends reset themselves in the same step")
        if seed is None:
            seed = int(self._seed_sequence.integers(0, 2**63))
        else:
            seed = _seed_from(seed)
            self._seed_sequence = np.random.default_rng(seed)
            self._np_random_seed = seed
        self._env.reset(seed)
        if self._engine_counters:
            self._failed_counts = np.zeros(self.num_envs, dtype=np.uint64)  # reset() clears the counters
        infos: dict[str, Any] = {}
        if self._env.has_action_mask:
            infos["action_mask"] = self._env.action_masks()
            infos["_action_mask"] = np.ones(self.num_envs, dtype=np.bool_)
        return self._out(self._obs), infos

    def step(self, actions):
        """Steps every env; returns ``(observations, rewards, terminations, truncations, infos)``."""
        self._env.step(self._as_actions(actions))
        infos: dict[str, Any] = {}
        term, trunc = self._terminated, self._truncated
        if self._on_device:
            # no host pass over the flags: the [N, obs] device array, masked by terminations | truncations
            infos["final_obs"] = self._final_obs
        elif term.any() or trunc.any():
            done = np.logical_or(term, trunc)
            idx = np.flatnonzero(done)
            if self._final_obs_as_array:
                infos["final_obs"] = self._out(self._final_obs)
            else:
                # Gymnasium's layout: an object array holding one array per ended env (None elsewhere);
                # the fancy index copies the rows, fromiter makes the objects without a Python loop
                final = np.empty(self.num_envs, dtype=object)
                final[idx] = np.fromiter(self._final_obs[idx], dtype=object, count=len(idx))
                infos["final_obs"] = final
            infos["_final_obs"] = done
            infos["final_info"] = {}
            infos["_final_info"] = done.copy()
            if self._engine_counters and trunc.any():
                failed = self._failed_now()
                if failed.any():
                    infos["failed_step"] = failed
                    infos["_failed_step"] = failed.copy()
                    if len(self._engine_warned) < 2:
                        self._warn_engine_counters()
        if self._env.has_action_mask:
            infos["action_mask"] = self._env.action_masks()
            infos["_action_mask"] = np.ones(self.num_envs, dtype=np.bool_)
        return (self._out(self._obs), self._out(self._rewards), self._out(term), self._out(trunc), infos)

    def close_extras(self, **kwargs):
        self._env = _ClosedEnv()

    # ---- beyond Gymnasium ----
    @property
    def env_id(self) -> str:
        return self._info["id"]

    @property
    def backend(self) -> str:
        return self._env.backend

    @property
    def dtype(self) -> str:
        return self._env.dtype

    @property
    def params(self) -> dict:
        """The env's parameters (``make_vec``'s keyword arguments with their values)."""
        return dict(self._params)

    @property
    def seed(self) -> int:
        """The seed the envs' random streams are keyed with now."""
        return self._env.seed

    @property
    def final_observations(self) -> np.ndarray:
        """[N, ...] view: the observation the last step produced before any reset (s' of every env)."""
        return self._final_obs

    def action_masks(self) -> np.ndarray:
        """[N, num_actions] bool: the legal actions of the current observations (envs with masks)."""
        return self._env.action_masks()

    def episode_statistics(self) -> dict:
        """Count, mean/min/max return and mean length of the episodes completed since the last clear."""
        return self._env.episode_statistics()

    def clear_episode_statistics(self) -> None:
        self._env.clear_episode_statistics()

    def unstable_steps(self) -> int:
        """Env steps the physics engine could not compute (a non-finite or exploding state, where MuJoCo
        warns and resets), summed over the batch: each ended its episode as truncated (not terminated),
        its final observation the state before the step. 0 for envs without a physics engine."""
        return int(self._env.unstable_steps())

    def capacity_overflows(self) -> int:
        """Env steps that needed more contacts or constraint rows than the model's workspace holds
        (its capacities, docs/physics.md), summed over the batch: each ended its episode as
        truncated (not terminated), its final observation the state before the step; no contact was
        dropped. Only the measured capacities (``capacity="measured"``, and ``"auto"`` on CUDA), sized
        for Gymnasium's default termination, can overflow; the full ones (``"auto"`` on the host
        backends) have room for every contact. 0 for envs without a physics engine."""
        return int(self._env.capacity_overflows())

    @property
    def capacities(self) -> tuple[int, int] | None:
        """(contacts, constraint rows) each env's physics workspace holds (``capacity`` of
        :func:`make_vec`); None for envs without a physics engine."""
        return self._env.capacities

    def _warn_engine_counters(self) -> None:
        what = {
            "capacity_overflows": "needed more contacts or constraint rows than the model's workspace holds (its "
                                  f"measured capacities {self.capacities} are sized for the default termination; "
                                  "make_vec(..., capacity='full') on a host backend has room for every contact)",
            "unstable_steps": "could not be computed by the physics engine (a non-finite or exploding state)",
        }
        for name, text in what.items():
            if name in self._engine_warned:
                continue
            n = int(getattr(self._env, name)())
            if n:
                self._engine_warned.add(name)
                warnings.warn(f"rlkernels {self._info['id']}: {n} env step(s) {text}; each ended its episode as "
                              f"truncated (the state before the step kept; infos['failed_step'] marks the envs). "
                              f"Count them with envs.{name}().", RuntimeWarning, stacklevel=3)

    def _failed_now(self) -> np.ndarray:
        """[N] bool: the envs whose last step failed (their counters rose since the last look)."""
        counts = self._env.failed_steps()[:, 0]
        failed = counts != self._failed_counts
        self._failed_counts = counts
        return failed

    def get_states(self) -> np.ndarray:
        """[N, state_bytes] uint8: a copy of the C++ State structs (their exact memory layout)."""
        return self._env.get_states()

    def set_states(self, states: np.ndarray) -> None:
        """Overwrites every env's State from ``get_states()``-shaped bytes and recomputes observations."""
        states = np.ascontiguousarray(states)
        if states.dtype != np.uint8:
            raise TypeError(f"rlkernels: set_states takes uint8 bytes (see get_states), got {states.dtype}")
        self._env.set_states(states)
        if self._engine_counters:
            self._failed_counts = self._env.failed_steps()[:, 0]  # the counters the new states carry

    def __repr__(self) -> str:
        return f"RlkVectorEnv({self._info['id']}, num_envs={self.num_envs}, backend={self.backend}, dtype={self.dtype})"

    # ---- helpers ----
    def _out(self, a: np.ndarray) -> np.ndarray:
        return a.copy() if self._copy else a

    def _as_actions(self, actions) -> np.ndarray:
        if (self._on_device and not isinstance(actions, np.ndarray) and hasattr(actions, "__dlpack_device__")
                and actions.__dlpack_device__()[0] == 2):
            return actions  # a CUDA array: C++ takes it through DLPack without a copy and checks it
        if isinstance(actions, np.ndarray):
            a = actions
        elif hasattr(actions, "__dlpack__"):
            try:
                a = np.from_dlpack(actions)
            except (RuntimeError, BufferError, TypeError) as e:
                raise TypeError(f"rlkernels: actions must be on the CPU for backend '{self.backend}' ({e})") from e
        else:
            a = np.asarray(actions)
        if a.shape != self._action_shape:
            raise ValueError(f"rlkernels: {self.env_id} with num_envs={self.num_envs} takes actions of shape "
                             f"{self._action_shape}, got {a.shape}")
        if self._discrete:
            if a.dtype.kind not in "iu":
                raise TypeError(f"rlkernels: {self.env_id} takes integer actions (Discrete({self._info['num_actions']})), "
                                f"got dtype {a.dtype}")
            if a.dtype != np.int32 and a.dtype != np.int64:
                a = a.astype(np.int64)  # C++ checks the range of int32/int64 actions in its own pass
            return np.ascontiguousarray(a)
        elif a.dtype.kind != "f":
            raise TypeError(f"rlkernels: {self.env_id} takes floating-point actions, got dtype {a.dtype}")
        return np.ascontiguousarray(a, dtype=self._action_dtype)


class _ClosedEnv:
    def __getattr__(self, name):
        raise RuntimeError("rlkernels: this vector env is closed")


def make_vec(env_id: str, num_envs: int, seed: int | None = None, backend: str = "openmp", dtype: str = "float32",
             *, copy: bool = False, num_threads: int = 0, final_obs: str = "objects", capacity: str = "auto",
             **env_kwargs: Any) -> RlkVectorEnv:
    """``num_envs`` environments ``env_id`` (see :func:`registered_envs`) as a Gymnasium ``VectorEnv``.

    Args:
        env_id: a registered id, e.g. ``"CartPole-v1"``, ``"Hopper-v5"``, ``"MinAtar/Breakout-v1"``.
        num_envs: N >= 1.
        seed: key of the envs' random streams; None draws one from the OS.
        backend: ``"openmp"`` (threads over envs) or ``"serial"`` (one thread); both give the same bits.
        dtype: ``"float32"`` or ``"float64"``: the scalar type the envs compute, observe and reward in.
        copy: return fresh arrays from ``reset``/``step`` instead of views of the library's buffers.
        num_threads: OpenMP threads (0: OpenMP's default, OMP_NUM_THREADS).
        final_obs: ``"objects"`` (Gymnasium's layout: ``infos["final_obs"]`` is an object array holding one
            array per ended env) or ``"array"`` (``infos["final_obs"]`` is the ``[N, ...]`` array of every
            env's last observation, a view unless ``copy``; index it with ``infos["_final_obs"]``). The
            object array costs about a microsecond per ended env; ``"array"`` costs nothing.
        capacity: the MuJoCo envs' contacts and constraint rows per env (see :func:`capacities`):
            ``"auto"`` (the default: ``"full"`` on ``"serial"`` and ``"openmp"``, ``"measured"`` on
            ``"cuda"``), ``"measured"`` (Hopper, Walker2d, HalfCheetah, Ant and the Humanoids: measured
            peaks with a margin, sized for Gymnasium's default termination; ``"default"``, its name before
            ``"auto"``, is still accepted) or ``"full"`` (every contact the model's pairs can make and
            every row: no step can overflow; more memory; host backends only). A step that needs more
            than the capacity is truncated and counted (:meth:`RlkVectorEnv.capacity_overflows`). With
            the measured capacities, Hopper, Walker2d and Humanoid refuse ``terminate_when_unhealthy=False``
            (``ValueError``: a robot lying on the floor needs more). The other envs have one capacity,
            already full. The bits are the same with either wherever ``"measured"`` did not overflow.
        **env_kwargs: the env's parameters (see :func:`default_params`), e.g. ``ctrl_cost_weight=0.01``.
    """
    return RlkVectorEnv(env_id, num_envs, seed, backend, dtype, copy=copy, num_threads=num_threads,
                        final_obs=final_obs, capacity=capacity, **env_kwargs)


class RlkEnv(gym.Env):
    """One rlkernels environment as a plain ``gymnasium.Env`` (a batch of one; for checkers and
    single-env code). After an episode ends, call ``reset()`` as usual."""

    metadata = {"render_modes": []}

    def __init__(self, env_id: str, seed=None, dtype: str = "float32", **env_kwargs: Any):
        self._vec = RlkVectorEnv(env_id, 1, seed, "serial", dtype, copy=False, **env_kwargs)
        self.observation_space = self._vec.single_observation_space
        self.action_space = self._vec.single_action_space
        self.render_mode = None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        obs, infos = self._vec.reset(seed=seed, options=options)
        info = {"action_mask": infos["action_mask"][0].copy()} if "action_mask" in infos else {}
        return obs[0].copy(), info

    def step(self, action):
        a = np.asarray(action)
        a = a.reshape((1,)) if self._vec._discrete else a.reshape((1, -1))
        obs, rew, term, trunc, infos = self._vec.step(a)
        ended = bool(term[0] or trunc[0])
        out = infos["final_obs"][0] if ended else obs[0].copy()
        info = {"action_mask": infos["action_mask"][0].copy()} if "action_mask" in infos else {}
        if "failed_step" in infos and infos["failed_step"][0]:
            info["failed_step"] = True  # the engine could not take the step: truncated, state kept
        return out, float(rew[0]), bool(term[0]), bool(trunc[0]), info

    @property
    def unwrapped_vec(self) -> RlkVectorEnv:
        return self._vec


def make(env_id: str, seed: int | None = None, dtype: str = "float32", **env_kwargs: Any) -> RlkEnv:
    """One environment ``env_id`` as a ``gymnasium.Env`` (see :class:`RlkEnv`; on the serial backend, so
    ``capacity="auto"``, the default, is full; keyword arguments as :func:`make_vec` takes them)."""
    return RlkEnv(env_id, seed, dtype, **env_kwargs)
