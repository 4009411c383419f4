"""Unit tests of benchmarks/compare.py's statistics, prediction and report functions (no timing).
Run: python3 -m unittest -v benchmarks/test_compare.py (CTest: compare_py_unit)."""

import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402


def ok_cell(system, env, n, rates, label=None):
    return {"system": system, "label": label or compare.SYSTEMS[system], "env": env, "n": n, "status": "ok",
            "rates": rates, "summary": compare.summarize(rates)}


def skipped_cell(system, env, n, note):
    return {"system": system, "label": compare.SYSTEMS[system], "env": env, "n": n, "status": "skipped", "note": note}


class Statistics(unittest.TestCase):
    def test_summarize_median_and_spread(self):
        s = compare.summarize([10.0, 30.0, 20.0, 40.0, 50.0])
        self.assertEqual(s["median"], 30.0)
        self.assertEqual((s["min"], s["max"]), (10.0, 50.0))
        self.assertAlmostEqual(s["spread_pct"], 100 * 40 / 60)
        self.assertEqual(compare.summarize([4.0, 2.0])["median"], 3.0)  # even count: mean of the middle two
        with self.assertRaises(ValueError):
            compare.summarize([])

    def test_warmup_rule_matches_the_cpp_rule(self):
        # bench_common.hpp: max(8, min(128, 2^20 / N))
        self.assertEqual([compare.compare_warmup_steps(n) for n in (1, 16, 4096, 8192, 65536, 1 << 20, 1 << 22)],
                         [128, 128, 128, 128, 16, 8, 8])
        source = (Path(__file__).resolve().parent / "bench_common.hpp").read_text()
        self.assertIn("std::max<std::int64_t>(8, std::min<std::int64_t>(128, budget /", source)
        self.assertIn("const std::int64_t budget = std::int64_t(1) << 20;", source)

    def test_predicted_seconds(self):
        # 1 us per env-step, N = 1000: steps of 1 ms; 10 warm-up steps, 5 repeats of at least 0.5 s
        self.assertAlmostEqual(compare.predicted_seconds(1e-6, 1000, 10, 5, 0.5), 0.01 + 2.5)
        # steps longer than min_time: each repeat is one whole step
        self.assertAlmostEqual(compare.predicted_seconds(1e-6, 2_000_000, 8, 5, 0.5), 8 * 2 + 5 * 2)


