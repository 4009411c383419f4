"""Return estimators over [T, N] time-major arrays, with rlkernels' bootstrap convention.

The value step t of env i bootstraps from is
  - 0 where ``terminated[t, i]`` (also when truncated is set too: termination wins);
  - ``bootstrap_values[t, i]`` = V(final observation of step t) where only ``truncated[t, i]``;
  - ``values[t + 1, i]`` otherwise, and ``last_values[i]`` for t = T - 1.

Inputs are NumPy arrays or any CPU DLPack producer (PyTorch, JAX, CuPy on the host...): float32 or
float64 (all of one dtype), read without a copy when C-contiguous and of that dtype already; flags
may be bool or any integer type. Outputs are new NumPy arrays (``torch.from_dlpack`` takes them
without a copy). The computation runs in C++ over OpenMP threads.
"""

from __future__ import annotations

import numpy as np

from . import _rlkernels


def _array(x, name: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (RuntimeError, BufferError, TypeError) as e:
            raise TypeError(f"rlkernels: {name} must be a CPU array ({e})") from e
    return np.asarray(x)


def _rollout(who, rewards, values, terminated, truncated, last_values, bootstrap_values):
    rewards = _array(rewards, "rewards")
    if rewards.dtype not in (np.float32, np.float64):
        raise TypeError(f"rlkernels.{who}: rewards must be float32 or float64, got {rewards.dtype}")
    dt = rewards.dtype
    if rewards.ndim != 2:
        raise ValueError(f"rlkernels.{who}: rewards must be [T, N], got shape {rewards.shape}")

    def scalars(x, name, ndim):
        a = _array(x, name)
        if a.dtype.kind != "f":
            raise TypeError(f"rlkernels.{who}: {name} must be floating point, got {a.dtype}")
        if a.ndim != ndim:
            raise ValueError(f"rlkernels.{who}: {name} must have {ndim} dimensions, got shape {a.shape}")
        return np.ascontiguousarray(a, dtype=dt)

    def flags(x, name):
        a = _array(x, name)
        if a.dtype.kind not in "biu":
            raise TypeError(f"rlkernels.{who}: {name} must be bool or integer flags, got {a.dtype}")
        if a.ndim != 2:
            raise ValueError(f"rlkernels.{who}: {name} must be [T, N], got shape {a.shape}")
        if a.dtype == np.bool_:
            a = np.ascontiguousarray(a).view(np.uint8)
        elif a.dtype != np.uint8:
            a = (a != 0).view(np.uint8)
        return np.ascontiguousarray(a)

    values = scalars(values, "values", 2)
    last_values = scalars(last_values, "last_values", 1)
    terminated = flags(terminated, "terminated")
    truncated = flags(truncated, "truncated")
    if bootstrap_values is None:
        if truncated.shape == rewards.shape and truncated.any():
            raise ValueError(f"rlkernels.{who}: the rollout has truncated steps, so bootstrap_values "
                             "(V of the final observations) is needed")
        bootstrap_values = np.zeros_like(rewards)
    bootstrap_values = scalars(bootstrap_values, "bootstrap_values", 2)
    return (np.ascontiguousarray(rewards), values, bootstrap_values, last_values, terminated, truncated)


def gae(rewards, values, terminated, truncated, last_values, bootstrap_values=None, *, gamma=0.99, lam=0.95):
    """Generalized advantage estimation; returns ``(advantages, returns)``, both [T, N]."""
    r = _rollout("gae", rewards, values, terminated, truncated, last_values, bootstrap_values)
    return _rlkernels.gae(*r, float(gamma), float(lam))


def lambda_returns(rewards, values, terminated, truncated, last_values, bootstrap_values=None, *, gamma=0.99,
                   lam=0.95):
    """TD(lambda) returns, [T, N]."""
    r = _rollout("lambda_returns", rewards, values, terminated, truncated, last_values, bootstrap_values)
    return _rlkernels.lambda_returns(*r, float(gamma), float(lam))


def n_step_returns(rewards, values, terminated, truncated, last_values, bootstrap_values=None, *, gamma=0.99, n=5):
    """n-step returns and the discount of their bootstrap; returns ``(returns, discounts)``, both [T, N]."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"rlkernels.n_step_returns: n must be an int, got {type(n).__name__}")
    r = _rollout("n_step_returns", rewards, values, terminated, truncated, last_values, bootstrap_values)
    return _rlkernels.n_step_returns(*r, float(gamma), int(n))


def vtrace(rewards, values, terminated, truncated, last_values, log_rhos, bootstrap_values=None, *, gamma=0.99,
           lam=1.0, rho_bar=1.0, c_bar=1.0, pg_rho_bar=1.0):
    """V-trace targets and policy-gradient advantages (IMPALA); returns ``(vs, pg_advantages)``, both [T, N].
    ``log_rhos`` is log(pi/mu) of the actions taken, [T, N]."""
    r = _rollout("vtrace", rewards, values, terminated, truncated, last_values, bootstrap_values)
    lr = _array(log_rhos, "log_rhos")
    if lr.dtype.kind != "f" or lr.ndim != 2:
        raise ValueError(f"rlkernels.vtrace: log_rhos must be a floating-point [T, N] array, got {lr.dtype} {lr.shape}")
    lr = np.ascontiguousarray(lr, dtype=r[0].dtype)
    return _rlkernels.vtrace(*r, lr, float(gamma), float(lam), float(rho_bar), float(c_bar), float(pg_rho_bar))
