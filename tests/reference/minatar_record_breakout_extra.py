#!/usr/bin/env python3
"""Records MinAtar Breakout (minatar 1.0.15) with a scripted agent that clears the whole wall, in the
format of minatar_record.py, into minatar_breakout_extra.txt next to this file.

A random agent misses the ball after a few bricks, so its recording never clears the wall and never
reaches the refill (breakout.py act(): when the ball reaches the bottom row with no brick left,
the three rows are added again). This agent keeps the ball in play: it looks ahead by simulating
copies of the game on a copy of the random state (the log sees only the real game's draws), so it
rarely misses, and it still plays sticky actions (p = 0.1) like any agent. Each run clears the wall
at least REFILLS_PER_SEED times (the script checks that the refill happened and fails otherwise),
then the agent stops moving the paddle so that the episode ends and a reset is recorded too.

Regenerate (from the repository root, deterministic: fixed seeds, no other randomness):

    pip install minatar==1.0.15 numpy
    python3 tests/reference/minatar_record_breakout_extra.py
"""
import copy
import os
import sys

import numpy as np
from minatar import Environment

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from minatar_record import LoggingRandomState, flips  # noqa: E402

SEEDS = [0, 1]
REFILLS_PER_SEED = 2  # walls to clear in each run before the agent lets the ball drop
MAX_STEPS_PER_SEED = 3000
HORIZON = 24
STICKY = 0.1  # minatar's default, as in minatar_record.py
ACTIONS = [0, 1, 3]  # no-op, left, right (the minimal set; the others act as no-op)


def heuristic(e):
    """Move the paddle towards the column where the ball is heading."""
    target = e.ball_x + (1 if e.ball_dir in (1, 2) else -1)
    target = min(9, max(0, target))
    if target < e.pos:
        return 1
    if target > e.pos:
        return 3
    return 0


def simulate(env, first, steps):
    """Plays `first` then the heuristic for `steps` steps on a copy of env (game and random state);
    returns a score: missing the ball is worst, then bricks broken (sooner is better)."""
    inner = env.env
    saved = inner.random
    inner.random = None
    sim = copy.deepcopy(inner)
    inner.random = saved
    rs = copy.deepcopy(saved.rs)
    last = env.last_action
    score = 0.0
    a = first
    for t in range(steps):
        if rs.rand() < STICKY:
            a = last
        last = a
        r, terminal = sim.act(a)
        score += r * (1.0 - t / (2.0 * steps))
        if terminal:
            return -1000.0 + t + score
        a = heuristic(sim)
    return score


def choose(env):
    h = heuristic(env.env)
    order = [h] + [a for a in ACTIONS if a != h]
    scores = [simulate(env, a, HORIZON) for a in order]
    best = max(range(len(order)), key=lambda i: (scores[i], -i))
    return order[best]


def main():
    out_dir = os.path.dirname(os.path.abspath(__file__))
    lines = ["# minatar breakout: recorded by tests/reference/minatar_record_breakout_extra.py (minatar 1.0.15 "
             "from pip), a look-ahead scripted agent that clears the wall"]
    env = Environment("breakout")
    lines.append(f"game breakout channels {env.n_channels}")
    refills_total = 0
    for seed in SEEDS:
        lines.append(f"seed {seed}")
        log = LoggingRandomState(seed)
        env.random = log
        env.env.random = log
        env.last_action = 0
        env.reset()
        prev = np.zeros(env.state_shape(), dtype=bool)
        obs = env.state()
        lines.append(f"R {log.take()} | {flips(prev, obs)}")
        prev = obs
        refills = 0
        for step in range(MAX_STEPS_PER_SEED):
            a = choose(env) if refills < REFILLS_PER_SEED else 0
            bricks_before = int(np.count_nonzero(env.env.brick_map))
            r, terminal = env.act(a)
            if bricks_before == 0 and np.count_nonzero(env.env.brick_map) == 30:
                refills += 1
            obs = env.state()
            lines.append(f"S {a} {int(r)} {int(bool(terminal))} {log.take()} | {flips(prev, obs)}")
            prev = obs
            if terminal:
                env.reset()
                obs = env.state()
                lines.append(f"R {log.take()} | {flips(prev, obs)}")
                prev = obs
                if refills >= REFILLS_PER_SEED:
                    break
        print(f"seed {seed}: {step + 1} steps, {refills} refills")
        if refills < REFILLS_PER_SEED:
            sys.exit(f"seed {seed}: the wall was refilled only {refills} times; the recording must reach the refill")
        refills_total += refills
    path = os.path.join(out_dir, "minatar_breakout_extra.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{path}: {len(lines)} lines, {refills_total} refills")


if __name__ == "__main__":
    main()
