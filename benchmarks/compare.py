#!/usr/bin/env python3
"""rlkernels against the CPU baselines users run today, on this machine, in one invocation.

Env-steps per second of CartPole-v1, Pendulum-v1, Acrobot-v1, MinAtar Breakout and the MuJoCo
envs Hopper-v5, Walker2d-v5, HalfCheetah-v5, Ant-v5, Humanoid-v5, Pusher-v5, InvertedPendulum-v5,
InvertedDoublePendulum-v5, Swimmer-v5 and Reacher-v5 over a sweep of batch
sizes N, for:

  rlkernels      vec_env::step on the serial, OpenMP and (with an NVIDIA GPU) CUDA backends, from
                 the Google Benchmark binaries cartpole_bench / classic_control_bench / grid_bench;
                 on CUDA also step + copying observations, rewards and flags to the host
                 (the MuJoCo envs: mujoco_bench, in float and in double)
  C++ gym-style  the in-binary baseline of those binaries: one heap object per env behind a
                 virtual reset()/step() interface, stepped one at a time (the same env arithmetic)
  MuJoCo mj_step the MuJoCo envs' C baseline in mujoco_bench: MuJoCo's own C library (the mujoco
                 wheel's libmujoco) batched as EnvPool does, one mjData per env, OpenMP over the envs
                 (one thread in the serial binary), ctrl = action and mj_step x frame_skip per env
                 step, with Gymnasium v5's healthy checks, truncation and resets; a per-core table
                 sets ours beside it (the target: ours in double >= 2x mj_step per core)
  Gymnasium      one env (gym.make), SyncVectorEnv and AsyncVectorEnv (gym.make_vec, same-step
                 autoreset like ours), and CartPole's NumPy CartPoleVectorEnv (pip gymnasium)
  EnvPool        envpool.make(..., num_threads=<cores>, batch_size=N) (pip envpool); for the MuJoCo
                 envs its v4 ids (Hopper-v4, ...) and, where the installed EnvPool has them, its v5 ids
  MinAtar        the minatar package's Environment, one per env, stepped in a Python loop

and the training time of PPO on CartPole-v1 (seconds until the mean return of the last 100
training episodes reaches 475), SAC on Pendulum-v1 (10,000 env steps) and TD3 on the L2F quadrotor
(training CPU seconds until learning-to-fly's settling fraction reaches 0.9, --l2f-seeds seeds; RLtools
through our driver rltools_td3_l2f_train_reward; docs/quadrotor.md), ours beside RLtools
(our driver benchmarks/algorithms/rltools_sac_pendulum.cpp on the headers of the rltools PyPI package,
built by CMake when pip install rltools has installed them, or a program given by --rltools-binary) and
Stable-Baselines3 (when installed). A baseline that is not installed, or that would not fit the
time or memory budget, is skipped with a note saying why; nothing is estimated or filled in.

Method (the same for every system): the policy is uniformly random over the action space, drawn
before timing (4 action batches per N, cycled); every system is warmed up by the same number of
steps for a given N (128, fewer for big N: compare_warmup_steps); each measurement is repeated
--repeats times, each repeat stepping for at least --min-time seconds, and the median and the
min-max range are reported. Observations end where a learner would read them: host memory (NumPy
arrays for the Python systems, host buffers for ours on the CPU), device memory for the CUDA row
(and host memory for the CUDA "+ copy to host" row).

Usage:
  python3 benchmarks/compare.py                     # build, measure everything, write build/compare/
  python3 benchmarks/compare.py --write-docs        # ... and update docs/benchmarks.md and README.md
  python3 benchmarks/compare.py --front-page        # README's table from the runs stored in docs/compare/
  python3 benchmarks/compare.py --quick             # 3 repeats of 0.2 s, N up to 65536
  python3 benchmarks/compare.py --help
Outputs: <out-dir>/results.json (every raw number), results.md (the tables), <env>.png (log-log).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------------------------------
# What is compared

ENVS = {
    "CartPole-v1": dict(binary="cartpole_bench", row_env=None, gym_id="CartPole-v1", envpool_id="CartPole-v1",
                        minatar=None, actions=("discrete", 2)),
    "Pendulum-v1": dict(binary="classic_control_bench", row_env="Pendulum-v1", gym_id="Pendulum-v1",
                        envpool_id="Pendulum-v1", minatar=None, actions=("continuous", 1, -2.0, 2.0)),
    "Acrobot-v1": dict(binary="classic_control_bench", row_env="Acrobot-v1", gym_id="Acrobot-v1",
                       envpool_id="Acrobot-v1", minatar=None, actions=("discrete", 3)),
    # Ours: MinAtar's defaults (sticky actions 0.1, full action set of 6, no time limit), as
    # minatar.Environment("breakout") and the gymnasium id MinAtar/Breakout-v0 it registers.
    "MinAtar-Breakout": dict(binary="grid_bench", row_env="MinAtar-Breakout-v0", gym_id="MinAtar/Breakout-v0",
                             envpool_id=None, minatar="breakout", actions=("discrete", 6)),
    # The MuJoCo envs (mujoco=True): ours in float and double, MuJoCo's mj_step beside them in the same
    # binary; EnvPool under its v4 id (the issue's) and its v5 id when the installed EnvPool has one
    # (envpool >= 1.x: the same XML and v5 settings as Gymnasium's).
    "Hopper-v5": dict(binary="mujoco_bench", row_env="Hopper-v5", gym_id="Hopper-v5", envpool_id="Hopper-v4",
                      envpool_v5_id="Hopper-v5", minatar=None, actions=("continuous", 3, -1.0, 1.0), mujoco=True),
    "Walker2d-v5": dict(binary="mujoco_bench", row_env="Walker2d-v5", gym_id="Walker2d-v5", envpool_id="Walker2d-v4",
                        envpool_v5_id="Walker2d-v5", minatar=None, actions=("continuous", 6, -1.0, 1.0), mujoco=True),
    "HalfCheetah-v5": dict(binary="mujoco_bench", row_env="HalfCheetah-v5", gym_id="HalfCheetah-v5",
                           envpool_id="HalfCheetah-v4", envpool_v5_id="HalfCheetah-v5", minatar=None,
                           actions=("continuous", 6, -1.0, 1.0), mujoco=True),
    "Ant-v5": dict(binary="mujoco_bench", row_env="Ant-v5", gym_id="Ant-v5", envpool_id="Ant-v4",
                   envpool_v5_id="Ant-v5", minatar=None, actions=("continuous", 8, -1.0, 1.0), mujoco=True),
    "Humanoid-v5": dict(binary="mujoco_bench", row_env="Humanoid-v5", gym_id="Humanoid-v5", envpool_id="Humanoid-v4",
                        envpool_v5_id="Humanoid-v5", minatar=None, actions=("continuous", 17, -0.4, 0.4), mujoco=True),
    # The manipulator: three kinematic trees, the object pushed by GJK/EPA cylinder contacts.
    "Pusher-v5": dict(binary="mujoco_bench", row_env="Pusher-v5", gym_id="Pusher-v5", envpool_id="Pusher-v4",
                      envpool_v5_id="Pusher-v5", minatar=None, actions=("continuous", 7, -2.0, 2.0), mujoco=True),
    # The small ones: a cart-pole and a double one (RK4, joint limits), a swimmer in a viscous medium
    # (fluid forces) and a two-link arm with its target (two trees, constraint islands).
    "InvertedPendulum-v5": dict(binary="mujoco_bench", row_env="InvertedPendulum-v5", gym_id="InvertedPendulum-v5",
                                envpool_id="InvertedPendulum-v4", envpool_v5_id="InvertedPendulum-v5", minatar=None,
                                actions=("continuous", 1, -3.0, 3.0), mujoco=True),
    "InvertedDoublePendulum-v5": dict(binary="mujoco_bench", row_env="InvertedDoublePendulum-v5",
                                      gym_id="InvertedDoublePendulum-v5", envpool_id="InvertedDoublePendulum-v4",
                                      envpool_v5_id="InvertedDoublePendulum-v5", minatar=None,
                                      actions=("continuous", 1, -1.0, 1.0), mujoco=True),
    "Swimmer-v5": dict(binary="mujoco_bench", row_env="Swimmer-v5", gym_id="Swimmer-v5", envpool_id="Swimmer-v4",
                       envpool_v5_id="Swimmer-v5", minatar=None, actions=("continuous", 2, -1.0, 1.0), mujoco=True),
    "Reacher-v5": dict(binary="mujoco_bench", row_env="Reacher-v5", gym_id="Reacher-v5", envpool_id="Reacher-v4",
                       envpool_v5_id="Reacher-v5", minatar=None, actions=("continuous", 2, -1.0, 1.0), mujoco=True),
}
MUJOCO_ENVS = [e for e, spec in ENVS.items() if spec.get("mujoco")]

# key -> label in tables and plots (a measured label may add threads or the GPU). Order = table rows.
SYSTEMS = {
    "rlk_cuda": "rlkernels CUDA",
    "rlk_cuda_f64": "rlkernels CUDA, double",
    "rlk_cuda_to_host": "rlkernels CUDA + copy to host",
    "rlk_openmp": "rlkernels OpenMP",
    "rlk_openmp_f64": "rlkernels OpenMP, double",
    "rlk_serial": "rlkernels serial",
    "rlk_serial_f64": "rlkernels serial, double",
    "rlk_python": "rlkernels from Python (OpenMP)",
    "rlk_python_array": "rlkernels from Python (OpenMP), final_obs='array'",
    "gym_style_cpp": "C++ gym-style loop (ours, 1 thread)",
    "mujoco_openmp": "MuJoCo mj_step (C, OpenMP over envs)",
    "mujoco_serial": "MuJoCo mj_step (C, 1 thread)",
    "envpool": "EnvPool",
    "envpool_minus_one": "EnvPool, one thread fewer",
    "envpool_v5": "EnvPool, v5 id",
    "gymnasium_numpy": "Gymnasium CartPoleVectorEnv (NumPy)",
    "gymnasium_sync": "Gymnasium SyncVectorEnv",
    "gymnasium_async": "Gymnasium AsyncVectorEnv",
    "gymnasium": "Gymnasium, one env",
    "minatar": "MinAtar package (Python loop)",
}
PYTHON_SYSTEMS = ["rlk_python", "rlk_python_array", "envpool", "envpool_minus_one", "envpool_v5", "gymnasium_numpy", "gymnasium_sync", "gymnasium_async", "gymnasium", "minatar"]
ALL_SIZES = [1, 16, 256, 4096, 65536, 1 << 20]
ACTION_BATCHES = 4


def compare_warmup_steps(n: int) -> int:
    """Warm-up steps for batch size n, for every system (bench_common.hpp has the same rule)."""
    return int(max(8, min(128, (1 << 20) // max(1, n))))


# ---------------------------------------------------------------------------------------------------
# Statistics and formatting (pure functions; benchmarks/test_compare.py checks them)

def summarize(rates: list[float]) -> dict:
    """Median and spread of the repeats' env-steps/s."""
    if not rates:
        raise ValueError("summarize: no repeats")
    med = statistics.median(rates)
    return {"median": med, "min": min(rates), "max": max(rates),
            "spread_pct": 100.0 * (max(rates) - min(rates)) / (2.0 * med) if med > 0 else 0.0}


