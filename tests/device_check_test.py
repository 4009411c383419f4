#!/usr/bin/env python3
"""scripts/device_check.py without a GPU: --summarize's table, the library check's verdicts, a
stage's statuses (pass, fail, timeout, a missing program, the budget spent), summary.json and
summary.txt from stage records and logs, the exit statuses, and every stage of `run` in order
(DEVICE_CHECK_FORCE=1 with a spent budget). Plain unittest, a few seconds.

Run by CTest (device_check_test):  python3 tests/device_check_test.py
"""
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "device_check.py")
spec = importlib.util.spec_from_file_location("device_check", SCRIPT)
dc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dc)

CSV_HEAD = "name,iterations,real_time,cpu_time,time_unit,bytes_per_second,items_per_second,label,error_occurred,error_message\n"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class Summarize(unittest.TestCase):
    def test_table(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bench.csv")
            write(path, "console preamble\n" + CSV_HEAD + textwrap.dedent("""\
                "BM_vec_env_step/serial/64/min_time:0.200/real_time",1,1,1,us,,1e6,,,
                "BM_vec_env_step/serial/64/min_time:0.200/real_time",1,1,1,us,,3e6,,,
                "BM_vec_env_step/serial/64/min_time:0.200/real_time_mean",2,1,1,us,,9e9,,,
                "BM_vec_env_step_unchecked/serial/64/min_time:0.200/real_time",1,1,1,us,,4e6,,,
                "BM_limit_loop/serial/64/min_time:0.200/real_time",1,1,1,us,,8e6,,,
                "BM_limit_loop/serial/1024/min_time:0.200/real_time",0,0,0,us,,,,true,"too big"
                """))
            out = io.StringIO()
            dc.summarize(path, out)
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[0], "env-steps/s in millions (items_per_second; median over repetitions)")
        self.assertEqual(lines[1].split(), ["row", "N=64", "N=1024"])
        self.assertEqual(lines[2].split(), ["BM_vec_env_step/serial", "2.00", "-"])  # the median, not the mean row
        self.assertEqual(lines[4].split(), ["BM_limit_loop/serial", "8.00", "skipped"])
        self.assertEqual(lines[6].split()[-2:], ["0.50", "-"])  # unchecked / limit
        self.assertEqual(lines[7].split()[-2:], ["50.0%", "-"])  # checking cost

    def test_no_header(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.csv")
            write(path, "not a benchmark\n")
            with self.assertRaises(dc.Failure):
                dc.summarize(path, io.StringIO())


class Libraries(unittest.TestCase):
    def test_verdicts(self):
        text = textwrap.dedent("""\
            == tests/a_cuda
            \tlinux-vdso.so.1 (0x00007ffd)
            \tlibbenchmark.so.1 => /b/lib/libbenchmark.so.1 (0x00007f00)
            \tlibcudart.so.13 => /usr/local/cuda/lib64/libcudart.so.13 (0x00007f01)
            \tlibnccl.so.2 => not found
            \tlibfoo.so.1 => not found
            \tlibpng16.so.16 => /usr/lib/x86_64-linux-gnu/libpng16.so.16 (0x00007f02)
            == tests/b_cuda
            \tlinux-vdso.so.1 (0x00007ffe)
            """)
        libs = dc.parse_ldd(text)
        self.assertEqual(libs["linux-vdso.so.1"], ("linux-vdso.so.1", 2))
        self.assertEqual(libs["libnccl.so.2"], ("NOT FOUND", 1))
        verdict = {name: dc.library_kind(name, target, "/b")[1] for name, (target, _) in libs.items()}
        self.assertEqual(verdict, {"linux-vdso.so.1": True, "libbenchmark.so.1": True, "libcudart.so.13": True,
                                   "libnccl.so.2": True, "libfoo.so.1": False, "libpng16.so.16": False})


class Stages(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "out")
        os.makedirs(os.path.join(self.out, "logs"))
        self.run = dc.Run(self.tmp.name, self.out, 60)
        open(self.run.records, "w").close()
        self.quiet = io.StringIO()
        self._stdout, sys.stdout = sys.stdout, self.quiet

    def tearDown(self):
        sys.stdout = self._stdout
        self.tmp.cleanup()

    def records(self):
        with open(self.run.records) as f:
            return [line.rstrip("\n").split("\t") for line in f]

    def test_statuses(self):
        sh = "/bin/sh"
        self.run.stage("a", "test", 30, dc.command(sh, "-c", "echo All tests passed \\(3 assertions in 2 test cases\\)"))
        self.run.stage("b", "test", 30, dc.command(sh, "-c", "exit 3"))
        started = time.monotonic()
        self.run.stage("c", "test", 1, dc.command(sh, "-c", "sleep 30"))
        self.assertLess(time.monotonic() - started, 8)
        self.run.stage("d", "bench", 30, dc.command(os.path.join(self.tmp.name, "missing_cuda")))
        self.run.stage("e", "train", 30, dc.command(sh, "-c", 'test "$X" = 1', X=1),
                       dc.command(sh, "-c", "kill -SEGV $$"))
        self.run.skip("f", "sanitizer", "compute-sanitizer not found")
        self.run.deadline = time.monotonic() + 5
        self.run.stage("g", "test", 30, dc.command(sh, "-c", "exit 0"))
        got = [(r[0], r[1], r[3], r[4]) for r in self.records()]
        self.assertEqual(got, [("a", "pass", "0", "test"), ("b", "fail", "3", "test"), ("c", "timeout", "124", "test"),
                               ("d", "fail", "127", "bench"), ("e", "fail", "139", "train"),
                               ("f", "skipped", "", "sanitizer"), ("g", "skipped", "", "test")])
        with open(self.run.log_path("a")) as f:
            log = f.read()
        self.assertTrue(log.startswith("$ /bin/sh -c ") and "(time limit 30 s)\n" in log, log)
        with open(self.run.log_path("g")) as f:
            self.assertEqual(f.read(), "skipped: the run's time budget (60 s) is spent\n")

    def summary(self, records, logs, overall="pass", reason=""):
        write(self.run.records, "".join("\t".join(r) + "\n" for r in records))
        for name, text in logs.items():
            write(os.path.join(self.out, "logs", name), text)
        rc = dc.write_summary(self.out, self.tmp.name, overall, reason, 60, 12)
        with open(os.path.join(self.out, "summary.json")) as f:
            summary = json.load(f)
        with open(os.path.join(self.out, "summary.txt")) as f:
            table = f.read()
        return rc, summary, table

    def test_summary(self):
        write(os.path.join(self.tmp.name, "manifest.json"), json.dumps({
            "git_commit": "0123456789abcdef", "git_dirty": True, "date": "2026-01-01T00:00:00Z",
            "nvcc": "Cuda compilation tools, release 13.0, V13.0.88", "cuda_architectures": "90"}))
        rc, summary, table = self.summary([
            ("gpu_probe", "pass", "0", "0", "probe"),
            ("test.a_test_cuda", "pass", "1.5", "0", "test"),
            ("test.b_test_cuda", "fail", "2.0", "1", "test"),
            ("bench.cartpole", "pass", "3.0", "0", "bench"),
            ("train.ppo_cartpole.seed1", "pass", "4.0", "0", "train_ppo"),
            ("train.ppo_cartpole.seed2", "pass", "4.0", "0", "train_ppo"),
            ("bench.gae", "skipped", "0", "", "bench"),
        ], {
            "test.a_test_cuda.log": "All tests passed (7 assertions in 3 test cases)\n",
            "test.b_test_cuda.log": "test cases: 4 | 3 passed | 1 failed\nassertions: 9 | 8 passed | 1 failed\n",
            "bench.cartpole.csv": CSV_HEAD + textwrap.dedent("""\
                "BM_vec_env_step_unchecked/cuda/65536/min_time:0.100/real_time",1,1,1,us,5e11,2e9,,,
                "BM_device_copy/cuda/65536/min_time:0.100/real_time",1,1,1,us,1e12,,,,
                "BM_vec_env_step_unchecked/cuda/1048576/min_time:0.100/real_time",0,0,0,us,,,,true,"out of memory"
                "BM_limit_loop/cuda/1048576/min_time:0.100/real_time",1,1,1,us,,3e9,,,
                """),
            "train.ppo_cartpole.seed1.log": "reached a mean return of 476.0 over the last 100 episodes after 1.25 s "
                                            "and 90112 env steps\n",
            "train.ppo_cartpole.seed2.log": "trained 500000 env steps and 244 gradient steps in 8.0 s "
                                            "(62500.0 env steps/s, 30.5 updates/s)\n",
            "bench.gae.log": "skipped: the run's time budget (60 s) is spent\n",
        })
        self.assertEqual(rc, 1)
        self.assertEqual(summary["status"], "fail")
        self.assertEqual((summary["seconds"], summary["time_budget_s"]), (12.0, 60))
        self.assertEqual(summary["bundle"]["git_commit"], "0123456789abcdef")
        stages = {s["name"]: s for s in summary["stages"]}
        self.assertEqual(list(stages)[0], "gpu_probe")
        self.assertEqual((stages["test.b_test_cuda"]["test_cases"], stages["test.b_test_cuda"]["failed"],
                          stages["test.b_test_cuda"]["assertions"]), (4, 1, 9))
        self.assertEqual(stages["bench.cartpole"]["errors"], {"BM_vec_env_step_unchecked/cuda/1048576": "out of memory"})
        self.assertEqual(stages["train.ppo_cartpole.seed1"]["time_to_target_s"], 1.25)
        self.assertEqual((stages["train.ppo_cartpole.seed2"]["status"], stages["train.ppo_cartpole.seed2"]["note"]),
                         ("fail", "did not reach a mean return of 475"))
        self.assertTrue(stages["bench.gae"]["budget_spent"])
        self.assertEqual(summary["env_steps_per_s"], {"BM_vec_env_step_unchecked": {"CartPole-v1": {"65536": 2e9}},
                                                      "BM_limit_loop": {"CartPole-v1": {"1048576": 3e9}}})
        self.assertEqual(summary["cartpole_fraction_of_copy"], {"BM_vec_env_step_unchecked": {"65536": 0.5}})
        self.assertIn("== device check: FAIL; 12 s of a 60 s budget", table)
        self.assertIn("bundle: commit 0123456789ab (+ changes), built 2026-01-01T00:00:00Z, nvcc release 13.0, V13.0.88",
                      table)
        self.assertIn("CUDA tests: 1/2 binaries passed, 7 test cases run", table)
        self.assertIn("PPO CartPole-v1 on CUDA, time to 475: 1.25 s, not reached (median 1.25 s)", table)
        self.assertRegex(table, r"\nCartPole-v1 +2000\.0 +error\n  limit kernel +- +3000\.0\n")

    def test_overall(self):
        ok = [("gpu_probe", "pass", "0", "0", "probe"), ("sanitizer", "skipped", "0", "", "sanitizer")]
        skip_log = {"sanitizer.log": "skipped: compute-sanitizer not found\n"}
        self.assertEqual(self.summary(ok, skip_log)[:2][0], 0)
        self.assertEqual(self.summary(ok, skip_log)[1]["status"], "pass")
        spent = ok + [("bench.mlp", "skipped", "0", "", "bench")]
        rc, summary, _ = self.summary(spent, dict(skip_log, **{"bench.mlp.log": "skipped: the run's time budget (60 s) is spent\n"}))
        self.assertEqual((rc, summary["status"]), (1, "incomplete"))
        rc, summary, table = self.summary([("gpu_probe", "no_gpu", "0", "", "probe")], {}, "no_gpu", "nvidia-smi not found")
        self.assertEqual((rc, summary["status"], summary["reason"], summary["stages"][0]["status"]),
                         (3, "no_gpu", "nvidia-smi not found", "no_gpu"))
        self.assertTrue(table.startswith("== device check: NO_GPU (nvidia-smi not found); 12 s of a 60 s budget\n"))


class Main(unittest.TestCase):
    def call(self, *args, env=None, cwd=None):
        return subprocess.run([sys.executable, SCRIPT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, env=dict(os.environ, **(env or {})), cwd=cwd)

    def test_use(self):
        self.assertEqual(self.call("--help").returncode, 0)
        for args in ((), ("bogus",), ("run", "a", "b", "c"), ("prepare", "a", "b"), ("--summarize",)):
            r = self.call(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn("usage:", r.stderr)
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(self.call("run", d).returncode, 2)  # no manifest.json
            write(os.path.join(d, "manifest.json"), json.dumps({"compile_only": True}))
            r = self.call("run", d)
            self.assertEqual(r.returncode, 2)
            self.assertIn("PREPARE_COMPILE_ONLY=1", r.stderr)
            os.makedirs(os.path.join(d, "not-a-bundle"))
            write(os.path.join(d, "not-a-bundle", "x"), "")
            self.assertEqual(self.call("prepare", os.path.join(d, "not-a-bundle")).returncode, 2)

    def test_every_stage_in_order(self):
        # DEVICE_CHECK_FORCE=1 with a budget under 10 s: no GPU looked for and every stage recorded as
        # skipped for want of time (the libraries stage fails: a shell script is no ELF file).
        with tempfile.TemporaryDirectory() as d:
            bundle, out = os.path.join(d, "bundle"), os.path.join(d, "out")
            write(os.path.join(bundle, "manifest.json"), json.dumps({"compile_only": False}))
            for name in ("memory_test_cuda", "ppo_test_cuda", "envs_test_cuda"):
                write(os.path.join(bundle, "tests", name), "#!/bin/sh\nexit 0\n")
                os.chmod(os.path.join(bundle, "tests", name), 0o755)
            write(os.path.join(bundle, "benchmarks", "mujoco_bench_cuda"), "#!/bin/sh\n")
            os.chmod(os.path.join(bundle, "benchmarks", "mujoco_bench_cuda"), 0o755)
            r = self.call("run", bundle, out, env={"DEVICE_CHECK_FORCE": "1", "RUN_BUDGET_S": "5",
                                                   "DEVICE_CHECK_PYTHON": "0", "OUT": ""})
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            with open(os.path.join(out, "summary.json")) as f:
                summary = json.load(f)
        # compute-sanitizer's stages depend on this machine: "sanitizer" (skipped) where it is not found
        names = [s["name"] for s in summary["stages"] if not s["name"].startswith(("sanitizer", "memcheck.", "racecheck."))]
        grid = ["MinAtar-Breakout-v0", "MinAtar-Asterix-v0", "MinAtar-Freeway-v0", "MinAtar-Seaquest-v0",
                "MinAtar-SpaceInvaders-v0", "Snake-v1", "Maze-v0"]
        mujoco = ["Hopper-v5", "Walker2d-v5", "HalfCheetah-v5", "Ant-v5", "Humanoid-v5"]
        self.assertEqual(names[:4], ["gpu_probe", "libraries", "python.build", "test.memory_test_cuda"])
        self.assertEqual(sorted(names[4:6]), ["test.envs_test_cuda", "test.ppo_test_cuda"])
        self.assertEqual(names[6:], ["bench.cartpole", "bench.classic_control"] + ["bench.grid." + e for e in grid]
                         + ["bench.mujoco." + e for e in mujoco]
                         + ["train.ppo_cartpole.seed1", "train.ppo_cartpole.seed2", "train.ppo_cartpole.seed3",
                            "train.ppo_halfcheetah_1m", "train.ppo_ant_1m", "train.sac_pendulum_10k",
                            "train.td3_pendulum", "train.td3_l2f_50k", "train.dqn_cartpole"]
                         + ["bench.gae", "bench.replay", "bench.losses", "bench.mlp"])
        self.assertEqual(summary["status"], "fail")
        self.assertEqual([s["status"] for s in summary["stages"][1:3]], ["fail", "skipped"])
        self.assertTrue(all(s.get("budget_spent") for s in summary["stages"][3:] if s["name"] != "sanitizer"))


if __name__ == "__main__":
    unittest.main(verbosity=1)
