"""Data-parallel training is the same training: `mpirun -np 2` with train.batch_size = b against
one process with 2·b on the tiny recipe (dropout 0, one OpenMP thread per process). Every logged
row must carry the same tokens (the same data order) and the same loss, accuracy and gradient norm
within a float tolerance (the gradient sums run in another order), the final weights likewise;
rank 0 alone writes the metrics (no row twice) and a checkpoint. SIGTERM to mpirun, then the
resume, gives the uninterrupted run's rows and weights exactly. Skipped (exit 77) when the binary
was built without MPI or mpirun is missing.

Usage: mpi_equivalence_test.py LINFORMER_BINARY   (run from the repository root, as CTest does)
"""
import csv
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import safetensors_io  # noqa: E402

TINY = os.path.join(ROOT, "recipes", "ci", "tiny.toml")
BINARY = None
SKIP = 77
RTOL = 2e-4  # float32 sums in another order, through 20 AdamW updates


def mpirun_command(processes):
    command = ["mpirun", "-np", str(processes), "--oversubscribe", "--bind-to", "none", "-x", "OMP_NUM_THREADS=1"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    return command


def read_safetensors(path):
    return {name: t.numpy() for name, t in safetensors_io.load(path)[0].items()}


def read_metrics(run_dir):
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return list(csv.DictReader(f))


def final_weights(run_dir):
    checkpoints = sorted(os.listdir(os.path.join(run_dir, "checkpoints")))
    return read_safetensors(os.path.join(run_dir, "checkpoints", checkpoints[-1], "model.safetensors"))


class MpiEquivalence(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.prepared = os.path.join(cls.dir.name, "prepared")
        r = subprocess.run([BINARY, "prepare", "--recipe", TINY, "--set", f"data.prepared_dir={cls.prepared}"],
                           capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, r.stdout + r.stderr

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def train_command(self, run_dir, batch_size, settings=(), resume=False):
        return [BINARY, "train", "--recipe", TINY, "--set", f"data.prepared_dir={self.prepared}",
                "--set", f"train.batch_size={batch_size}", *settings, "--run-dir", run_dir] + \
            (["--resume", "auto"] if resume else [])

    def train(self, run_dir, batch_size, processes, settings=(), resume=False):
        command = self.train_command(run_dir, batch_size, settings, resume)
        if processes == 1:
            return subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                                  env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=300)
        job, output = self.launch(mpirun_command(processes) + command)
        printed = self.output_of(job, output, timeout=300)
        return subprocess.CompletedProcess(job.args, job.returncode, "", printed)

    def launch(self, command):
        """mpirun started in the background, its output in a file (a pipe nobody reads would fill up and
        stall mpirun and the ranks), killed when the test ends. Open MPI's launcher now and then hangs at
        start-up (open-mpi/ompi#10586): a job in which no rank has said a word after 60 s is retried
        once, and that is printed."""
        for attempt in (1, 2):
            output = tempfile.TemporaryFile("w+")
            self.addCleanup(output.close)
            job = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                                   env=dict(os.environ, OMP_NUM_THREADS="1"))
            self.addCleanup(lambda j=job: j.poll() is None and j.kill())
            deadline = time.time() + 60
            while job.poll() is None and "[rank " not in self.output_of(job, output) and time.time() < deadline:
                time.sleep(0.05)
            if job.poll() is not None or "[rank " in self.output_of(job, output):
                return job, output
            print(f"\nmpirun: no rank printed anything in 60 s (attempt {attempt}); its processes "
                  f"{self.ranks_of(job.pid)}; its output: {self.output_of(job, output)!r}", file=sys.stderr)
            job.kill()
            job.wait()
        self.fail("mpirun hung at start-up twice")

    @staticmethod
    def output_of(job, output, timeout=None):
        """What the job printed so far, or in all once it ended (timeout given)."""
        if timeout is not None:
            try:
                job.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                job.kill()
                job.wait()
                output.seek(0)
                raise AssertionError(f"mpirun still running after {timeout} s; it printed:\n{output.read()}")
        output.seek(0)
        return output.read()

    @staticmethod
    def ranks_of(mpirun_pid):
        """The processes mpirun started on this machine, its children: (pid, rank, or None where /proc
        does not show the environment)."""
        ranks = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) != mpirun_pid:
                        continue
                rank = None
                with open(f"/proc/{pid}/environ", "rb") as f:
                    for variable in f.read().split(b"\0"):
                        if variable.startswith(b"OMPI_COMM_WORLD_RANK="):
                            rank = int(variable.split(b"=")[1])
            except (OSError, ValueError, IndexError):
                pass
            else:
                ranks.append((int(pid), rank))
        return sorted(ranks)

    @staticmethod
    def has_checkpoint_from_50(run_dir):
        """A complete checkpoint at update 50 or later. Not checkpoint 50 itself: the tiny model runs
        hundreds of updates a second, and retention may remove checkpoint 50 between two looks."""
        d = os.path.join(run_dir, "checkpoints")
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            return False
        updates = [int(n[len("checkpoint_"):]) for n in names
                   if n.startswith("checkpoint_") and n[len("checkpoint_"):].isdigit()
                   and os.path.exists(os.path.join(d, n, "DONE"))]
        return any(u >= 50 for u in updates)

    def start_until_checkpoint_50(self, run_dir, settings, options=()):
        """A 2-process run of batch 2 started in the background, returned once a checkpoint at update 50
        or later is written."""
        job, output = self.launch(mpirun_command(2) + self.train_command(run_dir, 2, settings) + list(options))
        deadline = time.time() + 120
        while not self.has_checkpoint_from_50(run_dir) and job.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        if job.poll() is not None or not self.has_checkpoint_from_50(run_dir):
            self.fail(f"no checkpoint from update 50 while the job ran (mpirun "
                      f"{'still running' if job.poll() is None else 'ended'}; its processes "
                      f"{self.ranks_of(job.pid)}); it printed:\n{self.output_of(job, output)}")
        return job, output

    def test_two_processes_train_as_one_with_twice_the_batch(self):
        one_dir = os.path.join(self.dir.name, "one")
        two_dir = os.path.join(self.dir.name, "two")
        one = self.train(one_dir, 4, 1)
        self.assertEqual(one.returncode, 0, one.stdout + one.stderr)
        two = self.train(two_dir, 2, 2)
        self.assertEqual(two.returncode, 0, two.stdout + two.stderr)
        self.assertIn("data parallel: 2 processes", two.stderr)
        self.assertIn("4 sequences per update", two.stderr)
        self.assertRegex(two.stderr, r"gradients of \d+\.\d MB summed over the processes per update")
        self.assertRegex(two.stderr, r"update 10/20 \|.*\| allreduce \d+\.\d%")
        self.assertIn("after the backward pass (--overlap-allreduce)", two.stderr, "auto on one machine: no overlap")

        rows_one, rows_two = read_metrics(one_dir), read_metrics(two_dir)
        self.assertEqual([(r["kind"], r["update"]) for r in rows_one], [(r["kind"], r["update"]) for r in rows_two],
                         "the two runs logged different rows (or a row twice)")
        self.assertGreaterEqual(len(rows_one), 6)
        for a, b in zip(rows_one, rows_two):
            where = f"{a['kind']} row at update {a['update']}"
            self.assertEqual(a["tokens"], b["tokens"], f"{where}: another data order")
            self.assertEqual(a["epoch"], b["epoch"], where)
            for column in ("loss", "accuracy", "lr") + (("grad_norm",) if a["kind"] == "train" else ()):
                x, y = float(a[column]), float(b[column])
                self.assertTrue(np.isclose(x, y, rtol=RTOL, atol=1e-6), f"{where}: {column} {x} against {y}")

        weights_one, weights_two = final_weights(one_dir), final_weights(two_dir)
        self.assertEqual(sorted(weights_one), sorted(weights_two))
        for name in weights_one:
            a, b = weights_one[name], weights_two[name]
            worst = float(np.max(np.abs(a - b) / (np.abs(a) + 1e-3)))
            self.assertLess(worst, 1e-3, f"final weights differ in {name}: {worst:.2e} relative")
        # The tolerance tells weights apart: the first checkpoint (update 10) is far from the last.
        earlier = read_safetensors(os.path.join(one_dir, "checkpoints", sorted(os.listdir(
            os.path.join(one_dir, "checkpoints")))[0], "model.safetensors"))
        moved = max(float(np.max(np.abs(earlier[n] - weights_two[n]) / (np.abs(earlier[n]) + 1e-3))) for n in earlier)
        self.assertGreater(moved, 1e-2)

    def test_the_allreduce_overlapped_with_the_backward_pass_makes_the_same_updates(self):
        # Two processes: a sum of two floats has one order, so overlapped and not agree bit for bit.
        settings = ["--set", "train.max_updates=60", "--set", "checkpoint.every=60"]
        after_dir, during_dir = (os.path.join(self.dir.name, name) for name in ("after", "during"))
        after = self.train(after_dir, 2, 2, settings + ["--overlap-allreduce", "off"])
        self.assertEqual(after.returncode, 0, after.stdout + after.stderr)
        during = self.train(during_dir, 2, 2, settings + ["--overlap-allreduce", "on"])
        self.assertEqual(during.returncode, 0, during.stdout + during.stderr)
        self.assertIn("after the backward pass", after.stderr)
        buckets = re.search(r"during the backward pass in (\d+) buckets", during.stderr)
        self.assertIsNotNone(buckets, during.stderr)
        self.assertGreaterEqual(int(buckets.group(1)), 3, "the tiny model's gradients in several buckets")
        columns = ("kind", "update", "tokens", "loss", "accuracy", "grad_norm")
        rows = lambda d: [tuple(r[c] for c in columns) for r in read_metrics(d)]  # noqa: E731
        self.assertEqual(rows(during_dir), rows(after_dir))
        a, b = final_weights(during_dir), final_weights(after_dir)
        for name in a:
            self.assertTrue(np.array_equal(a[name], b[name]), f"{name} differs with the allreduce overlapped")

    def test_sigusr1_to_mpirun_then_resume_equals_an_uninterrupted_run(self):
        # mpirun passes SIGUSR1 on to every rank at once and lets the job end by itself; rank 0 may
        # hear of rank 1's stop before its own.
        self.interrupt_then_resume("mpirun", signal.SIGUSR1, ("received SIGUSR1", "another process stopped"),
                                   ("interrupted by SIGUSR1 at update", "interrupted by SIGUSR1 (to another process)"))

    def test_sigterm_to_one_rank_then_resume_equals_an_uninterrupted_run(self):
        # The others stop with it, at the same update. What rank 0 says if it heard of it, then if it
        # was the one signalled.
        self.interrupt_then_resume("rank 1", signal.SIGTERM, ("another process stopped", "received SIGTERM"),
                                   ("interrupted by SIGTERM (to another process)", "interrupted by SIGTERM at update"))

    def test_sigterm_to_mpirun_then_resume_equals_an_uninterrupted_run(self):
        # Open MPI 4.1's mpirun ends the job on SIGTERM: SIGCONT, a second later SIGTERM, a second
        # after that SIGKILL, and the ranks often end before they stop (2 of 10 wrote a checkpoint on
        # a Zen 5 VM). Whether or not they did, the resume continues exactly.
        self.interrupt_then_resume("mpirun", signal.SIGTERM, None, None)

    def interrupt_then_resume(self, whom, sig, stopping, said):
        """A 2-process run signalled after its checkpoint at update 50 (to mpirun or to rank 1), then
        resumed: the same rows and weights as an uninterrupted run. With `stopping` and `said` the
        ranks must have stopped with a checkpoint: rank 0's log has one of each and the hint."""
        # Long enough to be still going when a signal passed on by mpirun arrives (the tiny model
        # trains 1,500 updates in about a second on a Zen 5).
        settings = ["--set", "train.max_updates=5000", "--set", "checkpoint.every=50", "--set", "validation.every=50"]
        straight_dir = os.path.join(self.dir.name, "straight")
        if not os.path.exists(os.path.join(straight_dir, "metrics.csv")):
            straight = self.train(straight_dir + ".tmp", 2, 2, settings)
            self.assertEqual(straight.returncode, 0, straight.stdout + straight.stderr)
            os.rename(straight_dir + ".tmp", straight_dir)  # a failed run is not reused by the next test

        run_dir = os.path.join(self.dir.name, f"interrupted_{whom.replace(' ', '_')}_{sig.name}")
        job, output_file = self.start_until_checkpoint_50(run_dir, settings)
        if whom == "mpirun":
            job.send_signal(sig)
        else:
            ranks = self.ranks_of(job.pid)
            target, rank = next((r for r in ranks if r[1] == 1), ranks[0])
            os.kill(target, sig)
            # Rank 0 itself signalled (where /proc hid the ranks) says so; else it heard of rank 1's stop.
            stopping, said = ((stopping[0],), (said[0],)) if rank == 1 else ((stopping[1],), (said[1],))
        output = self.output_of(job, output_file, timeout=300)
        # Rank 0's own log, flushed line by line, has every line it wrote; mpirun's output may not.
        with open(os.path.join(run_dir, "train.log")) as f:
            log = f.read()
        self.assertNotIn("reached train.max_updates", log, "the run finished before the signal: nothing tested")
        if stopping:
            self.assertEqual(job.returncode, 0, output)
            self.assertTrue(any(s in log for s in stopping), f"none of {stopping} in:\n{log}")
            self.assertIn("continue with: mpirun -np 2", log)
            self.assertTrue(any(s in log for s in said), f"none of {said} in:\n{log}")
            self.assertEqual(log.count("interrupted by SIG"), 1)
            self.assertEqual(output.count("interrupted by SIG"), 1, "rank 0 alone gives the hint")
        stopped_at = len(read_metrics(run_dir))
        resumed = self.train(run_dir, 2, 2, settings, resume=True)
        self.assertEqual(resumed.returncode, 0, resumed.stdout + resumed.stderr)

        columns = ("kind", "update", "tokens", "epoch", "lr", "loss", "perplexity", "accuracy", "grad_norm")
        rows = lambda d: [tuple(r[c] for c in columns) for r in read_metrics(d)]  # noqa: E731
        self.assertLess(stopped_at, len(rows(straight_dir)), "the run finished before the signal: nothing tested")
        self.assertEqual(rows(run_dir), rows(straight_dir))
        a, b = final_weights(run_dir), final_weights(straight_dir)
        for name in a:
            self.assertTrue(np.array_equal(a[name], b[name]), f"{name} differs after the resume")

    def test_a_run_resumes_with_another_number_of_processes(self):
        # One process of batch 4 to update 10, then 2 processes of batch 2: the same global
        # batches, so the rows of one process of batch 4 all the way, within the tolerance.
        one_dir = os.path.join(self.dir.name, "one_all_the_way")
        one = self.train(one_dir, 4, 1)
        self.assertEqual(one.returncode, 0, one.stdout + one.stderr)
        mixed_dir = os.path.join(self.dir.name, "one_then_two")
        shutil.copytree(one_dir, mixed_dir)
        shutil.rmtree(os.path.join(mixed_dir, "checkpoints", "checkpoint_00000020"))
        mixed = self.train(mixed_dir, 2, 2, resume=True)
        self.assertEqual(mixed.returncode, 0, mixed.stdout + mixed.stderr)
        self.assertIn("resum", mixed.stderr)
        rows_one, rows_mixed = read_metrics(one_dir), read_metrics(mixed_dir)
        self.assertEqual([(r["kind"], r["update"], r["tokens"]) for r in rows_one],
                         [(r["kind"], r["update"], r["tokens"]) for r in rows_mixed])
        for a, b in zip(rows_one, rows_mixed):
            self.assertTrue(np.isclose(float(a["loss"]), float(b["loss"]), rtol=RTOL), f"{a} against {b}")
        # Another global batch is another data order: refused, naming the key.
        other = self.train(mixed_dir, 3, 2, resume=True)
        self.assertNotEqual(other.returncode, 0)
        self.assertIn("train.batch_size (4 in the checkpoint, 6 now)", other.stdout + other.stderr)

    def test_a_hung_rank_ends_the_job_after_the_peer_timeout(self):
        run_dir = os.path.join(self.dir.name, "hung")
        job, output_file = self.start_until_checkpoint_50(
            run_dir, ["--set", "train.max_updates=100000", "--set", "checkpoint.every=50", "--set", "validation.every=50"],
            ["--peer-timeout", "3"])
        ranks = self.ranks_of(job.pid)
        self.assertEqual(len(ranks), 2, f"mpirun's two processes not found: {ranks}")
        # Rank 1 where /proc tells the ranks apart, else either one: the other reports.
        hung, rank = next((r for r in ranks if r[1] == 1), ranks[0])
        os.kill(hung, signal.SIGSTOP)  # hung: alive, never answering
        self.addCleanup(lambda: subprocess.run(["kill", "-KILL", str(hung)], stderr=subprocess.DEVNULL))
        started = time.time()
        output = self.output_of(job, output_file, timeout=120)
        self.assertNotEqual(job.returncode, 0)
        self.assertLess(time.time() - started, 60, "the job did not end soon after the timeout")
        reporter = "0" if rank == 1 else "[01]"
        self.assertRegex(output, f"rank {reporter} of 2: no answer from the other processes for 3 s in MPI_")
        # The last checkpoint stays whole: the run resumes from it (one process of batch 4).
        resumed = self.train(run_dir, 4, 1, ["--set", "train.max_updates=10000", "--set", "checkpoint.every=50",
                                             "--set", "train.max_tokens=1"], resume=True)
        self.assertEqual(resumed.returncode, 0, resumed.stdout + resumed.stderr)
        self.assertIn("resum", resumed.stderr)

    def test_other_commands_refuse_to_run_under_mpirun(self):
        r = subprocess.run(mpirun_command(2) + [BINARY, "prepare", "--recipe", TINY, "--set",
                                                f"data.prepared_dir={self.prepared}"],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("only `linformer train` runs data-parallel", r.stdout + r.stderr)


def main():
    global BINARY
    BINARY = os.path.abspath(sys.argv.pop(1))
    version = subprocess.run([BINARY, "--version"], capture_output=True, text=True).stdout
    if "data parallel: MPI" not in version or shutil.which("mpirun") is None:
        print("skipped: this build has no MPI, or mpirun is missing (" + version.splitlines()[-1] + ")")
        sys.exit(SKIP)
    unittest.main()


if __name__ == "__main__":
    main()