def human_rate(x: float) -> str:
    """3 significant digits with k/M/G: 27400000 -> '27.4M'."""
    if x is None or not math.isfinite(x):
        return "?"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")):
        if abs(x) >= div:
            v = x / div
            return (f"{v:.3g}" if v < 100 else f"{v:.0f}") + suffix
    return f"{x:.3g}"


def human_n(n: int) -> str:
    return "2^20" if n == 1 << 20 else str(n)


def predicted_seconds(per_env_step_s: float, n: int, warmup: int, repeats: int, min_time: float) -> float:
    """Time a cell at batch size n should take, from the cost of one env-step measured at a smaller N
    (stepping is at least linear in N; building the envs is not counted, so this is optimistic)."""
    step_s = per_env_step_s * n
    return warmup * step_s + repeats * max(min_time, step_s)


def cell_text(cell: dict | None, footnotes: list[str]) -> str:
    if cell is None:
        return ""
    if cell["status"] != "ok":
        note = cell.get("note", "skipped")
        if note not in footnotes:
            footnotes.append(note)
        return f"– [{footnotes.index(note) + 1}]"
    s = cell["summary"]
    return f"{human_rate(s['median'])} ±{s['spread_pct']:.0f}%" if s["spread_pct"] >= 0.5 else human_rate(s["median"])


def markdown_env_table(env: str, cells: list[dict], sizes: list[int]) -> str:
    """One table: a row per system that has any cell for env, a column per N."""
    footnotes: list[str] = []
    by = {(c["system"], c["n"]): c for c in cells if c["env"] == env}
    systems = [s for s in SYSTEMS if any((s, n) in by for n in sizes)]
    lines = [f"| {env} | " + " | ".join(f"N={human_n(n)}" for n in sizes) + " |",
             "|---|" + "---:|" * len(sizes)]
    for s in systems:
        label = next((c["label"] for c in cells if c["env"] == env and c["system"] == s and c["status"] == "ok"),
                     SYSTEMS[s])  # a measured cell's label (it may name threads, the GPU, a version)
        lines.append(f"| {label} | " + " | ".join(cell_text(by.get((s, n)), footnotes) for n in sizes) + " |")
    out = "\n".join(lines)
    if footnotes:
        out += "\n\n" + "\n".join(f"[{i + 1}] {note}  " for i, note in enumerate(footnotes)).rstrip()
    return out


def best_cell(cells: list[dict], env: str, systems: list[str]) -> dict | None:
    ok = [c for c in cells if c["env"] == env and c["system"] in systems and c["status"] == "ok"]
    return max(ok, key=lambda c: c["summary"]["median"]) if ok else None


def markdown_summary(cells: list[dict]) -> str:
    """Per env: the best median of rlkernels and of each baseline family (at its best N), and the
    speed-ups of our best over Gymnasium's single env and over the best package measured (EnvPool,
    Gymnasium, MinAtar; our own C++ gym-style loop has its column but is not a package)."""
    families = [("rlkernels", OURS),
                ("rlkernels from Python", ["rlk_python", "rlk_python_array"]),
                ("EnvPool", ["envpool", "envpool_minus_one", "envpool_v5"]),
                ("Gymnasium vector", ["gymnasium_numpy", "gymnasium_sync", "gymnasium_async"]),
                ("Gymnasium, one env", ["gymnasium"]),
                ("MinAtar package", ["minatar"]),
                ("C++ gym-style loop", ["gym_style_cpp"]),
                ("MuJoCo mj_step (C)", ["mujoco_openmp", "mujoco_serial"])]
    head = ("| env | " + " | ".join(f for f, _ in families)
            + " | ours / Gymnasium one env | ours / best package | from Python / EnvPool |")
    lines = [head, "|---|" + "---|" * (len(families) + 3)]
    baselines = [s for s in SYSTEMS if not s.startswith("rlk_") and s != "gym_style_cpp"]
    for env in ENVS:
        if not any(c["env"] == env for c in cells):
            continue
        row = [env]
        for _, systems in families:
            b = best_cell(cells, env, systems)
            if b is None:
                row.append("–")
            else:
                short = re.sub(r"^(rlkernels|Gymnasium|EnvPool) ", "", b["label"])
                short = short[1:-1] if short.startswith("(") and short.endswith(")") else short
                where = f"{short}, N={human_n(b['n'])}" if len(systems) > 1 else f"N={human_n(b['n'])}"
                row.append(f"{human_rate(b['summary']['median'])} ({where})")
        ours = best_cell(cells, env, OURS)
        one = best_cell(cells, env, ["gymnasium"])
        base = best_cell(cells, env, baselines)
        def ratio(a, b):
            if not (a and b):
                return "–"
            r = a["summary"]["median"] / b["summary"]["median"]
            return f"{r:.1f}x" if r < 10 else f"{r:,.0f}x"
        row += [ratio(ours, one), ratio(ours, base),
                ratio(best_cell(cells, env, ["rlk_python", "rlk_python_array"]), best_cell(cells, env, ["envpool", "envpool_minus_one", "envpool_v5"]))]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


OURS = ["rlk_cuda", "rlk_cuda_f64", "rlk_openmp", "rlk_openmp_f64", "rlk_serial", "rlk_serial_f64"]


def newest_runs_per_env(runs: list[dict]) -> dict[str, dict]:
    """env -> the newest of runs (each a results.json) that measured it (by the run's machine date)."""
    newest: dict[str, dict] = {}
    for run in sorted(runs, key=lambda r: r["machine"]["date"]):
        for env in ENVS:
            if any(c["env"] == env and c["status"] == "ok" for c in run["cells"]):
                newest[env] = run
    return newest


def front_page_summary(runs: list[dict]) -> str:
    """README's performance table: per env, from the newest stored run that measured it, the best median
    of ours and of each package (EnvPool, Gymnasium's vector and single env, the MinAtar package, MuJoCo's
    mj_step in C), our speed-ups over Gymnasium's single env and over the best package, and a letter
    naming the run; under it, a line per run with its date, machine, commit and command. Every figure is
    read from the runs' cells, none is typed in."""
    newest = newest_runs_per_env(runs)
    order = []
    for env in ENVS:
        if env in newest and newest[env] not in order:
            order.append(newest[env])
    letters = {id(run): chr(ord("a") + i) for i, run in enumerate(order)}
    families = [("rlkernels", OURS), ("EnvPool", ["envpool", "envpool_minus_one", "envpool_v5"]),
                ("Gymnasium vector", ["gymnasium_numpy", "gymnasium_sync", "gymnasium_async"]),
                ("Gymnasium, one env", ["gymnasium"]), ("MinAtar package", ["minatar"]),
                ("MuJoCo `mj_step` (C)", ["mujoco_openmp", "mujoco_serial"])]
    packages = [s for _, systems in families[1:] for s in systems]
    lines = ["| env | " + " | ".join(f for f, _ in families) + " | ours / Gymnasium one env | ours / best package | run |",
             "|---|" + "---:|" * (len(families) + 2) + "---|"]
    for env in ENVS:
        if env not in newest:
            continue
        cells = newest[env]["cells"]
        row = [env]
        for _, systems in families:
            b = best_cell(cells, env, systems)
            row.append(human_rate(b["summary"]["median"]) if b else "–")
        ours, one, base = best_cell(cells, env, OURS), best_cell(cells, env, ["gymnasium"]), best_cell(cells, env, packages)

        def ratio(a, b):
            if not (a and b):
                return "–"
            r = a["summary"]["median"] / b["summary"]["median"]
            return f"{r:.1f}x" if r < 10 else f"{r:,.0f}x"
        row += [ratio(ours, one), ratio(ours, base), f"({letters[id(newest[env])]})"]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for run in order:
        m = run["machine"]
        lines.append(f"({letters[id(run)]}) {m['date'].split(' ')[0]}, {machine_line(m)}, rlkernels {m['commit']}: "
                     f"`{run['command']}`  ")
    lines[-1] = lines[-1].rstrip()
    return "\n".join(lines)



def cores_used(cell: dict) -> int:
    """The cores a measurement kept busy: its threads (1 for the serial and single-env rows), at most N."""
    return max(1, min(int(cell.get("threads") or 1), int(cell["n"])))


