#!/usr/bin/env python3
"""Plots the learning curves of several seeds per env side by side (one panel per env), from the
CSV files the training examples write (examples/training_ui.hpp: columns global_step and
mean_return_100), with an optional target line per env.

usage: plot_seed_curves.py OUT.png TITLE ENV[@TARGET]=CSV[,CSV...] [ENV[@TARGET]=CSV[,CSV...] ...]

e.g. plot_seed_curves.py docs/training/ppo_mujoco.png "PPO, 5 seeds" \\
         "HalfCheetah-v5@2900=runs/hc1.csv,runs/hc2.csv" "Hopper-v5@1200=runs/h1.csv"

Exits with status 3 when matplotlib is missing.
"""
import csv
import math
import os
import sys


def read_curve(path):
    steps, returns = [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            r = float(row["mean_return_100"])
            if not math.isnan(r):
                steps.append(int(row["global_step"]))
                returns.append(r)
    return steps, returns


def main(argv):
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
        for i, path in enumerate(files.split(",")):
            steps, returns = read_curve(path)
            ax.plot(steps, returns, linewidth=1.2, label=f"seed {i + 1}")
        if target is not None:
            ax.axhline(target, color="gray", linestyle="--", linewidth=1, label=f"target {target:g}")
        ax.set_title(name)
        ax.set_xlabel("environment steps")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    axes[0][0].set_ylabel("mean return, last 100 training episodes")
    fig.suptitle(title)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out)
    print("wrote", out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