class Formatting(unittest.TestCase):
    def test_human_rate(self):
        self.assertEqual(compare.human_rate(27_400_000), "27.4M")
        self.assertEqual(compare.human_rate(151_234), "151k")
        self.assertEqual(compare.human_rate(5_230), "5.23k")
        self.assertEqual(compare.human_rate(1.5e9), "1.5G")
        self.assertEqual(compare.human_rate(999), "999")
        self.assertEqual(compare.human_rate(float("nan")), "?")

    def test_human_n(self):
        self.assertEqual(compare.human_n(1 << 20), "2^20")
        self.assertEqual(compare.human_n(4096), "4096")

    def test_env_table_has_every_measured_system_and_footnotes_for_skips(self):
        cells = [ok_cell("rlk_serial", "CartPole-v1", 1, [1e6, 1.1e6, 0.9e6]),
                 ok_cell("rlk_serial", "CartPole-v1", 16, [2e7, 2e7, 2e7]),
                 skipped_cell("envpool", "CartPole-v1", 1, "not installed: Python module 'envpool'"),
                 skipped_cell("envpool", "CartPole-v1", 16, "not installed: Python module 'envpool'"),
                 skipped_cell("gymnasium_async", "CartPole-v1", 16, "too many processes"),
                 ok_cell("gymnasium", "CartPole-v1", 1, [1e5]),
                 ok_cell("rlk_serial", "Pendulum-v1", 1, [5.0])]  # another env: not in this table
        table = compare.markdown_env_table("CartPole-v1", cells, [1, 16])
        lines = table.splitlines()
        self.assertEqual(lines[0], "| CartPole-v1 | N=1 | N=16 |")
        self.assertIn("| rlkernels serial | 1M ±10% | 20M |", table)
        self.assertIn("| EnvPool | – [1] | – [1] |", table)
        self.assertIn("| Gymnasium AsyncVectorEnv |  | – [2] |", table)
        self.assertIn("| Gymnasium, one env | 100k |  |", table)
        self.assertIn("[1] not installed: Python module 'envpool'", table)
        self.assertIn("[2] too many processes", table)
        self.assertNotIn("Pendulum", table)
        # table rows follow SYSTEMS' order: ours first, the single Gymnasium env last
        order = [l.split("|")[1].strip() for l in lines[2:] if l.startswith("| ")]
        self.assertEqual(order, ["rlkernels serial", "EnvPool", "Gymnasium AsyncVectorEnv", "Gymnasium, one env"])

    def test_summary_ratios_use_the_best_cells(self):
        cells = [ok_cell("rlk_serial", "CartPole-v1", 16, [2e7]),
                 ok_cell("rlk_openmp", "CartPole-v1", 4096, [8e7], "rlkernels OpenMP (2 threads)"),
                 ok_cell("envpool", "CartPole-v1", 4096, [1e6], "EnvPool (2 threads)"),
                 ok_cell("rlk_python", "CartPole-v1", 4096, [4e7]),
                 ok_cell("gymnasium_sync", "CartPole-v1", 16, [1e5]),
                 ok_cell("gymnasium", "CartPole-v1", 1, [2e5]),
                 skipped_cell("minatar", "CartPole-v1", 1, "n/a")]
        summary = compare.markdown_summary(cells)
        row = [l for l in summary.splitlines() if l.startswith("| CartPole-v1")][0]
        cols = [c.strip() for c in row.strip("|").split("|")]
        self.assertEqual(cols[1], "80M (OpenMP (2 threads), N=4096)")
        self.assertEqual(cols[2], "40M (from Python (OpenMP), N=4096)")  # rlkernels from Python
        self.assertEqual(cols[3], "1M (2 threads, N=4096)")
        self.assertEqual(cols[4], "100k (SyncVectorEnv, N=16)")
        self.assertEqual(cols[5], "200k (N=1)")
        self.assertEqual(cols[6], "–")
        self.assertEqual(cols[7], "–")  # no C++ gym-style cell
        self.assertEqual(cols[8], "–")  # no MuJoCo mj_step cell (the MuJoCo envs' C baseline)
        self.assertEqual(cols[9], "400x")  # 8e7 / 2e5
        self.assertEqual(cols[10], "80x")  # 8e7 / best baseline (EnvPool 1e6)
        self.assertEqual(cols[11], "40x")  # from Python 4e7 / EnvPool 1e6

    def test_per_core_table_divides_by_busy_threads_and_compares_with_mj_step(self):
        def cell(system, n, rate, threads=None):
            c = ok_cell(system, "Hopper-v5", n, [rate])
            if threads:
                c["threads"] = threads
            return c
        cells = [cell("mujoco_serial", 1, 10e3), cell("mujoco_serial", 64, 12e3),
                 cell("rlk_serial_f64", 1, 20e3), cell("rlk_serial_f64", 64, 30e3),
                 cell("rlk_serial", 64, 48e3),
                 cell("mujoco_openmp", 1, 10e3, 2), cell("mujoco_openmp", 64, 20e3, 2),
                 cell("rlk_openmp_f64", 64, 50e3, 2),
                 cell("gymnasium", 1, 7e3),
                 skipped_cell("envpool", "Hopper-v5", 64, "not installed")]
        table = compare.markdown_per_core("Hopper-v5", cells, [1, 64])
        self.assertIn("| MuJoCo mj_step, 1 thread | 10k | 12k |", table)
        self.assertIn("| rlkernels serial, float |  | 48k |", table)
        # OpenMP: at N=1 one thread has work; at N=64 two (20k / 2 = 10k per thread)
        self.assertIn("| MuJoCo mj_step, OpenMP, per thread | 10k | 10k |", table)
        self.assertIn("| rlkernels OpenMP double, per thread |  | 25k |", table)
        self.assertIn("| **double / mj_step (1 thread each)** | 2.00x | 2.50x |", table)
        self.assertIn("| **float / mj_step (1 thread each)** |  | 4.00x |", table)
        self.assertIn("| **double / mj_step (OpenMP each)** |  | 2.50x |", table)
        self.assertIn("| Gymnasium, one env | 7k |  |", table)
        self.assertNotIn("EnvPool", table)  # skipped cells have no row
        self.assertNotIn("CPU", table)  # no cpu_rates in these cells
        cells[1]["cpu_rates"], cells[3]["cpu_rates"] = [20e3, 24e3, 30e3], [75e3]  # mj_step N=64, ours double N=64
        table = compare.markdown_per_core("Hopper-v5", cells, [1, 64])
        self.assertIn("| MuJoCo mj_step, per CPU-second of its thread |  | 24k |", table)
        self.assertIn("| **double / mj_step, CPU time (1 thread each)** |  | 3.12x |", table)
        self.assertEqual(compare.markdown_per_core("CartPole-v1", cells, [1]), "")  # no mj_step cells there

    def test_training_table(self):
        rows = [{"task": "t", "system": "ours", "status": "ok", "seconds": [0.5, 0.4, 0.7], "note": "5/5"},
                {"task": "t", "system": "SB3", "status": "skipped", "note": "not installed"}]
        table = compare.markdown_training(rows)
        self.assertIn("| t | ours | 0.50 s | 0.40 – 0.70 s | 3 | 5/5 |", table)
        self.assertIn("| t | SB3 | – | – | 0 | skipped: not installed |", table)

    def test_replace_between_keeps_the_markers_and_the_rest(self):
        text = "a\n<!-- b -->\nold\n<!-- e -->\nz\n"
        self.assertEqual(compare.replace_between(text, "<!-- b -->", "<!-- e -->", "new"),
                         "a\n<!-- b -->\nnew\n<!-- e -->\nz\n")
        with self.assertRaises(ValueError):
            compare.replace_between("no markers", "<!-- b -->", "<!-- e -->", "x")

    def test_docs_have_the_markers(self):
        root = Path(__file__).resolve().parent.parent
        for path, begin, end in [("docs/benchmarks.md", "<!-- compare.py:begin -->", "<!-- compare.py:end -->"),
                                 ("README.md", "<!-- compare.py:summary:begin -->", "<!-- compare.py:summary:end -->")]:
            text = (root / path).read_text()
            self.assertLess(text.find(begin), text.find(end), path)
            self.assertGreaterEqual(text.find(begin), 0, path)