def markdown_per_core(env: str, cells: list[dict], sizes: list[int]) -> str:
    """The MuJoCo envs' per-core table: env-steps/s per busy core (serial rows as measured, OpenMP and
    EnvPool rows divided by min(threads, N)) of ours in float and double and of MuJoCo's mj_step, and
    ours over mj_step, serial against serial and OpenMP against OpenMP (the issue's target: double
    >= 2x); for the serial rows also env steps per CPU-second of their thread (robust to a loaded
    machine) and the ratios of those. Empty when neither mj_step row was measured."""
    by = {(c["system"], c["n"]): c for c in cells if c["env"] == env and c["status"] == "ok"}
    if not any(s in ("mujoco_serial", "mujoco_openmp") for s, _ in by):
        return ""

    def per_core(system, n):
        c = by.get((system, n))
        return c["summary"]["median"] / cores_used(c) if c else None

    def per_cpu_second(system, n):
        c = by.get((system, n))
        return statistics.median(c["cpu_rates"]) if c and c.get("cpu_rates") else None

    rows = [("mujoco_serial", "MuJoCo mj_step, 1 thread"), ("rlk_serial_f64", "rlkernels serial, double"),
            ("rlk_serial", "rlkernels serial, float"), ("mujoco_openmp", "MuJoCo mj_step, OpenMP, per thread"),
            ("rlk_openmp_f64", "rlkernels OpenMP double, per thread"), ("rlk_openmp", "rlkernels OpenMP float, per thread"),
            ("envpool_v5", "EnvPool v5 id, per thread"), ("envpool", "EnvPool v4 id, per thread"),
            ("gymnasium", "Gymnasium, one env")]
    lines = [f"| {env}, env-steps/s per core | " + " | ".join(f"N={human_n(n)}" for n in sizes) + " |",
             "|---|" + "---:|" * len(sizes)]
    for system, label in rows:
        if any((system, n) in by for n in sizes):
            lines.append(f"| {label} | " + " | ".join(human_rate(per_core(system, n)) if (system, n) in by else ""
                                                      for n in sizes) + " |")
    for system, label in [("mujoco_serial", "MuJoCo mj_step, per CPU-second of its thread"),
                          ("rlk_serial_f64", "rlkernels double, per CPU-second"),
                          ("rlk_serial", "rlkernels float, per CPU-second")]:
        if any(per_cpu_second(system, n) for n in sizes):
            lines.append(f"| {label} | " + " | ".join(human_rate(per_cpu_second(system, n)) if per_cpu_second(system, n)
                                                      else "" for n in sizes) + " |")
    for ours, base, label in [("rlk_serial_f64", "mujoco_serial", "double / mj_step, CPU time (1 thread each)"),
                              ("rlk_serial", "mujoco_serial", "float / mj_step, CPU time (1 thread each)")]:
        ratios = [(per_cpu_second(ours, n), per_cpu_second(base, n)) for n in sizes]
        if any(a and b for a, b in ratios):
            lines.append(f"| **{label}** | " + " | ".join(f"{a / b:.2f}x" if a and b else "" for a, b in ratios) + " |")
    for ours, base, label in [("rlk_serial_f64", "mujoco_serial", "double / mj_step (1 thread each)"),
                              ("rlk_serial", "mujoco_serial", "float / mj_step (1 thread each)"),
                              ("rlk_openmp_f64", "mujoco_openmp", "double / mj_step (OpenMP each)"),
                              ("rlk_openmp", "mujoco_openmp", "float / mj_step (OpenMP each)")]:
        ratios = [(per_core(ours, n), per_core(base, n)) for n in sizes]
        if any(a and b for a, b in ratios):
            lines.append(f"| **{label}** | " + " | ".join(f"{a / b:.2f}x" if a and b else "" for a, b in ratios) + " |")
    return "\n".join(lines)


def markdown_training(rows: list[dict]) -> str:
    lines = ["| task | system | median | min – max | runs | notes |", "|---|---|---:|---:|---:|---|"]
    for r in rows:
        if r["status"] == "ok":
            t = r["seconds"]
            lines.append(f"| {r['task']} | {r['system']} | {statistics.median(t):.2f} s | {min(t):.2f} – {max(t):.2f} s | "
                         f"{len(t)} | {r.get('note', '')} |")
        elif r["status"] == "not_reached":
            lines.append(f"| {r['task']} | {r['system']} | – | – | {len(r['raw'])} | {r['note']} |")
        else:
            lines.append(f"| {r['task']} | {r['system']} | – | – | 0 | skipped: {r['note']} |")
    return "\n".join(lines)


L2F_TASK = "TD3 L2F-Crazyflie-v0, time to fly"
# docs/quadrotor.md's training reward; the evaluation is on l2f.Environment() unchanged.
L2F_TRAIN_REWARD = ["--env-param", "reward_angular_acceleration=0", "--env-param", "reward_linear_velocity=1"]


def time_to_fly(output: str) -> dict:
    """From the eval lines of rlkernels_td3_l2f or rltools_*_l2f (docs/quadrotor.md): the env steps,
    training CPU seconds and wall seconds at the first evaluation with a settling fraction of at least
    0.9 (None when no evaluation reached it), the number of evaluations and the last settling fraction."""
    first, last, n = None, None, 0
    for line in output.splitlines():
        f = line.split()
        if not f or f[0] != "eval:":
            continue
        d = {f[i]: float(f[i + 1]) for i in range(1, len(f) - 1, 2)}
        n, last = n + 1, d
        if first is None and d.get("settling_fraction", 0.0) >= 0.9:
            first = d
    return {"evaluations": n, "flew": first is not None,
            "env_steps": int(first["env_steps"]) if first else None,
            "cpu_seconds": first["training_cpu_seconds"] if first else None,
            "seconds": first["training_seconds"] if first else None,
            "final_settling": last["settling_fraction"] if last else None}


def l2f_row(system: str, runs: list[dict]) -> dict:
    """The training-table row of a list of time_to_fly results (one per seed): the CPU seconds of the
    seeds that flew; a row whose seeds all failed says so."""
    flew = [r for r in runs if r["flew"]]
    note = (f"{len(flew)}/{len(runs)} seeds flew (learning-to-fly's settling fraction >= 0.9 over 100 episodes, "
            f"evaluated every 10k env steps); training CPU seconds to the first such evaluation")
    if flew:
        note += "; env steps " + ", ".join(f"{r['env_steps'] // 1000}k" for r in flew)
        return {"task": L2F_TASK, "system": system, "status": "ok", "seconds": [r["cpu_seconds"] for r in flew],
                "note": note, "raw": runs}
    return {"task": L2F_TASK, "system": system, "status": "not_reached", "note": note, "raw": runs}


def replace_between(text: str, begin: str, end: str, body: str) -> str:
    """Replaces what lies between the marker lines begin and end (both kept); ValueError if absent."""
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < 0 or j < i:
        raise ValueError(f"markers {begin!r} ... {end!r} not found (in this order)")
    return text[: i + len(begin)] + "\n" + body.strip("\n") + "\n" + text[j:]


# ---------------------------------------------------------------------------------------------------
# The machine

def machine_description() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        pass
    gpus = []
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=30)
            if out.returncode == 0:
                gpus = [g.strip() for g in out.stdout.splitlines() if g.strip()]
        except (OSError, subprocess.TimeoutExpired):
            pass
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
    except OSError:
        commit = ""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu, "cores": cores, "memory_gib": round(mem_gib, 1) if mem_gib else None, "gpus": gpus,
            "os": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
            "commit": commit, "date": _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "load_avg_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None}


def machine_line(m: dict) -> str:
    gpu = ", GPU: " + ", ".join(m["gpus"]) if m["gpus"] else ", no GPU"
    mem = f", {m['memory_gib']:.0f} GiB" if m.get("memory_gib") else ""
    return f"{m['cpu']}, {m['cores']} cores{mem}{gpu}"


def rltools_system(label: str, version: str | None) -> str:
    """The RLtools row's system name, from the label that the driver's first line gives the benchmark row."""
    if label.startswith("rltools_sac_pendulum:"):
        backend = "OpenBLAS, 1 thread" if "backend OpenBLAS" in label else "no BLAS"
        package = f"rltools {version}" if version else "rltools"
        return f"RLtools SAC (headers of pip {package}, our driver, {backend})"
    return "RLtools SAC (user-supplied program)"


def rltools_note(runs: list[dict]) -> str:
    """Eval returns (when the program prints them), what was timed, the seed."""
    parts = []
    if all("eval_return" in b for b in runs):
        parts.append("eval return (100 episodes) " + ", ".join(f"{b['eval_return']:.0f}" for b in runs))
    parts.append("its training loop as the program times it" if all(b.get("program_timed") for b in runs)
                 else "whole process")
    parts.append("seed 0 each run")
    return "; ".join(parts)


def package_versions() -> dict:
    import importlib.metadata as md
    out = {}
    for p in ["numpy", "gymnasium", "envpool", "MinAtar", "stable-baselines3", "torch", "rltools", "matplotlib"]:
        try:
            out[p] = md.version(p)
        except md.PackageNotFoundError:
            out[p] = None
    return out


# ---------------------------------------------------------------------------------------------------
# Worker: one Python baseline measurement, in its own process (the driver runs
# `compare.py --worker SYSTEM ...` and reads one JSON line)

def make_actions(spec: dict, n: int):
    import numpy as np
    rng = np.random.default_rng(777 + n)
    kind = spec["actions"]
    if kind[0] == "discrete":
        return [rng.integers(0, kind[1], size=n, dtype=np.int64) for _ in range(ACTION_BATCHES)]
    _, width, low, high = kind
    return [rng.uniform(low, high, size=(n, width)).astype(np.float32) for _ in range(ACTION_BATCHES)]


def time_steps(step, actions, n: int, warmup: int, repeats: int, min_time: float) -> list[float]:
    """Warm up, then `repeats` timed stretches of at least min_time seconds; env-steps/s of each."""
    k = 0
    for _ in range(warmup):
        step(actions[k % ACTION_BATCHES])
        k += 1
    rates = []
    clock = time.perf_counter
    for _ in range(repeats):
        steps = 0
        start = clock()
        while True:
            step(actions[k % ACTION_BATCHES])
            k += 1
            steps += 1
            elapsed = clock() - start
            if elapsed >= min_time:
                break
        rates.append(steps * n / elapsed)
    return rates


