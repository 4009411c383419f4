#!/usr/bin/env python3
"""Plots the learning curves of several seeds per env side by side (one panel per env), from the
CSV files the training examples write (examples/training_ui.hpp: columns global_step and
mean_return_100), with an optional target line per env. A file that is not such a CSV is read as
the output of the quadrotor drivers (benchmarks/algorithms/rlkernels_td3_l2f.cpp, rltools_sac_l2f.cpp:
their "eval:" lines), and its curve is learning-to-fly's settling fraction (docs/quadrotor.md).

usage: plot_seed_curves.py [--minutes] OUT.png TITLE ENV[@TARGET]=FILE[,FILE...] [ENV[@TARGET]=FILE[,FILE...] ...]

--minutes draws the training CSVs against wall-clock minutes (their elapsed_s column) instead of
environment steps.

e.g. plot_seed_curves.py docs/training/ppo_mujoco.png "PPO, 5 seeds" \\
         "HalfCheetah-v5@2900=runs/hc1.csv,runs/hc2.csv" "Hopper-v5@1200=runs/h1.csv"
     plot_seed_curves.py docs/training/td3_l2f.png "TD3 on L2F-Crazyflie-v0" \\
         "rlkernels TD3@0.9=runs/ours_0.txt,runs/ours_1.txt" "RLtools TD3@0.9=runs/rlt_0.txt"

Exits with status 3 when matplotlib is missing.
"""
import csv
import math
import os
import re
import sys

RETURN_LABEL = "mean return, last 100 training episodes"
SETTLING_LABEL = "settling fraction (100 episodes)"


def read_curve(path, index, minutes=False):
    """(steps, values, seed label, y label) of a training CSV or of a quadrotor driver's output;
    with `minutes`, a training CSV's x values are its wall-clock minutes instead of its steps."""
    with open(path, newline="") as f:
        text = f.read()
    if text.split("\n", 1)[0].split(",").count("mean_return_100"):
        steps, returns = [], []
        for row in csv.DictReader(text.splitlines()):
            r = float(row["mean_return_100"])
            if not math.isnan(r):
                steps.append(float(row["elapsed_s"]) / 60.0 if minutes else int(row["global_step"]))
                returns.append(r)
        return steps, returns, f"seed {index + 1}", RETURN_LABEL
    steps, settling = [], []
    for line in text.splitlines():
        t = line.split()
        if t and t[0] == "eval:":
            d = {t[i]: float(t[i + 1]) for i in range(1, len(t) - 1, 2)}
            steps.append(int(d["env_steps"]))
            settling.append(d["settling_fraction"])
    seed = re.search(r"\bseed (\d+)", text)
    return steps, settling, f"seed {seed.group(1) if seed else index + 1}", SETTLING_LABEL


def main(argv):
    minutes = len(argv) > 1 and argv[1] == "--minutes"
    if minutes:
        argv = argv[:1] + argv[2:]
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_seed_curves.py: matplotlib is not installed (sudo apt-get install python3-matplotlib)",
              file=sys.stderr)
        return 3
    out, title, panels = argv[1], argv[2], argv[3:]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8), dpi=110, squeeze=False)
    for ax, spec in zip(axes[0], panels):
        name, files = spec.split("=", 1)
        target = None
        if "@" in name:
            name, t = name.split("@", 1)
            target = float(t)
        for i, path in enumerate(p for p in files.split(",") if p):
            steps, values, label, ylabel = read_curve(path, i, minutes)
            ax.plot(steps, values, linewidth=1.2, label=label)
        if target is not None:
            ax.axhline(target, color="gray", linestyle="--", linewidth=1, label=f"target {target:g}")
        ax.set_title(name)
        ax.set_xlabel("wall-clock minutes" if minutes else "environment steps")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    axes[0][0].set_ylabel(ylabel)
    fig.suptitle(title)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out)
    print("wrote", out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
