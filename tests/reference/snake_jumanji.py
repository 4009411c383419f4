#!/usr/bin/env python3
"""Records Jumanji Snake (pip `jumanji`, the reference: jumanji/environments/routing/snake/env.py)
trajectories with the random choices the env made, so that tests/envs/grid/snake_cases.hpp can
replay them into rlkernels::snake and compare every observation, action mask, reward and done flag.

usage: snake_jumanji.py        (writes snake_jumanji.txt next to this file)

Jumanji draws with jax.random, which we do not reproduce; instead each choice is logged as the
equivalent draw of rlkernels::snake: the head at reset as "i R*C cell" (a uniform cell, as Jumanji's
randint per coordinate), and each fruit as "i F k": the k-th free cell (row-major) of the F free
cells. Agents: on 12x12 (Snake-v1) one that mostly walks greedily to the fruit and sometimes
moves at random (legal or not, so walls and self-collisions end episodes); on 4x4 and 4x6 boards one
that follows a Hamiltonian cycle and so fills the board (the "snake completed" ending).

The observation is not stored cell by cell; the script checks that Jumanji's grid is exactly
  ch0 body = body_state > 0, ch1 head (one cell or none), ch2 tail = body_state == 1,
  ch3 fruit (one cell), ch4 = float32(body_state) / float32(max(1, max(body_state)))
and stores body_state, the head cell and the fruit cell of the grid, from which the test rebuilds it.

File format (text, one record per line):
  # comment lines
  board <R> <C>                 following runs use Snake(num_rows=R, num_cols=C) (time limit 4000)
  seed <s>                      a new run: reset with jax.random.PRNGKey(s)
  R <draws> | <obs>             a reset
  S <a> <r> <d> <v> <draws> | <obs>
                                a step with action a: reward r, done d (0/1), v = 1 if the action
                                was legal (Jumanji's action_mask[a] before the step)
  <draws> = count, then per draw "i <n> <k>"
  <obs>   = <mask as 4 digits> <head cell or -1> <fruit cell> <count> <cell>:<body_state> ...
            (cells are row * C + col; the mask is the new state's action_mask)
"""
import os

import jax
import jax.numpy as jnp
import numpy as np
from jumanji.environments import Snake

MOVES = [(-1, 0), (0, 1), (1, 0), (0, -1)]


def one_cell(channel):
    idx = np.flatnonzero(channel.ravel())
    assert len(idx) <= 1, idx
    return int(idx[0]) if len(idx) else -1


def encode(state, timestep):
    grid = np.asarray(timestep.observation.grid)
    bs = np.asarray(state.body_state)
    assert grid.dtype == np.float32, grid.dtype
    assert np.array_equal(grid[..., 0], (bs > 0).astype(np.float32))
    assert np.array_equal(grid[..., 2], (bs == 1).astype(np.float32))
    # XLA rewrites x / broadcast(m) as x * (1 / m), so the values are float32(bs) * (1 / max), which
    # can be one ulp from the quotient (5/6 -> 0.8333334).
    norm = bs.astype(np.float32) * (np.float32(1) / np.float32(max(1, int(bs.max()))))
    assert np.array_equal(grid[..., 4], norm), (grid[..., 4], norm)
    assert set(np.unique(grid[..., 1])) <= {0.0, 1.0} and set(np.unique(grid[..., 3])) <= {0.0, 1.0}
    head, fruit = one_cell(grid[..., 1]), one_cell(grid[..., 3])
    assert fruit >= 0
    mask = "".join("1" if m else "0" for m in np.asarray(timestep.observation.action_mask))
    cells = np.flatnonzero(bs.ravel())
    pairs = " ".join(f"{int(c)}:{int(bs.ravel()[c])}" for c in cells)
    return f"{mask} {head} {fruit} {len(cells)}" + (" " + pairs if len(cells) else "")


def draws_text(draws):
    return f"{len(draws)}" + "".join(f" i {n} {k}" for n, k in draws)