def worker_env_steps(system: str, env: str, n: int, warmup: int, repeats: int, min_time: float, seed: int) -> dict:
    spec = ENVS[env]
    actions = make_actions(spec, n)
    label = SYSTEMS[system]
    extra = {}
    now = time.perf_counter
    if system in ("envpool", "envpool_minus_one", "envpool_v5"):
        import envpool
        env_id = spec["envpool_v5_id"] if system == "envpool_v5" else spec["envpool_id"]
        if env_id not in envpool.list_all_envs():
            return {"unavailable": f"EnvPool {getattr(envpool, '__version__', '?')} has no {env_id}"}
        t0 = now()
        cores = len(os.sched_getaffinity(0))
        # the pool sized to the machine, or one core left to the Python thread that drives it
        threads = cores if system != "envpool_minus_one" else max(1, cores - 1)
        # batch_size = num_envs: synchronous stepping of all N, like every other system here.
        envs = envpool.make(env_id, env_type="gymnasium", num_envs=n, batch_size=n, num_threads=threads,
                            seed=seed)
        envs.reset()
        label = f"EnvPool ({threads} thread{'s' if threads > 1 else ''})"
        if spec.get("mujoco"):
            label = f"EnvPool {env_id} ({threads} thread{'s' if threads > 1 else ''})"
        extra["threads"] = threads
        extra["autoreset"] = "EnvPool's: the step after an episode ends returns the reset observation"

        def step(a):
            return envs.step(a)
    elif system in ("rlk_python", "rlk_python_array"):
        # rlkernels' Python package: installed, or the module this checkout built (build/<preset>/python)
        try:
            import rlkernels
        except ImportError:
            sys.path.insert(0, os.environ.get("RLK_PYTHON_PATH") or str(ROOT / "build/default/python"))
            import rlkernels
        t0 = now()
        cores = len(os.sched_getaffinity(0))
        layout = "array" if system == "rlk_python_array" else "objects"
        envs = rlkernels.make_vec(spec["gym_id"], n, seed=seed, backend="openmp", final_obs=layout)
        envs.reset(seed=seed)
        label = f"rlkernels from Python (OpenMP, {cores} thread{'s' if cores > 1 else ''})"
        if layout == "array":
            label += ", final_obs='array'"
        extra["threads"] = cores
        extra["autoreset"] = ("same-step; observations are views (copy=False); infos['final_obs'] "
                              + ("the [N, obs] view" if layout == "array" else "Gymnasium's object array"))

        def step(a):
            return envs.step(a)
    elif system in ("gymnasium_sync", "gymnasium_async", "gymnasium_numpy"):
        import gymnasium as gym
        if spec["minatar"]:
            import minatar.gym
            minatar.gym.register_envs()
        t0 = now()
        if system == "gymnasium_numpy":
            envs = gym.make_vec(spec["gym_id"], num_envs=n, vectorization_mode="vector_entry_point")
            extra["autoreset"] = "Gymnasium's next-step autoreset (its vector entry point has no same-step mode)"
        else:
            mode = "sync" if system == "gymnasium_sync" else "async"
            envs = gym.make_vec(spec["gym_id"], num_envs=n, vectorization_mode=mode,
                                vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})
            extra["autoreset"] = "same-step (the final observation in info, as ours)"
        envs.reset(seed=seed)

        def step(a):
            return envs.step(a)
    elif system == "gymnasium":
        import gymnasium as gym
        if spec["minatar"]:
            import minatar.gym
            minatar.gym.register_envs()
        if n != 1:
            raise ValueError("gymnasium (one env) runs at N=1 only")
        t0 = now()
        env_ = gym.make(spec["gym_id"])
        env_.reset(seed=seed)
        actions = [a[0] if spec["actions"][0] == "continuous" else int(a[0]) for a in actions]

        def step(a):
            obs, reward, terminated, truncated, info = env_.step(a)
            if terminated or truncated:
                obs, info = env_.reset()
            return obs
    elif system == "minatar":
        import numpy as np
        from minatar import Environment
        t0 = now()
        envs = [Environment(spec["minatar"], sticky_action_prob=0.1) for _ in range(n)]
        for i, e in enumerate(envs):
            e.seed(seed + i)
            e.reset()
        lists = [a.tolist() for a in actions]
        actions = lists
        obs = np.empty((n, *envs[0].state_shape()), dtype=bool)
        extra["observations"] = "copied into one [N, 10, 10, 4] array per step (what a learner reads)"

        def step(a):
            for i, (e, ai) in enumerate(zip(envs, a)):
                reward, terminal = e.act(ai)
                if terminal:
                    e.reset()
                obs[i] = e.state()
            return obs
    else:
        raise ValueError(f"unknown worker system {system!r}")
    build_s = now() - t0  # making and resetting the envs, imports excluded
    if spec.get("mujoco") and system.startswith("gymnasium"):
        import mujoco
        extra["mujoco"] = mujoco.__version__  # the MuJoCo that Gymnasium's envs step
    rates = time_steps(step, actions, n, warmup, repeats, min_time)
    return {"rates": rates, "label": label, "build_s": build_s, **extra}


def sb3_train(task: str, seed: int, max_steps: int) -> dict:
    """Stable-Baselines3 on CPU: PPO CartPole-v1 with rl-zoo's tuned hyperparameters until the mean
    return of the last 100 training episodes reaches 475, or SAC Pendulum-v1 for 10k steps with the
    configuration our preset and RLtools use (64-64 networks, batch 100, lr 1e-3)."""
    import numpy as np
    import torch
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.utils import LinearSchedule
    import gymnasium as gym

    class StopAt475(BaseCallback):
        def __init__(self):
            super().__init__()
            self.reached_at = None
            self.start = None

        def _on_training_start(self):
            self.start = time.perf_counter()

        def _on_step(self):
            buf = self.model.ep_info_buffer
            if buf is not None and len(buf) == 100 and np.mean([e["r"] for e in buf]) >= 475:
                self.reached_at = time.perf_counter() - self.start
                return False
            return True

    def rollout_rate(model, env, steps=4000):
        """env-steps/s of SB3's rollout loop alone (policy forward + env.step), no learning."""
        obs = env.reset()
        start = time.perf_counter()
        for _ in range(steps // env.num_envs):
            actions, _ = model.predict(obs, deterministic=False)
            obs, _, _, _ = env.step(actions)
        return (steps // env.num_envs) * env.num_envs / (time.perf_counter() - start)

    if task in ("ppo_cartpole", "ppo_cartpole_rlk"):
        if task == "ppo_cartpole":
            env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)  # DummyVecEnv of Gymnasium's CartPole
        else:
            try:
                import rlkernels.sb3
            except ImportError:
                sys.path.insert(0, os.environ.get("RLK_PYTHON_PATH") or str(ROOT / "build/default/python"))
                import rlkernels.sb3
            env = rlkernels.sb3.make_vec_env("CartPole-v1", n_envs=8, seed=seed, backend="serial")
        model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
                    ent_coef=0.0, learning_rate=LinearSchedule(1e-3, 0.0, 1.0), clip_range=LinearSchedule(0.2, 0.0, 1.0),
                    seed=seed, device="cpu", verbose=0)
        cb = StopAt475()
        start = time.perf_counter()
        model.learn(total_timesteps=max_steps, callback=cb)
        total = time.perf_counter() - start
        return {"seconds": cb.reached_at if cb.reached_at is not None else total, "reached": cb.reached_at is not None,
                "env_steps": int(model.num_timesteps), "torch_threads": torch.get_num_threads(),
                "rollout_steps_per_s": rollout_rate(model, env)}
    if task == "sac_pendulum_10k":
        env = gym.make("Pendulum-v1")
        model = SAC("MlpPolicy", env, learning_rate=1e-3, buffer_size=10000, learning_starts=100, batch_size=100,
                    tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, policy_kwargs=dict(net_arch=[64, 64]),
                    seed=seed, device="cpu", verbose=0)
        start = time.perf_counter()
        model.learn(total_timesteps=10000)
        seconds = time.perf_counter() - start
        from stable_baselines3.common.evaluation import evaluate_policy
        from stable_baselines3.common.monitor import Monitor
        mean, _ = evaluate_policy(model, Monitor(gym.make("Pendulum-v1")), n_eval_episodes=20, deterministic=True)
        return {"seconds": seconds, "reached": True, "eval_return": float(mean), "torch_threads": torch.get_num_threads()}
    raise ValueError(f"unknown sb3 task {task!r}")


def run_worker(args) -> int:
    try:
        if args.worker == "sb3":
            result = sb3_train(args.env, args.seed, args.max_steps)
        else:
            result = worker_env_steps(args.worker, args.env, args.n, args.warmup, args.repeats, args.min_time, args.seed)
        print("RESULT " + json.dumps(result), flush=True)
        return 0
    except ImportError as e:
        print("MISSING " + json.dumps({"module": getattr(e, "name", None) or str(e)}), flush=True)
        return 3


# ---------------------------------------------------------------------------------------------------
# Driver