class RLtoolsBaseline(unittest.TestCase):
    """Which RLtools program compare.py times: --rltools-binary, $RLK_RLTOOLS_SAC, the build's driver, or a skip."""

    def command(self, build_dir, binary=None, env=None):
        import argparse
        import os
        from unittest import mock
        runner = compare.Runner(argparse.Namespace(build_dir=str(build_dir), rltools_binary=binary))
        with mock.patch.dict(os.environ, env or {}, clear=False):
            if not env:
                os.environ.pop("RLK_RLTOOLS_SAC", None)
            return runner.rltools_command()

    def test_skip_note_says_how_to_install_it(self):
        import tempfile
        with tempfile.TemporaryDirectory() as build:
            note = self.command(build)
            self.assertTrue(note.startswith("skip: not installed: pip install rltools"), note)
            self.assertIn("--rltools-binary", note)

    def test_the_builds_driver_then_the_variable_then_the_flag(self):
        import os
        import stat
        import tempfile
        with tempfile.TemporaryDirectory() as build:
            driver = Path(build) / "benchmarks" / "rltools_sac_pendulum"
            driver.parent.mkdir()
            driver.write_text("#!/bin/sh\n")
            driver.chmod(driver.stat().st_mode | stat.S_IXUSR)
            self.assertEqual(self.command(build), str(driver))
            self.assertEqual(self.command(build, env={"RLK_RLTOOLS_SAC": "my-rltools --quiet"}), "my-rltools --quiet")
            mine = Path(build) / "my rltools"
            mine.write_text("#!/bin/sh\n")
            mine.chmod(mine.stat().st_mode | stat.S_IXUSR)
            self.assertEqual(self.command(build, binary=str(mine), env={"RLK_RLTOOLS_SAC": "x"}), f"'{mine}'")
            self.assertTrue(self.command(build, binary=os.path.join(build, "absent")).startswith(
                "skip: --rltools-binary"))

    def test_training_rows_time_the_program_through_offpolicy_bench(self):
        import argparse
        import tempfile
        with tempfile.TemporaryDirectory() as build:
            bench = Path(build) / "benchmarks"
            bench.mkdir()
            for name in ("offpolicy_bench_serial", "rltools_sac_pendulum"):
                (bench / name).write_text("")
            runner = compare.Runner(argparse.Namespace(build_dir=build, rltools_binary=None, with_blas=False,
                                                       sb3_seeds=0, sb3_ppo_max_steps=1, l2f_seeds=0))
            runner.log = lambda msg: None
            calls = []
            label = "rltools_sac_pendulum: RLtools 111f0b8 (headers of the rltools PyPI package), backend OpenBLAS"

            def fake_gbench(exe, flags, extra_env=None):
                calls.append((exe.name, flags, extra_env))
                if flags[0].startswith("--benchmark_filter=^rltools"):
                    runs = [{"run_type": "iteration", "real_time": ms, "eval_return": -155.0, "program_timed": 1,
                             "label": label} for ms in (4100.0, 3900.0, 4000.0)]
                    return {"benchmarks": runs + [{"run_type": "aggregate", "real_time": 4000.0}]}
                return {"benchmarks": [{"run_type": "iteration", "real_time": 1000.0, "eval_return": -150.0}]}

            runner.run_gbench = fake_gbench
            runner.training_rows()
            rl_calls = [c for c in calls if c[1][0].startswith("--benchmark_filter=^rltools")]
            self.assertEqual(len(rl_calls), 1)
            self.assertEqual(rl_calls[0][0], "offpolicy_bench_serial")
            self.assertEqual(rl_calls[0][2]["RLK_RLTOOLS_SAC"], str(bench / "rltools_sac_pendulum"))
            self.assertEqual(rl_calls[0][2]["OPENBLAS_NUM_THREADS"], "1")
            row = next(r for r in runner.training if r["system"].startswith("RLtools SAC"))
            self.assertEqual(row["status"], "ok")
            self.assertEqual(row["seconds"], [4.1, 3.9, 4.0])  # the iterations only, in seconds
            self.assertIn("OpenBLAS, 1 thread", row["system"])
            # without offpolicy_bench the row is skipped, saying why, and nothing runs
            (bench / "offpolicy_bench_serial").unlink()
            runner.training, calls[:] = [], []
            runner.training_rows()
            row = next(r for r in runner.training if r["task"].startswith("SAC") and r["system"] == "RLtools")
            self.assertEqual(row["status"], "skipped")
            self.assertIn("offpolicy_bench_serial not built", row["note"])
            self.assertEqual(calls, [])

    def test_time_to_fly_reads_the_first_evaluation_at_0_9(self):
        line = ("eval: env_steps {:7d} training_seconds {:8.3f} training_cpu_seconds {:8.3f} return  -185.898 "
                "length   27.70 settling_fraction {:.2f} terminated_fraction 0.10")
        out = "\n".join(["rlkernels_td3_l2f: TD3 ...", line.format(0, 0, 0, 0.0), line.format(10000, 5.5, 5.0, 0.85),
                         line.format(20000, 11.0, 10.0, 0.93), line.format(30000, 16.5, 15.0, 0.12),
                         "first_settled_0.9: env_steps 20000 training_seconds 11.000"])
        r = compare.time_to_fly(out)
        self.assertEqual((r["evaluations"], r["flew"], r["env_steps"]), (4, True, 20000))
        self.assertEqual((r["cpu_seconds"], r["seconds"], r["final_settling"]), (10.0, 11.0, 0.12))
        never = compare.time_to_fly("\n".join([line.format(0, 0, 0, 0.0), line.format(10000, 5.5, 5.0, 0.89)]))
        self.assertFalse(never["flew"])
        self.assertIsNone(never["cpu_seconds"])
        row = compare.l2f_row("ours", [r, never])
        self.assertEqual((row["status"], row["seconds"]), ("ok", [10.0]))
        self.assertIn("1/2 seeds flew", row["note"])
        none = compare.l2f_row("theirs", [never])
        self.assertEqual(none["status"], "not_reached")
        self.assertIn("| theirs | – | – | 1 | 0/1 seeds flew", compare.markdown_training([none]))

    def test_l2f_rows_interleave_the_systems_seed_by_seed(self):
        import argparse
        import os
        import tempfile
        with tempfile.TemporaryDirectory() as build:
            bench = Path(build) / "benchmarks"
            bench.mkdir()
            order = Path(build) / "order.txt"
            for name, settled in (("rlkernels_td3_l2f_serial", "0.95"), ("rltools_td3_l2f_train_reward", "0.50")):
                exe = bench / name
                exe.write_text("#!/bin/sh\n"
                               f"echo {name} $1 >> {order}\n"
                               "echo 'eval: env_steps   10000 training_seconds    2.000 training_cpu_seconds    1.500 "
                               f"return 0 length 500 settling_fraction {settled} terminated_fraction 0.00'\n")
                exe.chmod(0o755)
            logs = Path(build) / "logs"
            runner = compare.Runner(argparse.Namespace(build_dir=build, l2f_seeds=2, l2f_timeout=60, l2f_logs=str(logs)))
            runner.log = lambda msg: None
            runner.l2f_rows()
            self.assertEqual(order.read_text().split("\n")[:4],
                             ["rlkernels_td3_l2f_serial 0", "rltools_td3_l2f_train_reward 0",
                              "rlkernels_td3_l2f_serial 1", "rltools_td3_l2f_train_reward 1"])
            ours, theirs = runner.training
            self.assertEqual((ours["status"], ours["seconds"]), ("ok", [1.5, 1.5]))
            self.assertEqual(theirs["status"], "not_reached")
            self.assertTrue(os.path.exists(order))
            self.assertIn("settling_fraction 0.95", (logs / "rlkernels_td3_l2f_serial_1.txt").read_text())

    def test_system_name_and_note_come_from_the_drivers_output(self):
        label = "rltools_sac_pendulum: RLtools 111f0b8 (headers of the rltools PyPI package), backend OpenBLAS, seed 0"
        self.assertEqual(compare.rltools_system(label, "2.2.1"),
                         "RLtools SAC (headers of pip rltools 2.2.1, our driver, OpenBLAS, 1 thread)")
        self.assertIn("no BLAS", compare.rltools_system(label.replace("OpenBLAS", "generic (no BLAS)"), None))
        self.assertEqual(compare.rltools_system("", None), "RLtools SAC (user-supplied program)")
        runs = [{"eval_return": -150.4, "program_timed": 1}, {"eval_return": -160.6, "program_timed": 1}]
        self.assertEqual(compare.rltools_note(runs),
                         "eval return (100 episodes) -150, -161; its training loop as the program times it; "
                         "seed 0 each run")
        self.assertEqual(compare.rltools_note([{"program_timed": 0}]), "whole process; seed 0 each run")


