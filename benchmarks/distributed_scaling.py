#!/usr/bin/env python3
"""PPO data-parallel scaling on this machine: 1 process against 2 MPI ranks, for every PPO preset.

Each rank runs the serial backend (one thread) with the preset's --num-envs envs, so 2 ranks step
twice the envs of 1 process (weak scaling, as data-parallel training is used: every GPU or core
brings its own envs). Runs alternate (1, 2, 1, 2, ...) so that a busy machine slows both alike.
Prints a Markdown table: env steps/s, updates/s (one update = one optimiser step of the whole job),
the speed-up of 2 ranks, and rank 0's time inside the collectives per iteration and as a share.
It also prints the gradient each preset all-reduces and, from that, the scaling model of
docs/distributed.md (bytes per iteration and their time on NVLink, InfiniBand and Ethernet).

    python3 benchmarks/distributed_scaling.py [--build build/default] [--repeats 2]

Needs Open MPI's mpirun (as root, it sets OMPI_ALLOW_RUN_AS_ROOT) and train_ppo built with MPI.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

# (env, total env steps per run): a few seconds of training each on one core.
PRESETS = [
    ("CartPole-v1", 200_000),
    ("Acrobot-v1", 65_536),
    ("Pendulum-v1", 32_768),
    ("HalfCheetah-v5", 8_192),
    ("Hopper-v5", 16_384),
    ("Walker2d-v5", 16_384),
]

TRAINED = re.compile(r"trained (\d+) env steps and (\d+) gradient steps in ([0-9.]+) s")
COMM = re.compile(r"communication \(MPI, rank 0 of \d+\): (\d+) collectives, ([0-9.]+) MB sent, ([0-9.]+) s")
GRADIENT = re.compile(r"gradient: (\d+) values \((\d+) bytes\) all-reduced (\d+) times per iteration")
SETTINGS = re.compile(r": (\d+) envs x (\d+) steps, (\d+) minibatches x (\d+) epochs")


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}\n{out.stderr}")
    return out.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/default")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--mpirun", default="mpirun")
    args = ap.parse_args()
    exe = os.path.join(args.build, "examples", "train_ppo")
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    rows, model = [], []
    for name, steps in PRESETS:
        base = [exe, "--env", name, "--backend", "serial", "--total-steps", str(steps), "--quiet", "--no-plot",
                "--eval-episodes", "0", "--out", "/tmp/rlk_distributed_scaling"]
        one, two = [], []
        grad = settings = None
        for _ in range(args.repeats):
            out = run(base, env)
            m = TRAINED.search(out)
            one.append((int(m[1]), int(m[2]), float(m[3])))
            out = run([args.mpirun, "-np", "2"] + base, env)
            m, c, g = TRAINED.search(out), COMM.search(out), GRADIENT.search(out)
            settings = SETTINGS.search(out)
            grad = g
            iterations = int(m[1]) // (2 * int(settings[1]) * int(settings[2]))
            two.append((int(m[1]), int(m[2]), float(m[3]), float(c[3]), iterations))
        sps1 = statistics.median(s / t for s, _, t in one)
        ups1 = statistics.median(u / t for _, u, t in one)
        sps2 = statistics.median(s / t for s, _, t, _, _ in two)
        ups2 = statistics.median(u / t for _, u, t, _, _ in two)
        comm_ms = statistics.median(1e3 * c / i for _, _, _, c, i in two)
        share = statistics.median(100 * c / t for _, _, t, c, _ in two)
        rows.append((name, sps1, sps2, ups1, ups2, comm_ms, share))
        model.append((name, int(grad[1]), int(grad[2]), int(grad[3])))
        print(f"{name}: done", file=sys.stderr)

    print("| preset | env steps/s, 1 process | 2 ranks | speed-up | updates/s, 1 process | 2 ranks | "
          "rank 0 in collectives per iteration | share of training |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, sps1, sps2, ups1, ups2, comm_ms, share in rows:
        print(f"| {name} | {sps1:,.0f} | {sps2:,.0f} | {sps2 / sps1:.2f}x | {ups1:,.0f} | {ups2:,.0f} | "
              f"{comm_ms:.2f} ms | {share:.1f} % |")

    print()
    print_model(model)


# (ranks, link, bus bandwidth in bytes/s, latency per step in s): round figures for NCCL's bus
# bandwidth, not measurements. 8 ranks in one NVLink machine or over 8 machines; 64 over 8 machines.
CASES = [(8, "8 GPUs, NVLink 4", 350e9, 3e-6), (8, "8 machines, InfiniBand NDR", 45e9, 5e-6),
         (64, "64 GPUs, InfiniBand NDR", 45e9, 5e-6), (64, "64 GPUs, Ethernet 25 Gb/s", 2.8e9, 30e-6)]


def print_model(model):
    """The scaling model: per iteration, U all-reduces of G bytes. Ring all-reduce (native): each
    rank sends and receives 2 (R - 1) / R * G bytes per all-reduce, in 2 (R - 1) latency steps
    (pessimistic for small messages: NCCL's tree algorithm and LL protocols take fewer); the
    ordered reduction (an all-gather): (R - 1) * G bytes in R - 1 steps."""
    print("| preset | gradient | all-reduces per iteration | " +
          " | ".join(f"{name}: native / ordered" for _, name, _, _ in CASES) + " |")
    print("| --- | ---: | ---: | " + " | ".join("---:" for _ in CASES) + " |")
    for name, values, nbytes, per_iter in model:
        cells = []
        for ranks, _, bandwidth, latency in CASES:
            ring = per_iter * (2 * (ranks - 1) / ranks * nbytes / bandwidth + 2 * (ranks - 1) * latency)
            ordered = per_iter * ((ranks - 1) * nbytes / bandwidth + (ranks - 1) * latency)
            cells.append(f"{fmt(ring)} / {fmt(ordered)}")
        print(f"| {name} | {values:,} ({nbytes / 1e3:.0f} kB) | {per_iter} | " + " | ".join(cells) + " |")


def fmt(seconds):
    return f"{1e3 * seconds:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


if __name__ == "__main__":
    main()
