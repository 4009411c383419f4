#!/usr/bin/env python3
"""Records MinAtar Seaquest (minatar 1.0.15) with a far-sighted scripted agent, in the format of
minatar_record.py, into minatar_seaquest_extra.txt next to this file.

A random agent dies within a few dozen steps (mostly by surfacing without divers), so its
recording never rescues divers, surfaces with them, ramps the difficulty or fills the screen with
enemies. This agent does: it picks up divers, surfaces with six (the oxygen reward, and the
diver count of -1 that follows), then keeps surfacing to ramp the difficulty to its end. It looks
ahead by simulating copies of the game on a copy of the random state (the log sees only the real
game's draws), so it rarely dies, and it still plays sticky actions (p = 0.1) like any agent.
Late in each run, and in every episode that follows a death, it stays down until its oxygen runs
out, to record that ending too.

usage: minatar_record_seaquest_extra.py
"""
import copy
import os

import numpy as np
from minatar import Environment

from minatar_record import LoggingRandomState, flips

SEEDS = [0, 1]
STEPS_PER_SEED = 2500
HORIZON = 12
DIVE_AFTER = 1200  # from this step of a run, stay down until the oxygen runs out
STICKY = 0.1  # minatar's default, as in minatar_record.py


def heuristic(e, dive=False):
    """An action for the seaquest.Env `e`: surface when full or short of oxygen, else chase the
    nearest diver, else bob up and down (each surfacing ramps the difficulty once divers <= -1).
    With `dive`, go to the bottom and stay there."""
    if dive:
        return 4 if e.sub_y < 8 else 0
    if e.sub_y == 0:
        return 4  # down
    want_up = e.diver_count >= 6 or (e.diver_count != 0 and e.oxygen < 10 * e.sub_y + 20) or e.diver_count < 0
    if want_up:
        return 2
    if e.divers:
        d = min(e.divers, key=lambda d: abs(d[0] - e.sub_x) + abs(d[1] - e.sub_y))
        if d[1] != e.sub_y:
            return 4 if d[1] > e.sub_y else 2
        if d[0] != e.sub_x:
            return 3 if d[0] > e.sub_x else 1
    for z in e.e_fish + e.e_subs:  # shoot what is ahead in our row
        if z[1] == e.sub_y and (z[0] > e.sub_x) == e.sub_or:
            return 5
    return 0


def simulate(env, first, steps, dive):
    """Plays `first` then the heuristic for `steps` steps on a copy of env (game and random state);
    returns a score: dying is worst (except of lack of oxygen when diving), then rescued divers
    and reward."""
    inner = env.env
    saved = inner.random
    inner.random = None
    sim = copy.deepcopy(inner)
    inner.random = saved
    rs = copy.deepcopy(saved.rs)
    sim.random = rs
    last = env.last_action
    score = 0.0
    divers = sim.diver_count
    a = first
    for t in range(steps):
        if rs.rand() < STICKY:
            a = last
        last = a
        r, terminal = sim.act(a)
        score += r
        if sim.diver_count > divers:
            score += 3 * (sim.diver_count - divers)
        divers = sim.diver_count
        if terminal:
            return score if dive and sim.oxygen <= 0 else -1000.0 + t + score
        a = heuristic(sim, dive)
    return score


def choose(env, dive):
    h = heuristic(env.env, dive)
    order = [h] + [a for a in range(6) if a != h]
    scores = [simulate(env, a, HORIZON, dive) for a in order]
    best = max(range(len(order)), key=lambda i: (scores[i], -i))
    return order[best]


def main():
    out_dir = os.path.dirname(os.path.abspath(__file__))
    lines = ["# minatar seaquest: recorded by tests/reference/minatar_record_seaquest_extra.py (minatar 1.0.15 "
             "from pip), a look-ahead scripted agent"]
    env = Environment("seaquest")
    lines.append(f"game seaquest channels {env.n_channels}")
    stats = {"episodes": 0, "out_of_oxygen": 0, "six": 0, "max_ramp": 0, "min_divers": 0, "max_enemies": 0, "max_e_bullets": 0}
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
        dive = False
        for step in range(STEPS_PER_SEED):
            dive = dive or step == DIVE_AFTER
            a = choose(env, dive)
            before = env.env.diver_count
            r, terminal = env.act(a)
            e = env.env
            if before == 6 and e.diver_count == -1:
                stats["six"] += 1
            stats["max_ramp"] = max(stats["max_ramp"], e.ramp_index)
            stats["min_divers"] = min(stats["min_divers"], e.diver_count)
            stats["max_enemies"] = max(stats["max_enemies"], len(e.e_fish) + len(e.e_subs))
            stats["max_e_bullets"] = max(stats["max_e_bullets"], len(e.e_bullets))
            obs = env.state()
            lines.append(f"S {a} {int(r)} {int(bool(terminal))} {log.take()} | {flips(prev, obs)}")
            prev = obs
            if terminal:
                stats["episodes"] += 1
                stats["out_of_oxygen"] += int(e.oxygen <= 0)
                dive = not dive
                env.reset()
                obs = env.state()
                lines.append(f"R {log.take()} | {flips(prev, obs)}")
                prev = obs
    path = os.path.join(out_dir, "minatar_seaquest_extra.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{path}: {len(lines)} lines; {stats}")


if __name__ == "__main__":
    main()
