#!/usr/bin/env python3
"""Records MinAtar (pip `minatar`, the reference) trajectories with every random draw the game made,
so that tests/envs/minatar_test.cpp can replay the same draws into rlkernels' MinAtar envs and
compare every observation, reward and terminal flag.

usage: minatar_record.py [GAME ...]     (default: all five; writes minatar_<game>.txt next to this file)

The environment's numpy RandomState is wrapped: every call of rand() and randint() is logged, one
entry per drawn number, in call order (rand(k) and randint(..., size=k) give k entries). A random
agent (its own RandomState, not logged) picks from the full 6-action set; the sticky-action
probability is 0.1 (MinAtar's default), so the sticky draws are recorded as well.

File format (text, one record per line):
  # comment lines
  game <name> channels <C>
  seed <s>                      a new run: Environment(seed s), then reset
  R <draws> | <flips>           a reset and what it drew; then the observation
  S <a> <r> <t> <draws> | <flips>
                                a step with full-set action a: reward r, terminal t (0/1)
  <draws>  = count, then per draw "u <hex double>" (rand) or "i <n> <k>" (randint over [low, low+n): low + k)
  <flips>  = count, then the flat indices (y * 10 + x) * C + c of observation bits that changed since
             the previous observation of this seed (all set bits for the first one)
"""
import os
import sys

import numpy as np
from minatar import Environment

GAMES = ["breakout", "asterix", "freeway", "seaquest", "space_invaders"]
SEEDS = [0, 1, 2]
STEPS_PER_SEED = 1500
# Per-game (seeds, steps per seed) where the defaults do not fit: Freeway ends only after 2500
# frames, so its runs are longer (and fewer, to keep the file small) to reach terminal and a reset.
RUNS = {"freeway": ([0, 1], 2600)}


class LoggingRandomState:
    """Forwards to a RandomState and logs every number drawn by rand() and randint()."""

    def __init__(self, seed):
        self.rs = np.random.RandomState(seed)
        self.log = []

    def rand(self, *size):
        out = self.rs.rand(*size)
        for v in np.atleast_1d(out).ravel():
            self.log.append("u " + float(v).hex())
        return out

    def randint(self, low, high=None, size=None, dtype=int):
        out = self.rs.randint(low, high, size, dtype)
        lo, hi = (0, low) if high is None else (low, high)
        for v in np.atleast_1d(out).ravel():
            self.log.append(f"i {hi - lo} {int(v) - lo}")
        return out

    def __getattr__(self, name):  # anything else would draw unlogged: fail loudly
        raise AttributeError(f"minatar_record.py: the game called RandomState.{name}, which is not logged")

    def take(self):
        out, self.log = self.log, []
        return f"{len(out)}" + ("" if not out else " " + " ".join(out))


def flips(prev, cur):
    idx = np.flatnonzero(prev.ravel() != cur.ravel())
    return f"{len(idx)}" + ("" if len(idx) == 0 else " " + " ".join(str(i) for i in idx))


def record(game, out_dir):
    lines = [f"# minatar {game}: recorded by tests/reference/minatar_record.py (minatar 1.0.15 from pip)"]
    env = Environment(game)  # constructs (and resets once) with an unseeded state: not recorded
    lines.append(f"game {game} channels {env.n_channels}")
    seeds, steps = RUNS.get(game, (SEEDS, STEPS_PER_SEED))
    for seed in seeds:
        lines.append(f"seed {seed}")
        log = LoggingRandomState(seed)
        env.random = log
        env.env.random = log
        env.last_action = 0
        agent = np.random.RandomState(1000 + seed)
        env.reset()
        prev = np.zeros(env.state_shape(), dtype=bool)
        obs = env.state()
        lines.append(f"R {log.take()} | {flips(prev, obs)}")
        prev = obs
        for _ in range(steps):
            a = int(agent.randint(6))
            r, terminal = env.act(a)
            obs = env.state()
            lines.append(f"S {a} {int(r)} {int(bool(terminal))} {log.take()} | {flips(prev, obs)}")
            prev = obs
            if terminal:
                env.reset()
                obs = env.state()
                lines.append(f"R {log.take()} | {flips(prev, obs)}")
                prev = obs
    path = os.path.join(out_dir, f"minatar_{game}.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{path}: {len(lines)} lines")


def main(argv):
    games = argv[1:] or GAMES
    out_dir = os.path.dirname(os.path.abspath(__file__))
    for g in games:
        if g not in GAMES:
            sys.exit(f"unknown game {g}; one of {GAMES}")
        record(g, out_dir)


if __name__ == "__main__":
    main(sys.argv)
