#!/usr/bin/env python3
"""Plots a learning curve CSV written by rlkernels' training examples (train_ppo, train_dqn,
train_sac, train_td3; examples/training_ui.hpp) as a PNG.

usage: plot_learning_curve.py CURVE.csv OUT.png [TITLE]

The CSV needs the columns global_step and mean_return_100 (rows where it is nan, before the first
episode, are skipped); other columns (each algorithm's losses) are ignored. elapsed_s, if present,
puts the wall-clock seconds in the title. Exits with status 3 when matplotlib is missing, so callers
can try another interpreter.
"""
import csv
import math
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_learning_curve.py: matplotlib is not installed "
              "(sudo apt-get install python3-matplotlib)", file=sys.stderr)
        return 3
    steps, returns, seconds = [], [], []
    with open(argv[1], newline="") as f:
        for row in csv.DictReader(f):
            r = float(row["mean_return_100"])
            if math.isnan(r):
                continue
            steps.append(int(row["global_step"]))
            returns.append(r)
            seconds.append(float(row.get("elapsed_s", "nan")))
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    ax.plot(steps, returns, color="tab:blue", linewidth=1.6)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean return (last 100 episodes)")
    ax.grid(alpha=0.3)
    title = argv[3] if len(argv) > 3 else "learning curve"
    if seconds and not math.isnan(seconds[-1]):
        title += f" - {steps[-1]:,} steps in {seconds[-1]:.1f} s"
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