class Actions(unittest.TestCase):
    def test_random_policy_is_uniform_over_the_action_space(self):
        try:
            import numpy as np
        except ImportError:
            self.skipTest("numpy not installed")
        a = compare.make_actions(compare.ENVS["Acrobot-v1"], 4096)
        self.assertEqual(len(a), compare.ACTION_BATCHES)
        self.assertEqual(sorted(np.unique(np.concatenate(a)).tolist()), [0, 1, 2])
        p = compare.make_actions(compare.ENVS["Pendulum-v1"], 1000)
        self.assertEqual(p[0].shape, (1000, 1))
        self.assertTrue(((p[0] >= -2) & (p[0] <= 2)).all())
        self.assertEqual(p[0].dtype, np.float32)
        h = compare.make_actions(compare.ENVS["HalfCheetah-v5"], 100)
        self.assertEqual(h[0].shape, (100, 6))
        self.assertTrue(((h[0] >= -1) & (h[0] <= 1)).all())
        # a pure function of N: every system sees the same actions
        self.assertTrue(all((x == y).all() for x, y in zip(p, compare.make_actions(compare.ENVS["Pendulum-v1"], 1000))))


class FrontPage(unittest.TestCase):
    @staticmethod
    def stored_run(date, commit, command, cells, training=None):
        machine = {"cpu": "Test CPU", "cores": 2, "memory_gib": 8, "gpus": [], "date": date, "commit": commit,
                   "os": "Linux"}
        return {"machine": machine, "command": command, "cells": cells, "training": training or []}

    def test_each_env_from_its_newest_run_with_the_runs_named(self):
        old = self.stored_run("2026-01-01 10:00 UTC", "aaa", "python3 benchmarks/compare.py", [
            ok_cell("rlk_openmp", "CartPole-v1", 4096, [100.0e6]), ok_cell("gymnasium", "CartPole-v1", 1, [100.0e3]),
            ok_cell("envpool", "CartPole-v1", 4096, [1.0e6]),
            ok_cell("rlk_serial", "Hopper-v5", 16, [10.0e3]), ok_cell("mujoco_serial", "Hopper-v5", 16, [9.0e3])])
        new = self.stored_run("2026-02-01 10:00 UTC", "bbb", "python3 benchmarks/compare.py --envs Hopper-v5", [
            ok_cell("rlk_openmp_f64", "Hopper-v5", 256, [40.0e3]), ok_cell("mujoco_openmp", "Hopper-v5", 256, [16.0e3]),
            ok_cell("gymnasium", "Hopper-v5", 1, [4.0e3]), ok_cell("envpool_v5", "Hopper-v5", 4096, [20.0e3]),
            skipped_cell("gymnasium_sync", "Hopper-v5", 4096, "over the budget")])
        table = compare.front_page_summary([new, old])  # the order given does not matter
        rows = {line.split(" | ")[0].lstrip("| "): line for line in table.splitlines() if line.startswith("| ")}
        # CartPole from the old run: ours 100M, EnvPool 1M, Gymnasium one env 100k: 1,000x and 100x
        self.assertEqual(rows["CartPole-v1"],
                         "| CartPole-v1 | 100M | 1M | – | 100k | – | – | 1,000x | 100x | (a) |")
        # Hopper from the new run only (the old run's 10k is superseded); the best package is EnvPool's 20k
        self.assertEqual(rows["Hopper-v5"], "| Hopper-v5 | 40k | 20k | – | 4k | – | 16k | 10x | 2.0x | (b) |")
        self.assertIn("(a) 2026-01-01, Test CPU, 2 cores, 8 GiB, no GPU, rlkernels aaa: `python3 benchmarks/compare.py`",
                      table)
        self.assertIn("(b) 2026-02-01, Test CPU, 2 cores, 8 GiB, no GPU, rlkernels bbb: "
                      "`python3 benchmarks/compare.py --envs Hopper-v5`", table)
        self.assertNotIn("Pendulum", table)

    def test_stored_run_sections_render_the_current_separate_runs(self):
        import json
        import tempfile
        settings = {"sizes": [1, 16], "repeats": 3, "min_time_s": 0.3}
        full = self.stored_run("2026-01-01 10:00 UTC", "aaa", "python3 benchmarks/compare.py",
                               [ok_cell("rlk_openmp", "CartPole-v1", 16, [5.0e6])])
        old = self.stored_run("2026-01-02 10:00 UTC", "bbb", "python3 benchmarks/compare.py --envs Hopper-v5",
                              [ok_cell("rlk_serial", "Hopper-v5", 16, [1.0e3])])
        new = self.stored_run("2026-01-03 10:00 UTC", "ccc", "python3 benchmarks/compare.py --envs Hopper-v5",
                              [ok_cell("rlk_serial", "Hopper-v5", 16, [2.0e3])])
        with tempfile.TemporaryDirectory() as d:
            d = Path(d)
            for name, run in (("results.json", full), ("a_results.json", old), ("b_results.json", new)):
                run.update(settings=settings, packages={"numpy": "2"}, notes=[])
                (d / name).write_text(json.dumps(run))
            text = compare.stored_run_sections(d)
        self.assertIn("### Hopper-v5 (run of 2026-01-03)", text)
        self.assertIn("[compare/b_results.json]", text)
        self.assertIn("| 2k |", text)
        self.assertNotIn("CartPole", text)  # the full run has docs/benchmarks.md's own section
        self.assertNotIn("2026-01-02", text)  # superseded by the newer run of the same env

    def test_write_front_page_replaces_only_the_section(self):
        import json
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            d = Path(d)
            run = self.stored_run("2026-01-01 10:00 UTC", "aaa", "python3 benchmarks/compare.py",
                           [ok_cell("rlk_openmp", "CartPole-v1", 4096, [5.0e6])],
                           [{"task": "PPO", "system": "ours", "status": "ok", "seconds": [1.0, 2.0, 3.0]}])
            (d / "results.json").write_text(json.dumps(run))
            readme = d / "README.md"
            readme.write_text("intro\n<!-- compare.py:summary:begin -->\nold\n<!-- compare.py:summary:end -->\nrest\n")
            compare.write_front_page(readme, d)
            text = readme.read_text()
            self.assertTrue(text.startswith("intro\n<!-- compare.py:summary:begin -->\nEnv-steps per second"))
            self.assertIn("\n| env |", text)
            self.assertTrue(text.endswith("<!-- compare.py:summary:end -->\nrest\n"))
            self.assertNotIn("old", text)
            self.assertIn("| CartPole-v1 | 5M |", text)
            self.assertIn("| PPO | ours | 2.00 s | 1.00 – 3.00 s | 3 |", text)
            with self.assertRaises(ValueError):
                compare.write_front_page(readme, d / "empty")


if __name__ == "__main__":
    unittest.main()
