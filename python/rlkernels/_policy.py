"""Policy files (rlkernels/algorithms/policy_file.hpp) read and evaluated with NumPy.

``train_ppo --export-policy FILE`` and ``train_td3 --export-policy FILE`` (or ``save_policy`` in C++)
write a trained deterministic policy as text, every number a C99 hex float. ``load_policy`` reads
such a file, versions 1 and 2, and the returned :class:`Policy` maps a batch of observations to
actions in float64 exactly as ``policy_file::act`` does in C++:

    policy = rlkernels.load_policy("crazyflie.txt")
    envs = rlkernels.make_vec(policy.env, num_envs=100, seed=0, dtype="float64")
    obs, _ = envs.reset(seed=0)
    obs, rewards, terminations, truncations, infos = envs.step(policy(obs))
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["Policy", "load_policy"]

_ACTIVATIONS = ("identity", "tanh", "relu", "elu")


def _activate(name: str, x: np.ndarray) -> np.ndarray:
    if name == "tanh":
        return np.tanh(x)
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "elu":
        return np.where(x > 0.0, x, np.expm1(np.minimum(x, 0.0)))
    return x


class Policy:
    """A deterministic policy read from a policy file (see ``load_policy``).

    Attributes: ``env`` (the id it was trained on), ``observation_size``, ``continuous``,
    ``action_size`` (the action width, or the number of discrete actions), ``action_low`` and
    ``action_high`` (continuous), ``rescale`` (continuous: the network's output in [-1, 1] is mapped
    onto [low, high]; else it is clipped to it), ``normalize``, ``mean``, ``var``, ``clip``,
    ``epsilon`` (the observation normaliser's frozen statistics), ``hidden_activation``,
    ``output_activation``, and ``layers``: a list of ``(W, b)`` with ``W`` of shape [out, in].
    """

    def __init__(self) -> None:
        self.env = ""
        self.observation_size = 0
        self.continuous = True
        self.action_size = 0
        self.action_low = 0.0
        self.action_high = 0.0
        self.rescale = False
        self.normalize = False
        self.mean = np.zeros(0)
        self.var = np.zeros(0)
        self.clip = 10.0
        self.epsilon = 1e-8
        self.hidden_activation = "identity"
        self.output_activation = "identity"
        self.layers: list[tuple[np.ndarray, np.ndarray]] = []

    def __repr__(self) -> str:
        widths = [self.observation_size] + [w.shape[0] for w, _ in self.layers]
        kind = (f"continuous {self.action_size} in [{self.action_low:g}, {self.action_high:g}] "
                f"({'rescale' if self.rescale else 'clip'})") if self.continuous else f"discrete {self.action_size}"
        return (f"Policy(env={self.env!r}, mlp={'x'.join(map(str, widths))} {self.hidden_activation}/"
                f"{self.output_activation}, action {kind}, normalize={self.normalize})")

    def __call__(self, observations) -> np.ndarray:
        """The actions for observations of shape [O] or [B, O], in float64: shape [D] or [B, D]
        (continuous), or an int64 index (discrete: the lowest among ties) or [B] of them."""
        x = np.asarray(observations, dtype=np.float64)
        single = x.ndim == 1
        if single:
            x = x[None, :]
        if x.ndim != 2 or x.shape[1] != self.observation_size:
            raise ValueError(f"Policy: observations must have shape [{self.observation_size}] or "
                             f"[B, {self.observation_size}], got {np.shape(observations)}")
        if self.normalize:
            x = np.clip((x - self.mean) / np.sqrt(self.var + self.epsilon), -self.clip, self.clip)
        last = len(self.layers) - 1
        for i, (w, b) in enumerate(self.layers):
            x = _activate(self.output_activation if i == last else self.hidden_activation, x @ w.T + b)
        if self.continuous:
            if self.rescale:
                y = self.action_low + (np.clip(x, -1.0, 1.0) + 1.0) * 0.5 * (self.action_high - self.action_low)
            else:
                y = np.clip(x, self.action_low, self.action_high)
        else:
            y = np.argmax(x, axis=1).astype(np.int64)
        return y[0] if single else y


def load_policy(path: str | os.PathLike) -> Policy:
    """Reads a policy file (format versions 1 and 2; docs/training.md, "Exporting a policy").

    Raises ``ValueError`` naming the file and the line when the file is not a whole policy, and
    ``OSError`` when it cannot be read."""
    path = os.fspath(path)
    with open(path, encoding="ascii") as f:
        lines = f.read().split("\n")
    p = Policy()
    pos = 0

    def fail(what: str) -> ValueError:
        return ValueError(f"rlkernels.load_policy: {path}, line {pos}: {what}")

    def nxt(expected: str) -> list[str]:
        nonlocal pos
        if pos >= len(lines) or (pos == len(lines) - 1 and lines[pos] == ""):
            pos += 1
            raise fail(f"the file ends before {expected}")
        pos += 1
        return lines[pos - 1].split()

    def number(s: str) -> float:
        try:
            v = float.fromhex(s) if "0x" in s.lower() else float(s)
        except ValueError:
            raise fail(f"'{s}' is not a finite number") from None
        if not np.isfinite(v):
            raise fail(f"'{s}' is not a finite number")
        return v

    def count(s: str, lo: int) -> int:
        v = number(s)
        if v != int(v) or v < lo or v > 1e7:
            raise fail(f"'{s}' is not a count >= {lo}")
        return int(v)

    def keyed(key: str, n: int) -> list[str]:
        t = nxt(key)
        if len(t) != n + 1 or t[0] != key:
            raise fail(f"expected '{key}' and {n} values, got '{' '.join(t)}'")
        return t

    def numbers(n: int, what: str) -> np.ndarray:
        t = nxt(what)
        if len(t) != n:
            raise fail(f"expected {n} {what}, got {len(t)}")
        return np.array([number(s) for s in t], dtype=np.float64)

    def activation(s: str) -> str:
        if s not in _ACTIVATIONS:
            raise fail(f"unknown activation '{s}'")
        return s

    t = nxt("the header")
    if len(t) != 2 or t[0] != "rlkernels-policy":
        raise fail("not a policy file (no 'rlkernels-policy' header)")
    if t[1] not in ("1", "2"):
        raise fail(f"format version {t[1]} (this reader reads versions 1 and 2)")
    v2 = t[1] == "2"
    p.env = keyed("env", 1)[1]
    p.observation_size = count(keyed("observation", 1)[1], 1)
    t = nxt("action")
    if len(t) == (6 if v2 else 5) and t[:2] == ["action", "continuous"]:
        p.continuous = True
        p.action_size = count(t[2], 1)
        p.action_low, p.action_high = number(t[3]), number(t[4])
        if not p.action_low <= p.action_high:
            raise fail("action bounds low > high")
        if v2:
            if t[5] not in ("clip", "rescale"):
                raise fail(f"the action map is 'clip' or 'rescale', not '{t[5]}'")
            p.rescale = t[5] == "rescale"
    elif len(t) == 3 and t[:2] == ["action", "discrete"]:
        p.continuous = False
        p.action_size = count(t[2], 1)
    else:
        raise fail("expected 'action continuous <width> <low> <high>" + (" <clip|rescale>" if v2 else "") +
                   f"' or 'action discrete <n>', got '{' '.join(t)}'")
    t = keyed("normalize", 3)
    p.normalize = count(t[1], 0) != 0
    p.clip, p.epsilon = number(t[2]), number(t[3])
    if p.normalize:
        p.mean = numbers(p.observation_size, "means")
        p.var = numbers(p.observation_size, "variances")
        if np.any(p.var < 0):
            raise fail("a negative variance")
    t = keyed("mlp", 3)
    n_layers = count(t[1], 1)
    p.hidden_activation, p.output_activation = activation(t[2]), activation(t[3])
    width = p.observation_size
    for layer in range(n_layers):
        t = keyed("layer", 2)
        fan_in, fan_out = count(t[1], 1), count(t[2], 1)
        if fan_in != width:
            raise fail(f"layer {layer} takes {fan_in} inputs, the previous gives {width}")
        w = np.stack([numbers(fan_in, "weights") for _ in range(fan_out)])
        b = numbers(fan_out, "biases")
        p.layers.append((w, b))
        width = fan_out
    if width != p.action_size:
        raise fail(f"the last layer gives {width} outputs, the action needs {p.action_size}")
    return p