class Runner:
    def __init__(self, args):
        self.args = args
        self.cells: list[dict] = []
        self.training: list[dict] = []
        self.notes: list[str] = []

    def log(self, msg: str):
        print(msg, flush=True)

    # ---- ours (Google Benchmark binaries) ----

    def binary(self, build_dir: Path, name: str) -> Path:
        return build_dir / "benchmarks" / name

    def run_gbench(self, exe: Path, flags: list[str], extra_env: dict | None = None) -> dict:
        """Runs a Google Benchmark binary with flags; returns its JSON output."""
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.json"
            cmd = [str(exe), *flags, f"--benchmark_out={out}", "--benchmark_out_format=json"]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **(extra_env or {})))
            if proc.returncode != 0 or not out.exists():
                raise RuntimeError(f"{exe.name} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
            return json.loads(out.read_text())

    def ours(self, env: str, backend: str, build_dir: Path, systems_rows: dict):
        """systems_rows: system key -> row-name prefix (without env or backend), or (prefix, suffix of
        the env part): ("BM_vec_env_step", ":double") reads BM_vec_env_step/<env>:double/<backend>/N."""
        spec = ENVS[env]
        exe = self.binary(build_dir, f"{spec['binary']}_{backend}")
        if not exe.exists():
            for system in systems_rows:
                self.skip(system, env, None, f"{exe} not built")
            return
        # Google Benchmark's filter is a POSIX extended regex: the env ids need no escaping there.
        parts = {}
        for system, row in systems_rows.items():
            prefix, suffix = row if isinstance(row, tuple) else (row, "")
            parts[system] = f"{prefix}/{spec['row_env']}{suffix}/" if spec["row_env"] else f"{prefix}/"
        alternatives = "|".join(dict.fromkeys(p[:-1] for p in parts.values()))
        filter_re = f"^({alternatives})/[a-z]+/[0-9]+/"
        sizes = self.args.sizes
        if spec.get("mujoco"):
            # one physics env step costs 10-100 us per core: bigger N would take minutes per row
            cap = self.args.mujoco_max_envs
            sizes = [n for n in sizes if n <= cap]
            for n in self.args.sizes:
                if n > cap:
                    for system in systems_rows:
                        self.skip(system, env, n, f"N > {cap} (--mujoco-max-envs): a physics env step costs "
                                                  "10-100 us per core, so a row would take minutes")
            if not sizes:
                return
        self.log(f"  {exe.name}: {', '.join(systems_rows)} ...")
        data = self.run_gbench(exe, [f"--rlk_batch_sizes={','.join(map(str, sizes))}",
                                     f"--rlk_min_time={self.args.min_time}", "--rlk_compare_warmup",
                                     f"--benchmark_repetitions={self.args.repeats}", f"--benchmark_filter={filter_re}"])
        threads = data["context"].get("omp_max_threads")
        gpu = data["context"].get("cuda_device")
        for system, part in parts.items():
            if not any(b["name"].startswith(part) for b in data["benchmarks"]):
                # a row the binary does not have at all: say why (mujoco_bench builds its rows where
                # their parts exist: ours with the env headers, mj_step with MuJoCo's library)
                note = "no row"
                if spec.get("mujoco") and system.startswith("mujoco_"):
                    note = ("not in this build: CMake found no MuJoCo C library or Gymnasium assets "
                            "(pip install mujoco==3.12.0 'gymnasium[mujoco]', then re-run CMake)")
                elif spec.get("mujoco"):
                    note = f"not in this build: {exe.name} was built without rlkernels' {env} env header"
                for n in sizes:
                    self.skip(system, env, n, note, not_in_build=note != "no row")
                continue
            for n in sizes:
                rows = [b for b in data["benchmarks"]
                        if b.get("run_type") == "iteration"
                        and re.match(f"^{re.escape(part)}[a-z]+/{n}/", b["name"])]
                errors = [b for b in rows if b.get("error_occurred")]
                if errors:
                    self.skip(system, env, n, errors[0].get("error_message", "error"))
                    continue
                if not rows:
                    self.skip(system, env, n, "no row")
                    continue
                label = SYSTEMS[system]
                if spec.get("mujoco") and system in ("rlk_openmp", "rlk_serial", "rlk_cuda"):
                    label += ", float"
                if system in ("rlk_openmp", "rlk_openmp_f64", "mujoco_openmp") and threads:
                    label += f" ({threads} threads)"
                if system.startswith("rlk_cuda") and gpu:
                    label += f" ({gpu})"
                if system.startswith("mujoco_") and data["context"].get("mujoco_version"):
                    label = label.replace("MuJoCo", f"MuJoCo {data['context']['mujoco_version']}", 1)
                extra = {"binary": exe.name, "row": rows[0]["name"]}
                if backend == "openmp" and threads:
                    extra["threads"] = int(threads)
                if backend == "serial":
                    # env steps per CPU-second of the one thread: what a free core would do, on a loaded
                    # machine too (wall-clock rates count the time other processes held the core)
                    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
                    extra["cpu_rates"] = [n / (b["cpu_time"] * unit[b.get("time_unit", "ns")]) for b in rows
                                          if b.get("cpu_time", 0) > 0]
                self.add(system, env, n, [b["items_per_second"] for b in rows], label, extra)

    # ---- bookkeeping ----

    def add(self, system, env, n, rates, label, extra=None):
        cell = {"system": system, "label": label, "env": env, "n": n, "status": "ok", "rates": rates,
                "summary": summarize(rates), "warmup_steps": compare_warmup_steps(n),
                "repeats": len(rates), "min_time_s": self.args.min_time, **(extra or {})}
        self.cells.append(cell)
        self.log(f"    {label:45s} {env:18s} N={human_n(n):>7s}  {human_rate(cell['summary']['median']):>7s} steps/s"
                 f"  (±{cell['summary']['spread_pct']:.1f}%)")

    def skip(self, system, env, n, note, not_in_build=False):
        sizes = self.args.sizes if n is None else [n]
        for size in sizes:
            cell = {"system": system, "label": SYSTEMS[system], "env": env, "n": size, "status": "skipped", "note": note}
            if not_in_build:
                cell["not_in_build"] = True  # a part this build left out (not a failure of --smoke)
            self.cells.append(cell)
        self.log(f"    {SYSTEMS[system]:45s} {env:18s} N={'all' if n is None else human_n(n):>7s}  skipped: {note}")

    # ---- Python baselines ----

    def python_baseline(self, system: str, env: str, missing: dict):
        spec = ENVS[env]
        if system.startswith("envpool") and not spec["envpool_id"]:
            return self.skip(system, env, None, "EnvPool has no MinAtar games")
        if system == "envpool_minus_one" and len(os.sched_getaffinity(0)) < 2:
            return  # one core: the same configuration as "envpool"
        if system == "minatar" and not spec["minatar"]:
            return
        if system == "gymnasium_numpy" and env != "CartPole-v1":
            return  # Gymnasium ships a NumPy vector env for CartPole only
        if system == "envpool_v5" and not spec.get("envpool_v5_id"):
            return  # the v5 row is the MuJoCo envs' only
        if system in missing:
            return self.skip(system, env, None, missing[system])
        per_env_step = build_per_env = None
        for n in getattr(self.args, "python_sizes", None) or self.args.sizes:
            if system == "gymnasium" and n != 1:
                continue
            warmup = compare_warmup_steps(n)
            if system == "gymnasium_async" and n > self.args.async_max_envs:
                self.skip(system, env, n, f"AsyncVectorEnv runs one process per env; N > {self.args.async_max_envs} "
                                          "(--async-max-envs) would swamp this machine's cores and memory")
                continue
            if per_env_step is not None:
                guess = predicted_seconds(per_env_step, n, warmup, self.args.repeats, self.args.min_time) + build_per_env * n
                if guess > self.args.budget:
                    self.skip(system, env, n, f"would take about {guess:.0f} s or more (over the --budget of "
                                              f"{self.args.budget:.0f} s per measurement)")
                    continue
            cmd = [self.args.python, str(Path(__file__).resolve()), "--worker", system, "--env", env, "--n", str(n),
                   "--warmup", str(warmup), "--repeats", str(self.args.repeats), "--min-time", str(self.args.min_time),
                   "--seed", "2026"]
            result, note = self.run_worker(cmd, self.args.budget * 2 + 60)
            if result is None:
                if note.startswith("not installed"):
                    missing[system] = note
                    return self.skip(system, env, None, note)
                self.skip(system, env, n, note)
                continue
            if "unavailable" in result:
                return self.skip(system, env, None, result["unavailable"])
            extra = {k: v for k, v in result.items() if k not in ("rates", "label")}
            self.add(system, env, n, result["rates"], result["label"], extra)
            per_env_step = 1.0 / max(result["rates"])
            # building N envs: only extrapolated from a big N (small ones are dominated by fixed costs)
            build_per_env = result.get("build_s", 0.0) / n if n >= 1024 else 0.0

    def run_worker(self, cmd: list[str], timeout: float):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"stopped after {timeout:.0f} s (the time limit of one measurement)"
        for line in proc.stdout.splitlines():
            if line.startswith("RESULT "):
                return json.loads(line[7:]), ""
            if line.startswith("MISSING "):
                module = json.loads(line[8:])["module"]
                return None, f"not installed: Python module '{module}' (pip install it to include this baseline)"
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        if proc.returncode < 0 or proc.returncode == 137:
            return None, f"the process was killed (signal {-proc.returncode}; out of memory?)"
        return None, f"failed: {tail[:200]}"

    # ---- training time ----

    def training_rows(self):
        a = self.args
        build = Path(a.build_dir)
        # ours: the Google Benchmark training binaries (5 seeds as repetitions inside)
        ppo = self.binary(build, "ppo_bench_openmp")
        off = self.binary(build, "offpolicy_bench_serial")
        rows = [(ppo, "ppo_cartpole_preset", "PPO CartPole-v1, time to 475", "rlkernels PPO (OpenMP, ppo_preset)"),
                (off, "sac_pendulum_10k", "SAC Pendulum-v1, 10k steps", "rlkernels SAC (serial, sac_preset, Eigen products)")]
        if a.with_blas:
            rows.append((self.binary(Path(a.blas_build_dir), "offpolicy_bench_serial"), "sac_pendulum_10k",
                         "SAC Pendulum-v1, 10k steps", "rlkernels SAC (serial, sac_preset, -DRLK_USE_BLAS=ON: OpenBLAS)"))
        for exe, row, task, system in rows:
            if not exe.exists():
                self.training.append({"task": task, "system": system, "status": "skipped", "note": f"{exe} not built"})
                continue
            self.log(f"  {exe.name} {row} ...")
            data = self.run_gbench(exe, [f"--benchmark_filter=^{row}/"], {"OPENBLAS_NUM_THREADS": "1"})
            runs = [b for b in data["benchmarks"] if b.get("run_type") == "iteration"]
            secs = [b["real_time"] / 1e3 for b in runs]  # ms -> s
            note = ""
            if row.startswith("ppo"):
                reached = sum(int(b.get("reached", 0)) for b in runs)
                note = f"{reached}/{len(runs)} reached 475"
            else:
                note = "eval return (100 episodes) " + ", ".join(f"{b.get('eval_return', float('nan')):.0f}" for b in runs)
            self.training.append({"task": task, "system": system, "status": "ok", "seconds": secs, "note": note,
                                  "raw": runs})
            self.log(f"    {system}: median {statistics.median(secs):.2f} s")
        # RLtools
        self.training.append({"task": "PPO CartPole-v1, time to 475", "system": "RLtools", "status": "skipped",
                              "note": "RLtools has no CartPole-v1 environment (its PPO examples are Pendulum, Ant and "
                                      "its own drone tasks)"})
        rl = self.rltools_command()
        if not rl.startswith("skip:") and not off.exists():
            rl = f"skip: {off} not built (it runs the RLtools program)"
        if rl.startswith("skip:"):
            self.training.append({"task": "SAC Pendulum-v1, 10k steps", "system": "RLtools", "status": "skipped",
                                  "note": rl[5:].strip()})
        else:
            self.log(f"  offpolicy_bench_serial rltools_sac_pendulum_10k ({rl}) ...")
            data = self.run_gbench(off, ["--benchmark_filter=^rltools_sac_pendulum_10k/"],
                                   {"RLK_RLTOOLS_SAC": rl, "OPENBLAS_NUM_THREADS": "1"})
            runs = [b for b in data["benchmarks"] if b.get("run_type") == "iteration" and not b.get("error_occurred")]
            if not runs:
                errors = [b.get("error_message", "") for b in data["benchmarks"] if b.get("error_occurred")]
                self.training.append({"task": "SAC Pendulum-v1, 10k steps", "system": "RLtools", "status": "skipped",
                                      "note": "its program failed: " + (errors[0] if errors else "no runs")})
            else:
                secs = [b["real_time"] / 1e3 for b in runs]
                system = rltools_system(runs[0].get("label", ""), package_versions().get("rltools"))
                self.training.append({"task": "SAC Pendulum-v1, 10k steps", "system": system, "status": "ok",
                                      "seconds": secs, "note": rltools_note(runs), "raw": runs})
                self.log(f"    RLtools: median {statistics.median(secs):.2f} s")
        # Stable-Baselines3
        for task, name, max_steps in [("ppo_cartpole", "PPO CartPole-v1, time to 475", a.sb3_ppo_max_steps),
                                      ("ppo_cartpole_rlk", "PPO CartPole-v1, time to 475", a.sb3_ppo_max_steps),
                                      ("sac_pendulum_10k", "SAC Pendulum-v1, 10k steps", 10000)]:
            sb3_system = "Stable-Baselines3" if task != "ppo_cartpole_rlk" else "Stable-Baselines3 + rlkernels.sb3 VecEnv"
            if a.sb3_seeds <= 0:
                self.training.append({"task": name, "system": sb3_system, "status": "skipped",
                                      "note": "--sb3-seeds 0"})
                continue
            secs, infos, note = [], [], ""
            for seed in range(1, a.sb3_seeds + 1):
                self.log(f"  Stable-Baselines3 {task} seed {seed} ...")
                cmd = [a.python, str(Path(__file__).resolve()), "--worker", "sb3", "--env", task, "--seed", str(seed),
                       "--max-steps", str(max_steps)]
                result, note = self.run_worker(cmd, a.sb3_timeout)
                if result is None:
                    break
                secs.append(result["seconds"])
                infos.append(result)
            if not secs:
                self.training.append({"task": name, "system": sb3_system, "status": "skipped", "note": note})
                continue
            threads = infos[0].get("torch_threads")
            if task.startswith("ppo_cartpole"):
                reached = sum(1 for r in infos if r["reached"])
                rollout = statistics.median(r["rollout_steps_per_s"] for r in infos)
                venv = ("DummyVecEnv of Gymnasium's CartPole" if task == "ppo_cartpole"
                        else "rlkernels.sb3.make_vec_env, serial backend")
                desc = (f"rl-zoo hyperparameters, 8 envs ({venv}), {reached}/{len(infos)} reached 475 within "
                        f"{max_steps} steps (a run that did not counts its whole time); SB3 rollout loop "
                        f"{human_rate(rollout)} env-steps/s")
            else:
                desc = "64-64, batch 100, lr 1e-3; eval return (20 episodes) " + ", ".join(f"{r['eval_return']:.0f}" for r in infos)
            self.training.append({"task": name, "system": f"{sb3_system} (PyTorch CPU, {threads} threads)",
                                  "status": "ok", "seconds": secs, "note": desc, "raw": infos})
            self.log(f"    SB3: median {statistics.median(secs):.2f} s")
        self.l2f_rows()
        order = {"PPO CartPole-v1, time to 475": 0, "SAC Pendulum-v1, 10k steps": 1, L2F_TASK: 2}
        self.training.sort(key=lambda r: order[r["task"]])

    def l2f_rows(self):
        """TD3 on the quadrotor (docs/quadrotor.md): ours (rlkernels_td3_l2f_serial, td3_preset) and
        RLtools' TD3 with the learning-to-fly paper's hyperparameters (our driver
        rltools_td3_l2f_train_reward on the rltools wheel's headers), both on the training reward, one
        thread each, --l2f-seeds seeds, one process at a time, the systems interleaved seed by seed
        (a change of the machine's load then falls on both)."""
        a = self.args
        seeds = getattr(a, "l2f_seeds", 0)
        bench = Path(a.build_dir) / "benchmarks"
        systems = []
        for name, system, extra in [
                ("rlkernels_td3_l2f_serial", "rlkernels TD3 (serial, td3_preset)", L2F_TRAIN_REWARD),
                ("rltools_td3_l2f_train_reward", "RLtools TD3 (learning-to-fly paper's hyperparameters; our driver on "
                 f"the headers of pip rltools {package_versions().get('rltools') or ''})".replace(" )", ")"), [])]:
            exe = bench / name
            if seeds <= 0:
                self.training.append({"task": L2F_TASK, "system": system, "status": "skipped", "note": "--l2f-seeds 0"})
            elif not exe.exists():
                how = " (pip install rltools, then re-run CMake)" if name.startswith("rltools") else ""
                self.training.append({"task": L2F_TASK, "system": system, "status": "skipped",
                                      "note": f"{exe} not built{how}"})
            else:
                systems.append((name, system, extra, exe, []))
        for seed in range(max(seeds, 0)):
            for name, system, extra, exe, runs in systems:
                self.log(f"  {name} seed {seed} ...")
                try:
                    out = subprocess.run([str(exe), str(seed), *extra], capture_output=True, text=True,
                                         timeout=a.l2f_timeout, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
                except subprocess.TimeoutExpired:
                    runs.append({"seed": seed, "flew": False, "error": f"stopped after {a.l2f_timeout:.0f} s"})
                    continue
                if getattr(a, "l2f_logs", None):  # the runs' output, for scripts/plot_seed_curves.py
                    Path(a.l2f_logs).mkdir(parents=True, exist_ok=True)
                    (Path(a.l2f_logs) / f"{name}_{seed}.txt").write_text(out.stdout)
                r = time_to_fly(out.stdout)
                r["seed"] = seed
                if out.returncode != 0 or r["evaluations"] == 0:
                    r["error"] = f"exit status {out.returncode}: {out.stderr.strip()[-200:]}"
                    r["flew"] = False
                runs.append(r)
        for name, system, extra, exe, runs in systems:
            row = l2f_row(system, runs)
            self.training.append(row)
            if row["status"] == "ok":
                self.log(f"    {system}: {len(row['seconds'])}/{seeds} flew, median {statistics.median(row['seconds']):.1f} CPU s")

    def rltools_command(self) -> str:
        """The RLtools program to time: --rltools-binary, else $RLK_RLTOOLS_SAC, else the build's driver."""
        a = self.args
        if a.rltools_binary:
            exe = Path(a.rltools_binary).expanduser()
            if not (exe.is_file() and os.access(exe, os.X_OK)):
                return f"skip: --rltools-binary {exe} is not an executable file"
            return shlex.quote(str(exe.resolve()))
        if os.environ.get("RLK_RLTOOLS_SAC"):
            return os.environ["RLK_RLTOOLS_SAC"]
        exe = self.binary(Path(a.build_dir), "rltools_sac_pendulum")
        if exe.exists():
            return shlex.quote(str(exe))
        return ("skip: not installed: pip install rltools (CMake then builds our driver "
                "benchmarks/rltools_sac_pendulum against its headers), or pass --rltools-binary PATH")

    # ---- everything ----

    def run(self):
        a = self.args
        build = Path(a.build_dir)
        missing: dict[str, str] = {}
        cuda_build = Path(a.cuda_build_dir) if a.cuda_build_dir else None
        gpu = bool(self.machine["gpus"])
        for env in a.envs:
            self.log(f"== {env}")
            if ENVS[env].get("mujoco"):
                # ours in float and double and MuJoCo's mj_step, from the same binary run
                double = ("BM_vec_env_step", ":double")
                self.ours(env, "serial", build, {"rlk_serial": "BM_vec_env_step", "rlk_serial_f64": double,
                                                 "mujoco_serial": "BM_mj_step"})
                self.ours(env, "openmp", build, {"rlk_openmp": "BM_vec_env_step", "rlk_openmp_f64": double,
                                                 "mujoco_openmp": "BM_mj_step"})
                if gpu and cuda_build:
                    self.ours(env, "cuda", cuda_build, {"rlk_cuda": "BM_vec_env_step", "rlk_cuda_f64": double})
            else:
                self.ours(env, "serial", build, {"rlk_serial": "BM_vec_env_step", "gym_style_cpp": "BM_virtual_gym_style"})
                self.ours(env, "openmp", build, {"rlk_openmp": "BM_vec_env_step"})
                if gpu and cuda_build:
                    self.ours(env, "cuda", cuda_build, {"rlk_cuda": "BM_vec_env_step",
                                                        "rlk_cuda_to_host": "BM_vec_env_step_to_host"})
            if not (gpu and cuda_build) and env == a.envs[0]:
                self.notes.append("rlkernels CUDA: " + ("no NVIDIA GPU on this machine (nvidia-smi found none)" if not gpu
                                                        else "no CUDA build (--cuda-build-dir)"))
            for system in PYTHON_SYSTEMS:
                if system in a.skip or (a.smoke and (env in ("Acrobot-v1", "Walker2d-v5", "HalfCheetah-v5",
                                                            "InvertedPendulum-v5", "InvertedDoublePendulum-v5",
                                                            "Swimmer-v5", "Reacher-v5")
                                                     or system == "envpool_minus_one")):
                    continue  # --smoke: each Python code path once, at N = 1 (CTest runs it in CI)
                self.python_baseline(system, env, missing)
        if not a.skip_training:
            self.log("== training time")
            self.training_rows()


def build_targets(args, machine) -> None:
    build = Path(args.build_dir)
    targets = sorted({f"{ENVS[e]['binary']}_{b}" for e in args.envs for b in ("serial", "openmp")})
    if not args.skip_training:
        targets += ["ppo_bench_openmp", "offpolicy_bench_serial"]
        if args.l2f_seeds > 0:
            targets.append("rlkernels_td3_l2f_serial")
    if not (build / "CMakeCache.txt").exists():
        if build.resolve() != (ROOT / "build/default").resolve():
            raise SystemExit(f"compare.py: {build} is not a configured build directory (or use --build-dir build/default)")
        subprocess.run(["cmake", "--preset", "default"], cwd=ROOT, check=True)
    print(f"== building {' '.join(targets)}", flush=True)
    subprocess.run(["cmake", "--build", str(build), "--target", *targets], cwd=ROOT, check=True)
    if not args.skip_training and args.l2f_seeds > 0:  # built only where CMake found RLtools' headers
        subprocess.run(["cmake", "--build", str(build), "--target", "rltools_td3_l2f_train_reward"], cwd=ROOT,
                       check=False, capture_output=True)
    if args.with_blas and not args.skip_training:
        blas = Path(args.blas_build_dir)
        if not (blas / "CMakeCache.txt").exists():
            subprocess.run(["cmake", "--preset", "default", "-B", str(blas), "-DRLK_USE_BLAS=ON"], cwd=ROOT, check=True)
        subprocess.run(["cmake", "--build", str(blas), "--target", "offpolicy_bench_serial"], cwd=ROOT, check=True)
    if machine["gpus"] and args.cuda_build_dir:
        cuda = Path(args.cuda_build_dir)
        if not (cuda / "CMakeCache.txt").exists():
            subprocess.run(["cmake", "--preset", "cuda", "-DCMAKE_CUDA_ARCHITECTURES=native", "-B", str(cuda)], cwd=ROOT,
                           check=True)
        cuda_targets = sorted({f"{ENVS[e]['binary']}_cuda" for e in args.envs})
        subprocess.run(["cmake", "--build", str(cuda), "--target", *cuda_targets], cwd=ROOT, check=True)


def plot(env: str, cells: list[dict], machine: dict, path: Path) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plots (pip install matplotlib or apt-get install python3-matplotlib)"
    fig, ax = plt.subplots(figsize=(10.0, 5.0))
    styles = {"rlk_": dict(lw=2.2), "gym_style_cpp": dict(ls="--"), "": dict(ls=":")}
    for system in SYSTEMS:
        pts = sorted((c["n"], c["summary"]) for c in cells
                     if c["env"] == env and c["system"] == system and c["status"] == "ok")
        if not pts:
            continue
        label = next(c["label"] for c in cells if c["env"] == env and c["system"] == system and c["status"] == "ok")
        xs = [p[0] for p in pts]
        ys = [p[1]["median"] for p in pts]
        err = [[p[1]["median"] - p[1]["min"] for p in pts], [p[1]["max"] - p[1]["median"] for p in pts]]
        style = styles["rlk_"] if system.startswith("rlk_") else styles.get(system, styles[""])
        marker = "*" if len(xs) == 1 else "o"  # systems measured at one N (Gymnasium's single env)
        ax.errorbar(xs, ys, yerr=err, marker=marker, ms=9 if marker == "*" else 4, capsize=2, label=label, **style)
    ax.set_xscale("log", base=2)
    sizes = sorted({c["n"] for c in cells if c["env"] == env})
    ax.set_xticks(sizes, [human_n(n) for n in sizes])
    ax.set_yscale("log")
    ax.set_xlabel("number of parallel envs N")
    ax.set_ylabel("env-steps per second (median, min-max bars)")
    ax.set_title(f"{env}: random policy, env-steps/s")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.text(0.01, 0.005, f"{machine_line(machine)}; {machine['date']}; rlkernels {machine['commit']}", fontsize=7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def slug(env: str) -> str:
    return env.lower().replace("/", "-")


def report_markdown(r: Runner, machine: dict, versions: dict, command: str, image_dir: str) -> str:
    a = r.args
    lines = [f"Measured {machine['date']} on {machine_line(machine)} ({machine['os']}), rlkernels {machine['commit']}, "
             f"with `{command}`.",
             "Packages: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v) + ".",
             f"Env-steps per second, median of {a.repeats} repeats of at least {a.min_time:g} s each, after a warm-up "
             "of `compare_warmup_steps(N)` steps; ±x% is half the min-max range of the repeats. "
             "Random uniform actions; observations in host memory (device memory for the CUDA row).", ""]
    for note in r.notes:
        lines.append(f"- {note}")
    if r.notes:
        lines.append("")
    lines += ["### Summary", "", markdown_summary(r.cells), ""]
    for env in a.envs:
        lines += [f"### {env}", "", markdown_env_table(env, r.cells, a.sizes), ""]
        per_core = markdown_per_core(env, r.cells, a.sizes) if ENVS[env].get("mujoco") else ""
        if per_core:
            lines += [per_core, ""]
        lines += [f"![{env}: env-steps/s against N]({image_dir}/{slug(env)}.png)", ""]
    if r.training:
        lines += ["### Training time", "", markdown_training(r.training), ""]
    return "\n".join(lines)


def stored_run_sections(stored: Path = ROOT / "docs/compare", image_dir: str = "compare") -> str:
    """docs/benchmarks.md's sections of the separate runs stored in docs/compare/ (every
    *results.json but the full run's results.json that is still the newest run of one of its envs):
    each run's full report, as --report-only renders it, under a heading naming its envs."""
    import types
    runs = {f.name: json.loads(f.read_text()) for f in sorted(stored.glob("*results.json"))}
    current = {id(r) for r in newest_runs_per_env(list(runs.values())).values()}
    parts = []
    for name, run in sorted(runs.items(), key=lambda kv: kv[1]["machine"]["date"]):
        if name == "results.json" or id(run) not in current:
            continue
        envs = [e for e in ENVS if any(c["env"] == e for c in run["cells"])]
        st = run["settings"]
        runner = types.SimpleNamespace(
            args=types.SimpleNamespace(envs=envs, sizes=st["sizes"], repeats=st["repeats"], min_time=st["min_time_s"]),
            cells=run["cells"], training=run.get("training", []),
            notes=[n for n in run.get("notes", []) if not n.startswith("matplotlib")])
        body = report_markdown(runner, run["machine"], run["packages"], run["command"], image_dir)
        body = re.sub(r"^### ", "#### ", body, flags=re.M)
        parts += [f"### {', '.join(envs)} (run of {run['machine']['date'].split(' ')[0]})", "",
                  f"Raw data: [compare/{name}](compare/{name}).", "", body]
    return "\n".join(parts)


def write_stored_runs(bench: Path = ROOT / "docs/benchmarks.md") -> None:
    """Writes stored_run_sections() between docs/benchmarks.md's compare.py:runs markers."""
    bench.write_text(replace_between(bench.read_text(), "<!-- compare.py:runs:begin -->",
                                     "<!-- compare.py:runs:end -->", stored_run_sections()))


def write_front_page(readme: Path = ROOT / "README.md", stored: Path = ROOT / "docs/compare") -> None:
    """Writes README.md's performance section from the runs stored in docs/compare/ (*results.json):
    front_page_summary's table, and the training-time table of the newest run that has one."""
    runs = [json.loads(f.read_text()) for f in sorted(stored.glob("*results.json"))]
    if not runs:
        raise ValueError(f"no stored runs (*results.json) in {stored}")
    lines = ["Env-steps per second of random-action envs (observations in host memory), the best median of "
             "each system over the run's batch sizes N, and our speed-ups; each row comes from the stored run its letter names. "
             "Every table, plot and the method: [docs/benchmarks.md](docs/benchmarks.md#comparison-with-cpu-baselines).",
             "", front_page_summary(runs), ""]
    trained = [r for r in runs if r.get("training")]
    if trained:
        run = max(trained, key=lambda r: r["machine"]["date"])
        lines += [f"Training time ({run['machine']['date'].split(' ')[0]}, same machine, `{run['command']}`):", "",
                  markdown_training(run["training"]), ""]
    lines += ["Regenerate with `python3 benchmarks/compare.py --write-docs` (a new run) or `--front-page` "
              "(this section from the runs stored in docs/compare/)."]
    readme.write_text(replace_between(readme.read_text(), "<!-- compare.py:summary:begin -->",
                                      "<!-- compare.py:summary:end -->", "\n".join(lines)))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="See the module docstring and docs/benchmarks.md.",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", default=",".join(ENVS), help="comma-separated, from: " + ", ".join(ENVS))
    p.add_argument("--sizes", default=",".join(map(str, ALL_SIZES)), help="batch sizes N (default %(default)s)")
    p.add_argument("--repeats", type=int, default=5, help="timed repeats per measurement (default 5)")
    p.add_argument("--min-time", type=float, default=0.5, help="seconds per repeat, at least (default 0.5)")
    p.add_argument("--budget", type=float, default=90.0,
                   help="skip a Python-baseline measurement predicted to take longer than this many seconds (default 90)")
    p.add_argument("--async-max-envs", type=int, default=16,
                   help="largest N for Gymnasium's AsyncVectorEnv (one process per env; default 16)")
    p.add_argument("--mujoco-max-envs", type=int, default=4096,
                   help="largest N of the MuJoCo envs' C++ rows, ours and mj_step (default %(default)s; the Python "
                        "baselines keep to --budget)")
    p.add_argument("--skip", default="", help="comma-separated systems to leave out: " + ", ".join(PYTHON_SYSTEMS))
    p.add_argument("--quick", action="store_true", help="3 repeats of 0.2 s, N up to 65536, 2 SB3 and 2 L2F seeds")
    p.add_argument("--smoke", action="store_true",
                   help="seconds-long check of the whole pipeline: ours at N=1,16, each Python baseline's code "
                        "path once at N=1, tiny timings, no training rows")
    p.add_argument("--build-dir", default=str(ROOT / "build/default"), help="host build (default build/default)")
    p.add_argument("--cuda-build-dir", default=str(ROOT / "build/compare-cuda"),
                   help="CUDA build, used when a GPU is present (default build/compare-cuda)")
    p.add_argument("--no-build", action="store_true", help="use the binaries already built")
    p.add_argument("--out-dir", default=str(ROOT / "build/compare"), help="results.json, results.md and plots")
    p.add_argument("--write-docs", action="store_true",
                   help="also write the tables and plots into docs/benchmarks.md, docs/compare/ and README.md")
    p.add_argument("--report-only", metavar="RESULTS_JSON",
                   help="re-render the tables, plots (and with --write-docs the docs) of an earlier run's results.json")
    p.add_argument("--front-page", action="store_true",
                   help="only re-render README.md's performance section and docs/benchmarks.md's separate runs "
                        "from the runs stored in docs/compare/")
    p.add_argument("--python", default=sys.executable, help="interpreter for the Python baselines")
    p.add_argument("--skip-training", action="store_true", help="leave out the training-time rows")
    p.add_argument("--sb3-seeds", type=int, default=5, help="seeds of each Stable-Baselines3 row (default 5; 0 = none)")
    p.add_argument("--sb3-ppo-max-steps", type=int, default=100000,
                   help="SB3 PPO CartPole's total_timesteps (default 100000, rl-zoo's; its lr and clip anneal over it)")
    p.add_argument("--sb3-timeout", type=float, default=900, help="seconds per SB3 run before it is stopped")
    p.add_argument("--l2f-seeds", type=int, default=10,
                   help="seeds of the TD3 L2F-Crazyflie-v0 rows, ours and RLtools' (default 10; 0 = none; "
                        "about 2 CPU minutes per seed and system)")
    p.add_argument("--l2f-timeout", type=float, default=1200, help="seconds per L2F training run before it is stopped")
    p.add_argument("--l2f-logs", metavar="DIR",
                   help="keep each L2F run's output as DIR/<program>_<seed>.txt (scripts/plot_seed_curves.py draws them)")
    p.add_argument("--with-blas", action="store_true",
                   help="add our SAC row built with -DRLK_USE_BLAS=ON (needs a BLAS, e.g. libopenblas-dev)")
    p.add_argument("--blas-build-dir", default=str(ROOT / "build/blas"), help="that build (default build/blas)")
    p.add_argument("--rltools-binary", default=None, metavar="PATH",
                   help="a program that trains RLtools' SAC on Pendulum-v1 for 10k steps once (default: the "
                        "build's rltools_sac_pendulum, built when pip install rltools has installed RLtools' headers)")
    # worker mode (internal)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--env", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--warmup", type=int, help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=2026, help=argparse.SUPPRESS)
    p.add_argument("--max-steps", type=int, default=200000, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return run_worker(args)
    if args.front_page:
        write_front_page()
        write_stored_runs()
        print("== updated README.md's performance section and docs/benchmarks.md's separate runs "
              "from docs/compare/*results.json")
        return 0

    if args.quick:
        args.repeats, args.min_time, args.sb3_seeds = 3, 0.2, min(args.sb3_seeds, 2)
        args.l2f_seeds = min(args.l2f_seeds, 2)
        args.sizes = ",".join(s for s in args.sizes.split(",") if int(s) <= 65536)
    if args.smoke:
        args.repeats, args.min_time, args.budget = 2, 0.02, 10.0
        args.sizes, args.skip_training, args.async_max_envs = "1,16", True, 1
        args.python_sizes = [1]
    args.envs = [e.strip() for e in args.envs.split(",") if e.strip()]
    for e in args.envs:
        if e not in ENVS:
            p.error(f"--envs: unknown env {e!r}; choose from {', '.join(ENVS)}")
    try:
        args.sizes = sorted({int(s) for s in str(args.sizes).split(",")})
    except ValueError:
        p.error(f"--sizes: {args.sizes!r} is not a comma-separated list of integers")
    if not args.sizes or args.sizes[0] < 1:
        p.error("--sizes: batch sizes must be positive")
    if args.repeats < 1 or not args.min_time > 0:
        p.error("--repeats must be >= 1 and --min-time > 0")
    args.skip = [s.strip() for s in args.skip.split(",") if s.strip()]
    for s in args.skip:
        if s not in PYTHON_SYSTEMS:
            p.error(f"--skip: unknown system {s!r}; choose from {', '.join(PYTHON_SYSTEMS)}")

    if args.report_only:
        # re-render the tables, plots and docs of an earlier run; nothing is measured
        saved = json.loads(Path(args.report_only).read_text())
        machine, versions, command, elapsed = saved["machine"], saved["packages"], saved["command"], saved["elapsed_s"]
        settings = saved["settings"]
        args.sizes, args.repeats, args.min_time = settings["sizes"], settings["repeats"], settings["min_time_s"]
        args.budget, args.async_max_envs = settings["budget_s"], settings["async_max_envs"]
        args.envs = [e for e in ENVS if any(c["env"] == e for c in saved["cells"])]
        runner = Runner(args)
        runner.machine = machine
        runner.cells, runner.training = saved["cells"], saved["training"]
        runner.notes = [n for n in saved["notes"] if not n.startswith("matplotlib")]
    else:
        machine = machine_description()
        versions = package_versions()
        if not args.no_build:
            build_targets(args, machine)
        runner = Runner(args)
        runner.machine = machine
        print(f"== {machine_line(machine)}; load average {machine['load_avg_at_start']}", flush=True)
        started = time.perf_counter()
        runner.run()
        elapsed = time.perf_counter() - started
        command = "python3 benchmarks/compare.py " + " ".join(a for a in (argv if argv is not None else sys.argv[1:])
                                                             if a != "--write-docs")
        command = command.strip()

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = {"machine": machine, "packages": versions, "command": command, "elapsed_s": elapsed,
               "settings": {"sizes": args.sizes, "repeats": args.repeats, "min_time_s": args.min_time,
                            "budget_s": args.budget, "warmup_rule": "max(8, min(128, 2^20 // N)) steps",
                            "async_max_envs": args.async_max_envs},
               "notes": runner.notes, "cells": runner.cells, "training": runner.training}
    (out / "results.json").write_text(json.dumps(results, indent=1))
    plot_notes = []
    for env in args.envs:
        note = plot(env, runner.cells, machine, out / f"{slug(env)}.png")
        if note:
            plot_notes.append(note)
            break
    runner.notes += plot_notes
    md = report_markdown(runner, machine, versions, command, ".")
    (out / "results.md").write_text(md + "\n")
    print(f"\n{md}\n\n== wrote {out}/results.json, results.md and plots (measuring took {elapsed:.0f} s)", flush=True)

    if args.write_docs:
        docs_img = ROOT / "docs/compare"
        docs_img.mkdir(parents=True, exist_ok=True)
        for env in args.envs:
            if (out / f"{slug(env)}.png").exists():
                shutil.copyfile(out / f"{slug(env)}.png", docs_img / f"{slug(env)}.png")
        # A run of every env but the MuJoCo ones (the default run's) is docs/compare/results.json and
        # docs/benchmarks.md's generated section; any other run is kept beside it under its envs' names.
        full = all(e in args.envs for e in ENVS if not ENVS[e].get("mujoco"))
        stored = docs_img / ("results.json" if full else "_".join(slug(e) for e in args.envs) + "_results.json")
        if not (stored.exists() and args.report_only and stored.samefile(args.report_only)):
            shutil.copyfile(out / "results.json", stored)
        if full:
            bench = ROOT / "docs/benchmarks.md"
            bench.write_text(replace_between(bench.read_text(), "<!-- compare.py:begin -->", "<!-- compare.py:end -->",
                                             report_markdown(runner, machine, versions, command, "compare")))
        else:
            print(f"== the tables of this run are in {out}/results.md (docs/benchmarks.md's section is the full run's)")
        write_front_page()
        write_stored_runs()
        print(f"== updated {stored.relative_to(ROOT)}, docs/compare/*.png{', docs/benchmarks.md' if full else ''} "
              "and README.md", flush=True)
    if args.smoke:
        # the pipeline check CTest runs: every row of ours must have been measured
        ours = ("rlk_serial", "rlk_openmp", "rlk_serial_f64", "rlk_openmp_f64", "gym_style_cpp", "mujoco_serial",
                "mujoco_openmp")
        bad = [c for c in runner.cells
               if c["system"] in ours and c["status"] != "ok" and not c.get("not_in_build")]
        if bad:
            print(f"compare.py --smoke: {len(bad)} of our rows were not measured, e.g. {bad[0]}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
