#!/usr/bin/env python3
"""Data-parallel scaling on this machine: 1 process against 2 MPI ranks, for every PPO preset and
the SAC, TD3 and DQN presets.

Each rank runs the serial backend (one thread) with the preset's --num-envs envs, so 2 ranks step
twice the envs of 1 process (weak scaling, as data-parallel training is used: every GPU or core
brings its own envs). Runs alternate (1, 2, 1, 2, ...) so that a busy machine slows both alike.
Prints a Markdown table: env steps/s, updates/s (one update = one optimiser step of the whole job),
the speed-up of 2 ranks, and rank 0's time inside the collectives per iteration and as a share.
It also prints the gradient each preset all-reduces and, from that, the scaling model of
docs/distributed.md (bytes per iteration and their time on NVLink, InfiniBand and Ethernet).

    python3 benchmarks/distributed_scaling.py [--build build/default] [--repeats 2] [--only ppo|offpolicy]

The off-policy trainers take one update per env step of each rank's envs (the presets'
gradient_steps); with 2 ranks each update's batch is twice as large, sampled half from each
rank's replay buffer.

Needs Open MPI's mpirun (as root, it sets OMPI_ALLOW_RUN_AS_ROOT) and the train_* examples built
with MPI.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

# (trainer, env, total env steps per run): a few seconds of training each on one core.
OFFPOLICY = [
    ("train_sac", "Pendulum-v1", 4_000),
    ("train_td3", "Pendulum-v1", 6_000),
    ("train_dqn", "CartPole-v1", 20_000),
]

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
ENVS = re.compile(r"seed \d+: (\d+) envs")
UPDATE = re.compile(r"gradient per update: (\d+) values \((\d+) bytes\) in ([0-9.]+) all-reduces")


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
    ap.add_argument("--only", choices=["ppo", "offpolicy"])
    args = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    if args.only != "offpolicy":
        ppo_scaling(args, env)
    if args.only != "ppo":
        offpolicy_scaling(args, env)


def measure(args, env, base, iterations_of):
    """Alternating runs of `base` alone and under mpirun -np 2: the medians of env steps/s and
    updates/s of each, and rank 0's collective time per iteration and share of the training time
    (iterations_of(output, env steps) gives the iterations of the 2-rank run)."""
    one, two = [], []
    out2 = ""
    for _ in range(args.repeats):
        out = run(base, env)
        m = TRAINED.search(out)
        one.append((int(m[1]), int(m[2]), float(m[3])))
        out2 = run([args.mpirun, "-np", "2"] + base, env)
        m, c = TRAINED.search(out2), COMM.search(out2)
        two.append((int(m[1]), int(m[2]), float(m[3]), float(c[3]), iterations_of(out2, int(m[1]))))
    sps1 = statistics.median(s / t for s, _, t in one)
    ups1 = statistics.median(u / t for _, u, t in one)
    sps2 = statistics.median(s / t for s, _, t, _, _ in two)
    ups2 = statistics.median(u / t for _, u, t, _, _ in two)
    comm_ms = statistics.median(1e3 * c / i for _, _, _, c, i in two)
    share = statistics.median(100 * c / t for _, _, t, c, _ in two)
    return (sps1, sps2, ups1, ups2, comm_ms, share), out2


def print_rows(rows):
    print("| preset | env steps/s, 1 process | 2 ranks | speed-up | updates/s, 1 process | 2 ranks | "
          "rank 0 in collectives per iteration | share of training |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, (sps1, sps2, ups1, ups2, comm_ms, share) in rows:
        print(f"| {name} | {sps1:,.0f} | {sps2:,.0f} | {sps2 / sps1:.2f}x | {ups1:,.0f} | {ups2:,.0f} | "
              f"{comm_ms:.2f} ms | {share:.1f} % |")


def offpolicy_scaling(args, env):
    rows, model = [], []
    for trainer, name, steps in OFFPOLICY:
        exe = os.path.join(args.build, "examples", trainer)
        base = [exe, "--env", name, "--backend", "serial", "--total-steps", str(steps), "--quiet", "--no-plot",
                "--eval-episodes", "0", "--out", "/tmp/rlk_distributed_scaling"]
        row, out2 = measure(args, env, base, lambda out, s: s // (2 * int(ENVS.search(out)[1])))
        label = f"{trainer[6:].upper()} {name}"
        rows.append((label, row))
        u = UPDATE.search(out2)
        model.append((label, int(u[1]), int(u[2]), float(u[3])))
        print(f"{trainer} {name}: done", file=sys.stderr)
    print_rows(rows)
    print()
    print_model(model, "all-reduces per update", per_update=True)


def ppo_scaling(args, env):
    exe = os.path.join(args.build, "examples", "train_ppo")
    rows, model = [], []
    for name, steps in PRESETS:
        base = [exe, "--env", name, "--backend", "serial", "--total-steps", str(steps), "--quiet", "--no-plot",
                "--eval-episodes", "0", "--out", "/tmp/rlk_distributed_scaling"]
        iterations = lambda out, s: s // (2 * int(SETTINGS.search(out)[1]) * int(SETTINGS.search(out)[2]))
        row, out2 = measure(args, env, base, iterations)
        grad = GRADIENT.search(out2)
        rows.append((name, row))
        model.append((name, int(grad[1]), int(grad[2]), int(grad[3])))
        print(f"{name}: done", file=sys.stderr)
    print_rows(rows)
    print()
    print_model(model, "all-reduces per iteration")


# (ranks, link, bus bandwidth in bytes/s, latency per step in s): round figures for NCCL's bus
# bandwidth, not measurements. 8 ranks in one NVLink machine or over 8 machines; 64 over 8 machines.
CASES = [(8, "8 GPUs, NVLink 4", 350e9, 3e-6), (8, "8 machines, InfiniBand NDR", 45e9, 5e-6),
         (64, "64 GPUs, InfiniBand NDR", 45e9, 5e-6), (64, "64 GPUs, Ethernet 25 Gb/s", 2.8e9, 30e-6)]


def print_model(model, count_name, per_update=False):
    """The scaling model: per iteration (or update), U all-reduces of B bytes in all. Ring
    all-reduce (native): each rank sends and receives 2 (R - 1) / R of the bytes, in 2 (R - 1)
    latency steps per all-reduce (pessimistic for small messages: NCCL's tree algorithm and LL
    protocols take fewer); the ordered reduction (an all-gather): (R - 1) times the bytes in R - 1
    steps. Rows: (name, values, bytes, U): of one all-reduce (PPO), or of the U all-reduces of one
    update together (per_update: the off-policy trainers, whose all-reduces differ in size)."""
    print(f"| preset | gradient | {count_name} | " +
          " | ".join(f"{name}: native / ordered" for _, name, _, _ in CASES) + " |")
    print("| --- | ---: | ---: | " + " | ".join("---:" for _ in CASES) + " |")
    for name, values, nbytes, count in model:
        total_bytes = nbytes if per_update else nbytes * count
        cells = []
        for ranks, _, bandwidth, latency in CASES:
            ring = 2 * (ranks - 1) / ranks * total_bytes / bandwidth + count * 2 * (ranks - 1) * latency
            ordered = (ranks - 1) * total_bytes / bandwidth + count * (ranks - 1) * latency
            cells.append(f"{fmt(ring)} / {fmt(ordered)}")
        print(f"| {name} | {values:,} ({nbytes / 1e3:.0f} kB) | {count:g} | " + " | ".join(cells) + " |")


def fmt(seconds):
    return f"{1e3 * seconds:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


if __name__ == "__main__":
    main()
