"""Gymnasium spaces of the registered environments.

The C++ registry knows the sizes and the action bounds; the observation bounds and shapes are the
reference's (Gymnasium's definitions for its envs, MinAtar's and Jumanji's layouts for theirs), computed
from the env's parameters as the reference computes them. Observation spaces take the env's dtype
(float32 or float64); action spaces are the reference's (Discrete, or a float32 Box).
"""

from __future__ import annotations

import math

import numpy as np
from gymnasium import spaces

def observation_space(info: dict, params: dict, dtype: str) -> spaces.Space:
    """The single-env observation space of a registered env (see the module comment)."""
    name = info["type_name"]
    size = info["observation_size"]
    dt = np.dtype(dtype)
    if name == "cartpole":
        # Gymnasium: high = [2 x_threshold, inf, 2 theta_threshold, inf], float32
        high = np.array([params["x_threshold"] * 2, np.inf, params["theta_threshold_radians"] * 2, np.inf],
                        dtype=np.float32)
        return spaces.Box(-high.astype(dt), high.astype(dt), dtype=dt)
    if name in ("mountain_car", "mountain_car_continuous"):
        low = np.array([params["min_position"], -params["max_speed"]], dtype=np.float32)
        high = np.array([params["max_position"], params["max_speed"]], dtype=np.float32)
        return spaces.Box(low.astype(dt), high.astype(dt), dtype=dt)
    if name == "pendulum":
        high = np.array([1.0, 1.0, params["max_speed"]], dtype=np.float32)
        return spaces.Box(-high.astype(dt), high.astype(dt), dtype=dt)
    if name == "acrobot":
        high = np.array([1.0, 1.0, 1.0, 1.0, 4 * math.pi, 9 * math.pi], dtype=np.float32)
        return spaces.Box(-high.astype(dt), high.astype(dt), dtype=dt)
    if name in ("ant", "half_cheetah", "hopper", "humanoid", "humanoid_standup", "walker2d", "inverted_pendulum", "swimmer",
                "inverted_double_pendulum", "reacher", "pusher", "quadrotor"):
        # the quadrotor's action history holds the actions as given (unbounded), as l2f's does
        return spaces.Box(-np.inf, np.inf, shape=(size,), dtype=dt)
    if name.startswith("minatar_"):
        channels = size // 100
        shape = (channels, 10, 10) if params.get("channels_first", False) else (10, 10, channels)
        return spaces.Box(0.0, 1.0, shape=shape, dtype=dt)
    if name == "snake":
        return spaces.Box(0.0, 1.0, shape=(12, 12, size // 144), dtype=dt)
    if name == "maze":  # a flat box of [0, 1] features
        return spaces.Box(0.0, 1.0, shape=(size,), dtype=dt)
    # an env of your own (RLK_USER_ENVS_HEADER: its type name is its id) and any other: unbounded
    return spaces.Box(-np.inf, np.inf, shape=(size,), dtype=dt)


def action_space(info: dict) -> spaces.Space:
    """The single-env action space: Discrete(n), or Box(low, high, (k,), float32) as Gymnasium has them."""
    if info["discrete"]:
        return spaces.Discrete(info["num_actions"])
    return spaces.Box(low=np.float32(info["action_low"]), high=np.float32(info["action_high"]),
                      shape=(info["action_size"],), dtype=np.float32)
