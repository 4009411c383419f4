#!/usr/bin/env python3
"""Plots learning-to-fly's settling fraction against env steps, one line per seed and one panel per
system, from the outputs of benchmarks/algorithms/rlkernels_td3_l2f.cpp and rltools_sac_l2f.cpp (their
"eval:" lines; docs/quadrotor.md), with the 0.9 threshold of "flies".

usage: plot_l2f_settling.py OUT.png TITLE LABEL=LOG[,LOG...] [LABEL=LOG[,LOG...] ...]

e.g. plot_l2f_settling.py docs/training/td3_l2f.png "TD3 on L2F-Crazyflie-v0, 10 seeds" \\
         "rlkernels TD3=runs/ours_0.txt,runs/ours_1.txt" "RLtools TD3=runs/rlt_0.txt"

Exits with status 3 when matplotlib is missing.
"""
import sys


def read_evaluations(path):
    steps, settling = [], []
    with open(path) as f:
        for line in f:
            t = line.split()
            if not t or t[0] != "eval:":
                continue
            d = {t[i]: float(t[i + 1]) for i in range(1, len(t) - 1, 2)}
            steps.append(int(d["env_steps"]))
            settling.append(d["settling_fraction"])
    return steps, settling


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_l2f_settling.py: matplotlib is not installed (sudo apt-get install python3-matplotlib)",
              file=sys.stderr)
        return 3
    out, title, panels = argv[1], argv[2], argv[3:]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.0), sharey=True, squeeze=False)
    for ax, spec in zip(axes[0], panels):
        label, _, logs = spec.partition("=")
        for i, path in enumerate(p for p in logs.split(",") if p):
            steps, settling = read_evaluations(path)
            ax.plot([s / 1000 for s in steps], settling, linewidth=1.0, alpha=0.8, label=f"seed {i}")
        ax.axhline(0.9, color="black", linestyle="--", linewidth=0.8)
        ax.set_title(label)
        ax.set_xlabel("env steps (thousands)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("settling fraction (100 episodes)")
    axes[0][-1].legend(fontsize=7, ncol=2, loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