def fruit_draw(body, fruit_cell):
    """The rank of the fruit among the free cells of `body` (the body it was sampled against)."""
    free = np.flatnonzero(~body.ravel())
    assert fruit_cell in free, (fruit_cell, free)
    return (len(free), int(np.searchsorted(free, fruit_cell)))


def greedy_agent(rng, state, rows, cols):
    mask = np.asarray(state.action_mask)
    u = rng.rand()
    if u < 0.03 or not mask.any():
        return int(rng.randint(4))
    legal = np.flatnonzero(mask)
    if u < 0.15:
        return int(rng.choice(legal))
    hr, hc = int(state.head_position.row), int(state.head_position.col)
    fr, fc = int(state.fruit_position.row), int(state.fruit_position.col)
    dist = [abs(hr + MOVES[a][0] - fr) + abs(hc + MOVES[a][1] - fc) for a in legal]
    best = legal[np.array(dist) == min(dist)]
    return int(rng.choice(best))


def hamilton_agent(rng, state, rows, cols):
    """Next move along a Hamiltonian cycle (rows even): right on even rows, left on odd rows down to
    column 1, the last row back to column 0, then up column 0."""
    r, c = int(state.head_position.row), int(state.head_position.col)
    if c == 0:
        return 0 if r > 0 else 1
    if r % 2 == 0:
        return 1 if c < cols - 1 else 2
    if r == rows - 1:
        return 3
    return 3 if c > 1 else 2


def record_runs(lines, rows, cols, seeds, steps, agent):
    env = Snake(num_rows=rows, num_cols=cols)
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    lines.append(f"board {rows} {cols}")
    for seed in seeds:
        lines.append(f"seed {seed}")
        rng = np.random.RandomState(1000 + seed)
        key = jax.random.PRNGKey(seed)
        need_reset = True
        for _ in range(steps):
            if need_reset:
                key, sub = jax.random.split(key)
                state, ts = reset(sub)
                head = int(state.head_position.row) * cols + int(state.head_position.col)
                fruit = int(state.fruit_position.row) * cols + int(state.fruit_position.col)
                draws = [(rows * cols, head), fruit_draw(np.asarray(state.body), fruit)]
                lines.append(f"R {draws_text(draws)} | {encode(state, ts)}")
                need_reset = False
            a = agent(rng, state, rows, cols)
            valid = bool(state.action_mask[a])
            prev_fruit = (int(state.fruit_position.row), int(state.fruit_position.col))
            prev_len = int(state.length)
            state, ts = step(state, jnp.int32(a))
            reward, done = float(ts.reward), bool(ts.last())
            assert int(state.step_count) < 4000  # no time-limit endings in the recording
            draws = []
            if int(state.length) > prev_len:
                body = np.asarray(state.body)
                fruit = int(state.fruit_position.row) * cols + int(state.fruit_position.col)
                if body.all():
                    # Jumanji samples from an all-zero distribution: the fruit lands on cell 0.
                    assert fruit == 0
                else:
                    draws.append(fruit_draw(body, fruit))
            else:
                assert (int(state.fruit_position.row), int(state.fruit_position.col)) == prev_fruit
            lines.append(f"S {a} {int(reward)} {int(done)} {int(valid)} {draws_text(draws)} | {encode(state, ts)}")
            need_reset = done


def main():
    lines = [f"# jumanji snake: recorded by tests/reference/snake_jumanji.py (jumanji {__import__('jumanji').__version__})"]
    record_runs(lines, 12, 12, [0, 1, 2, 3], 700, greedy_agent)
    record_runs(lines, 4, 4, [0, 1], 400, hamilton_agent)
    record_runs(lines, 4, 6, [0], 400, hamilton_agent)
    record_runs(lines, 3, 5, [0], 300, greedy_agent)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "snake_jumanji.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    ends = sum(1 for l in lines if l.startswith("S") and l.split()[3] == "1")
    full = sum(1 for l in lines if l.startswith("S") and l.split()[3] == "1" and l.split()[4] == "1")
    print(f"{path}: {len(lines)} lines, {ends} episode ends ({full} with a legal last move)")


if __name__ == "__main__":
    main()
