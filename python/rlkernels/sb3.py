"""rlkernels environments as a Stable-Baselines3 ``VecEnv``.

    import rlkernels.sb3
    from stable_baselines3 import PPO
    model = PPO("MlpPolicy", rlkernels.sb3.make_vec_env("CartPole-v1", n_envs=8, seed=0))
    model.learn(100_000)

SB3's conventions: ``step_wait`` returns ``(obs, rewards, dones, infos)`` with ``dones = terminated or
truncated``; for an env whose episode ended, ``obs`` is already the first observation of the next
episode and ``infos[i]["terminal_observation"]`` holds the last one, ``infos[i]["TimeLimit.truncated"]``
is True when the episode was cut (and not terminated): by the time limit, or by a step the physics
engine could not take (then ``infos[i]["failed_step"]`` is True too; SB3 bootstraps from the kept
state), and ``infos[i]["episode"]`` carries ``{"r", "l", "t"}`` as SB3's Monitor wrapper writes them
(so ``ep_rew_mean`` is logged).
Observations are copies (SB3 keeps the previous step's array), unlike ``rlkernels.make_vec``'s views.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Sequence

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from . import RlkVectorEnv, make_vec as _make_vec


class RlkVecEnv(VecEnv):
    """An SB3 ``VecEnv`` over an :class:`rlkernels.RlkVectorEnv` (one C++ call per step)."""

    def __init__(self, env: RlkVectorEnv):
        self.envs_rlk = env
        self._n = env.num_envs
        self._actions: np.ndarray | None = None
        self._returns = np.zeros(self._n, dtype=np.float64)
        self._lengths = np.zeros(self._n, dtype=np.int64)
        self._t0 = time.time()
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)

    # ---- VecEnv API ----
    def reset(self):
        seed = self._seeds[0] if getattr(self, "_seeds", None) and self._seeds[0] is not None else None
        obs, _ = self.envs_rlk.reset(seed=seed)
        if hasattr(self, "_reset_seeds"):
            self._reset_seeds()
        if hasattr(self, "_reset_options"):
            self._reset_options()
        self._returns[:] = 0
        self._lengths[:] = 0
        return obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        if self._actions is None:
            raise RuntimeError("rlkernels.sb3: step_wait() without step_async()")
        obs, rewards, term, trunc, info = self.envs_rlk.step(self._actions)
        self._actions = None
        self._returns += rewards
        self._lengths += 1
        dones = np.logical_or(term, trunc)
        infos: list[dict[str, Any]] = [{} for _ in range(self._n)]
        if dones.any():
            final = self.envs_rlk.final_observations
            elapsed = round(time.time() - self._t0, 6)
            failed = info.get("failed_step")
            for i in np.flatnonzero(dones).tolist():
                infos[i]["terminal_observation"] = final[i].copy()
                infos[i]["TimeLimit.truncated"] = bool(trunc[i] and not term[i])
                if failed is not None and failed[i]:
                    infos[i]["failed_step"] = True
                infos[i]["episode"] = {"r": float(self._returns[i]), "l": int(self._lengths[i]), "t": elapsed}
            self._returns[dones] = 0
            self._lengths[dones] = 0
        return obs.copy(), rewards.astype(np.float32, copy=True), dones, infos

    def close(self) -> None:
        self.envs_rlk.close()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        idx = self._indices(indices)
        if attr_name == "render_mode":
            return [None for _ in idx]
        if attr_name in ("observation_space", "action_space"):
            space = self.observation_space if attr_name == "observation_space" else self.action_space
            return [space for _ in idx]
        if hasattr(self.envs_rlk, attr_name):
            value = getattr(self.envs_rlk, attr_name)
            return [value for _ in idx]
        raise AttributeError(f"rlkernels.sb3: the envs have no attribute '{attr_name}'")

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise AttributeError(f"rlkernels.sb3: attributes of the C++ envs cannot be set ('{attr_name}'); "
                             "make the env with the keyword argument instead")

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        raise AttributeError(f"rlkernels.sb3: the C++ envs have no per-env methods ('{method_name}')")

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self._n)]

    # ---- helpers ----
    def _indices(self, indices) -> Iterable[int]:
        if indices is None:
            return range(self._n)
        if isinstance(indices, int):
            return [indices]
        return indices


def make_vec_env(env_id: str, n_envs: int = 1, seed: int | None = None, backend: str = "openmp",
                 dtype: str = "float32", **env_kwargs: Any) -> RlkVecEnv:
    """``n_envs`` rlkernels envs ``env_id`` as an SB3 ``VecEnv`` (the counterpart of SB3's
    ``make_vec_env``; keyword arguments are the env's parameters, see ``rlkernels.default_params``, and
    ``capacity`` as ``rlkernels.make_vec`` takes it: ``"auto"`` by default, full on the host backends)."""
    return RlkVecEnv(_make_vec(env_id, n_envs, seed, backend, dtype, **env_kwargs))
