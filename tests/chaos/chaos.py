#!/usr/bin/env python3
"""Chaos on a cluster of edgetrain-node agents (issue #16).

Runs training jobs across nodes -- sync, async, local-SGD, and runs that ship the dataset to
the nodes first -- and, at random moments during each, hurts a random node the way a site does:

  kill       SIGKILL, no goodbye; the device comes back 3-10 s later on the same address
  freeze     SIGSTOP for 5-20 s (sockets stay open, nothing answers), then SIGCONT
  partition  the node's cable pulled for 5-20 s: its link down, nothing passes (edge lab only)
  degrade    10 % loss and 200 ms delay each way for 5-20 s (netem; where the kernel has no
             netem, as here: the link cut to 2 Mbit/s with a 200 ms queue)  (edge lab only)

and checks, after every run, what the product promises from outside the process:

  ended      the run ended within its deadline: finished, or stopped with a stated reason
             (exit 1 and a non-empty "error"); never a hang, a crash or a usage error
  epochs     a finished run has every epoch it was asked for, and each counts every training
             sample exactly once over the nodes that finished it ("samples" == --train-limit)
  replicas   every node that finished holds the same weights (one fingerprint), except in
             async, where each node holds its own copy and the parameter server's is the model
  saved      the weights written (--save) are the run's: `evaluate` on them gives the test
             accuracy the run reported, to the sample
  agents     after the fault is undone every agent is alive and answers its discovery probe
             (a fault never takes the agent down), and its RSS stays bounded over the session

With --lab (root, network namespaces): the nodes are an edge lab's (`edgetrain-cli lab up`),
so links can be cut and degraded with tc; otherwise plain local nodes, kill and freeze only.

  tests/chaos/chaos.py --bin build/default/bin --out /tmp/chaos [--faults 100] [--lab|--auto]
      [--devices pi4:3] [--nodes 3] [--seed 1] [--modes sync,async,local-sgd,ship]

Writes OUT/chaos.json (every run, every fault, every check) and OUT/runs/N.{json,err}. Exit
status: 0 all invariants held, 1 one did not, 2 the chaos could not be set up.
"""
import argparse
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

FASHION = "/usr/share/datasets/fashion-mnist"


def log(*args):
    print(time.strftime("%H:%M:%S"), *args, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except OSError:
        return False


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Node:
    """One agent: where it listens, its process, and how to start it again after a kill."""

    def __init__(self, name, host, port, discovery_port, pid, netns=None, host_link=None):
        self.name, self.host, self.port = name, host, port
        self.discovery_port, self.pid = discovery_port, pid
        self.netns, self.host_link = netns, host_link
        self.proc = None  # ours when we started it
        self.restart_argv = None
        self.restart_cwd = None
        self.restart_env = None
        self.restart_log = None
        self.cgroup_procs = []
        self.rss_peak = 0
        self.rss_first = 0

    def address(self):
        return f"{self.host}:{self.port}"

    def remember_how_to_restart(self):
        """Read the running agent's command line, environment, cwd, log and cgroups (a lab's
        node: we did not start it)."""
        pid = self.pid
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            self.restart_argv = [a.decode() for a in f.read().split(b"\0") if a]
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = {}
            for item in f.read().split(b"\0"):
                if b"=" in item:
                    k, v = item.split(b"=", 1)
                    env[k.decode()] = v.decode()
            self.restart_env = env
        self.restart_cwd = os.readlink(f"/proc/{pid}/cwd")
        try:
            self.restart_log = os.readlink(f"/proc/{pid}/fd/2")
            if not self.restart_log.startswith("/"):
                self.restart_log = None
        except OSError:
            self.restart_log = None
        self.cgroup_procs = []
        with open(f"/proc/{pid}/cgroup") as f:
            for line in f:
                _, controllers, path = line.strip().split(":", 2)
                # a node in the middle of a job sits in its job's memory cgroup, below its own
                path = re.sub(r"/edgetrain-job-\d+$", "", path)
                for c in ("cpu", "memory"):
                    if c in controllers.split(",") and path not in ("", "/"):
                        procs = f"/sys/fs/cgroup/{c}{path}/cgroup.procs"
                        if os.path.exists(procs):
                            self.cgroup_procs.append(procs)

    def start(self):
        out = open(self.restart_log, "ab") if self.restart_log else subprocess.DEVNULL
        if self.netns:
            # Into the node's cgroups before it runs a line of its own, then into its namespace.
            script = 'for p in $CHAOS_PROCS; do echo $$ > "$p"; done; exec ip netns exec "$@"'
            env = dict(self.restart_env)
            env["CHAOS_PROCS"] = " ".join(self.cgroup_procs)
            argv = ["sh", "-c", script, "sh", self.netns] + self.restart_argv
        else:
            env, argv = self.restart_env, self.restart_argv
        self.proc = subprocess.Popen(argv, cwd=self.restart_cwd, env=env, stdout=out,
                                     stderr=out, start_new_session=True)
        self.pid = self.proc.pid

    def stop(self):
        if alive(self.pid):
            try:
                os.kill(self.pid, signal.SIGCONT)
                os.kill(self.pid, signal.SIGTERM)
            except OSError:
                pass
        if self.proc:
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def sample_rss(self):
        r = rss_bytes(self.pid)
        if r and not self.rss_first:
            self.rss_first = r
        self.rss_peak = max(self.rss_peak, r)


class Cluster:
    def __init__(self, args):
        self.args = args
        self.cli = os.path.join(args.bin, "edgetrain-cli")
        self.nodes = []
        self.lab_dir = None
        self.key = None
        self.emulated = False

    # --- setting up -----------------------------------------------------------------------
    def up(self):
        if self.args.lab or self.args.auto:
            try:
                self.lab_up()
            except SystemExit as e:
                if not self.args.auto:
                    raise
                log(f"{e}\nno lab here: plain local nodes, kill and freeze only")
                self.lab_dir = None
                self.nodes = []
                self.local_up()
        else:
            self.local_up()
        for n in self.nodes:
            n.sample_rss()

    def lab_up(self):
        self.lab_dir = os.path.join(self.args.out, "lab")
        cmd = [self.cli, "lab", "up", "--devices", self.args.devices, "--out", self.lab_dir,
               "--json"]
        if self.args.time_scale:
            cmd += ["--time-scale", str(self.args.time_scale)]
        log("lab up:", " ".join(cmd[1:]))
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"chaos: lab up failed:\n{p.stdout}\n{p.stderr}")
        with open(os.path.join(self.lab_dir, "lab.json")) as f:
            lab = json.load(f)
        self.key = os.path.join(self.lab_dir, "cluster.key")
        for n in lab["nodes"]:
            node = Node(n["name"], n["address"], n["port"], n["discovery_port"], n["pid"],
                        n.get("netns") or None, n.get("host_link") or None)
            node.remember_how_to_restart()
            self.nodes.append(node)
        self.emulated = all(n.netns and n.host_link for n in self.nodes)
        if not self.emulated:
            log("lab: not emulated (no namespaces): kill and freeze only")

    def local_up(self):
        self.key = os.path.join(self.args.out, "cluster.key")
        subprocess.run([self.cli, "key", "new", self.key, "--force"], check=True,
                       capture_output=True)
        logs = os.path.join(self.args.out, "logs")
        os.makedirs(logs, exist_ok=True)
        for i in range(self.args.nodes):
            port, disc = free_port(), free_port()
            node = Node(f"node-{i}", "127.0.0.1", port, disc, 0)
            node.restart_argv = [os.path.join(self.args.bin, "edgetrain-node"), "--name",
                                 node.name, "--port", str(port), "--discovery-port", str(disc),
                                 "--no-multicast", "--key-file", self.key, "--threads", "1"]
            node.restart_cwd = self.args.out
            node.restart_env = dict(os.environ, OMP_NUM_THREADS="1")
            node.restart_log = os.path.join(logs, f"{node.name}.log")
            node.start()
            self.nodes.append(node)
        deadline = time.time() + 20
        for n in self.nodes:
            while not self.answers(n):
                if time.time() > deadline:
                    raise SystemExit(f"chaos: {n.name} did not come up")
                time.sleep(0.2)

    def down(self):
        for n in self.nodes:
            if n.proc:
                n.stop()
        if self.lab_dir:
            subprocess.run([self.cli, "lab", "down", "--out", self.lab_dir],
                           capture_output=True)

    # --- looking at nodes from outside -------------------------------------------------------
    def answers(self, node):
        """The agent answers its discovery probe (the CLI's padded probe)."""
        p = subprocess.run([self.cli, "nodes", "--probe", f"{node.host}:{node.discovery_port}",
                            "--timeout", "1500ms", "--json"], capture_output=True, text=True)
        try:
            found = json.loads(p.stdout.strip().splitlines()[-1]).get("nodes", [])
        except (ValueError, IndexError):
            return False
        return any(f.get("name") == node.name for f in found)

    # --- links -------------------------------------------------------------------------------
    def qdiscs(self, node):
        """The root qdisc of each end of the node's link, as `tc qdisc change` takes it back:
        netem where the kernel has it, else tbf (the lab's fallback)."""
        ends = []
        for prefix, dev in (([], node.host_link), (["-n", node.netns], "eth0")):
            out = subprocess.run(["tc"] + prefix + ["qdisc", "show", "dev", dev],
                                 capture_output=True, text=True, check=True).stdout
            m = re.search(r"qdisc (netem|tbf) \S+ root refcnt \d+ (.*)", out)
            if not m:
                raise RuntimeError(f"{node.name}: no netem or tbf qdisc on {dev}: {out.strip()}")
            params = ["latency" if w == "lat" else w for w in m.group(2).split()]
            ends.append((prefix, dev, m.group(1), params))
        return ends

    def cut(self, node, down):
        """A partition: the node's cable pulled (its veth's host end down; the node sees no
        carrier and nothing passes either way), or put back."""
        subprocess.run(["ip", "link", "set", "dev", node.host_link, "down" if down else "up"],
                       check=True, capture_output=True)

    def degrade(self, ends):
        """10 % loss and 200 ms delay each way (netem); without netem, a 2 Mbit/s link with a
        200 ms queue (tbf: this kernel cannot drop or delay at random)."""
        for prefix, dev, kind, params in ends:
            if kind == "netem":
                q = ["netem"] + self.strip(params) + ["delay", "200ms", "loss", "10%"]
            else:
                q = ["tbf", "rate", "2mbit", "burst", "32kbit", "latency", "200ms"]
            subprocess.run(["tc"] + prefix + ["qdisc", "change", "dev", dev, "root"] + q,
                           check=True, capture_output=True)

    @staticmethod
    def strip(params):
        """netem's shown parameters without loss and delay (the fault sets its own)."""
        out, i = [], 0
        while i < len(params):
            word = params[i]
            if word in ("loss", "delay"):
                i += 2
                while i < len(params) and re.match(r"^[\d.]+(us|ms|s|%)$", params[i]):
                    i += 1
                continue
            if word == "seed":
                i += 2
                continue
            out.append(word)
            i += 1
        return out

    def restore(self, ends):
        for prefix, dev, kind, params in ends:
            subprocess.run(["tc"] + prefix + ["qdisc", "change", "dev", dev, "root", kind] +
                           params, check=True, capture_output=True)


class Fault:
    def __init__(self, kind, node, start, duration):
        self.kind, self.node, self.start, self.duration = kind, node, start, duration
        self.undone_at = None
        self.ends = None
        self.error = None

    def json(self, t0):
        return {"kind": self.kind, "node": self.node.name, "at": round(self.start - t0, 2),
                "seconds": round(self.duration, 2),
                "undone_at": round(self.undone_at - t0, 2) if self.undone_at else None,
                "error": self.error}


class Chaos:
    def __init__(self, args, cluster):
        self.args, self.c = args, cluster
        self.rng = random.Random(args.seed)
        kinds = ["kill", "freeze"]
        if cluster.emulated:
            kinds += ["partition", "degrade"]
        self.kinds = kinds
        self.runs = []
        self.fault_count = 0
        self.violations = []

    def inject(self, kind, node):
        duration = self.rng.uniform(5, 20) if kind != "kill" else self.rng.uniform(3, 10)
        f = Fault(kind, node, time.time(), duration)
        if kind == "kill":
            os.kill(node.pid, signal.SIGKILL)
            if node.proc:
                node.proc.wait()
        elif kind == "freeze":
            os.kill(node.pid, signal.SIGSTOP)
        elif kind == "partition":
            self.c.cut(node, True)
        else:
            f.ends = self.c.qdiscs(node)
            self.c.degrade(f.ends)
        return f

    def undo(self, f):
        n = f.node
        try:
            if f.kind == "kill":
                n.start()
            elif f.kind == "freeze":
                os.kill(n.pid, signal.SIGCONT)
            elif f.kind == "partition":
                self.c.cut(n, False)
            else:
                self.c.restore(f.ends)
        except Exception as e:  # noqa: BLE001 -- recorded as a violation below
            f.error = f"undo failed: {e}"
        f.undone_at = time.time()

    def train_command(self, mode, index, save):
        a = self.args
        cmd = [self.c.cli, "train", "--nodes", ",".join(n.address() for n in self.c.nodes),
               "--key-file", self.c.key, "--model", "lenet5", "--batch", "32",
               "--epochs", str(a.epochs), "--train-limit", str(a.train_limit),
               "--test-limit", str(a.test_limit), "--collective-timeout", "3s",
               "--seed", str(1000 + index), "--save", save, "--json"]
        if mode == "ship":
            cmd += ["--mode", "sync", "--ship-data", "--data-dir", FASHION]
        else:
            cmd += ["--mode", mode]
        if mode == "async":
            cmd += ["--lr", "0.05"]
        if mode == "local-sgd":
            cmd += ["--local-steps", "8"]
        return cmd

    def one_run(self, index, mode):
        runs_dir = os.path.join(self.args.out, "runs")
        os.makedirs(runs_dir, exist_ok=True)
        save = os.path.join(runs_dir, f"{index}.safetensors")
        cmd = self.train_command(mode, index, save)
        t0 = time.time()
        err = open(os.path.join(runs_dir, f"{index}.err"), "w")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                env=dict(os.environ, OMP_NUM_THREADS="1"))
        stdout_chunks = []
        reader = threading.Thread(target=lambda: stdout_chunks.append(proc.stdout.read()))
        reader.start()
        faults, active = [], []
        # The first fault early in a shipping run (the shipment is its first seconds).
        next_at = t0 + (self.rng.uniform(0.5, 3) if mode == "ship" else self.rng.uniform(1, 5))
        deadline = t0 + self.args.run_timeout
        hung = False
        while proc.poll() is None:
            now = time.time()
            for n in self.c.nodes:
                n.sample_rss()
            for f in list(active):
                if now >= f.start + f.duration:
                    self.undo(f)
                    active.remove(f)
                    next_at = max(next_at, now + self.rng.uniform(2, 8))
            busy = {f.node.name for f in active}
            idle = [n for n in self.c.nodes if n.name not in busy]
            # At most --concurrent nodes hurt at once (never all of them).
            if now >= next_at and len(active) < self.args.concurrent and len(idle) > 1:
                node = self.rng.choice(idle)
                kinds = self.kinds
                if node is self.c.nodes[0] and self.args.steady:
                    kinds = [k for k in kinds if k != "kill"]
                kind = self.rng.choice(kinds)
                f = self.inject(kind, node)
                faults.append(f)
                active.append(f)
                log(f"run {index} ({mode}): {kind} {node.name} for {f.duration:.1f} s")
                next_at = now + self.rng.uniform(2, 8)
            if now > deadline:
                hung = True
                proc.kill()
                break
            time.sleep(0.2)
        proc.wait()
        reader.join()
        err.close()
        for f in active:
            self.undo(f)
        seconds = time.time() - t0
        out = "".join(stdout_chunks)
        with open(os.path.join(runs_dir, f"{index}.json"), "w") as f:
            f.write(out)
        result = None
        try:
            result = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            pass
        checks = self.check(mode, proc.returncode, hung, result, faults, save)
        self.fault_count += len(faults)
        run = {"run": index, "mode": mode, "seconds": round(seconds, 1),
               "exit": proc.returncode, "finished": bool(result and result.get("finished")),
               "error": (result or {}).get("error"),
               "test_accuracy": (result or {}).get("test_accuracy"),
               "epoch_nodes": [e.get("nodes") for e in (result or {}).get("epochs", [])],
               "events": [e.get("kind") for e in (result or {}).get("events", [])],
               "faults": [f.json(t0) for f in faults], "checks": checks}
        self.runs.append(run)
        failed = [k for k, v in checks.items() if v is not True]
        log(f"run {index} ({mode}): exit {proc.returncode}, {len(faults)} faults, "
            f"{seconds:.0f} s, " + ("all invariants held" if not failed else
                                    "FAILED " + "; ".join(f"{k}: {checks[k]}" for k in failed)))
        for k in failed:
            self.violations.append(f"run {index} ({mode}) {k}: {checks[k]}")
        return run

    def check(self, mode, code, hung, r, faults, save):
        a = self.args
        c = {}
        # ended: finished, or stopped with a reason
        if hung:
            c["ended"] = f"still running after {a.run_timeout} s"
        elif code < 0:
            c["ended"] = f"the CLI died of signal {-code}"
        elif r is None:
            c["ended"] = f"exit {code} without a JSON line"
        elif code == 0 and r.get("finished"):
            c["ended"] = True
        elif code == 1 and r.get("error"):
            c["ended"] = True
        else:
            c["ended"] = f"exit {code}, finished {r.get('finished')}, error {r.get('error')!r}"
        finished = c["ended"] is True and code == 0
        if finished:
            epochs = r.get("epochs", [])
            bad = [(e.get("epoch"), e.get("samples")) for e in epochs
                   if e.get("samples") != a.train_limit]
            if len(epochs) != a.epochs:
                c["epochs"] = f"{len(epochs)} epochs of {a.epochs}"
            elif bad:
                c["epochs"] = f"epochs counting other than {a.train_limit} samples: {bad}"
            else:
                c["epochs"] = True
            prints = {n["node"]: n["fingerprint"] for n in r.get("nodes", [])}
            if mode == "async":
                c["replicas"] = True if prints else "no node reported its weights"
            elif not prints:
                c["replicas"] = "no node reported its weights"
            elif len(set(prints.values())) != 1:
                c["replicas"] = f"different weights: {prints}"
            else:
                c["replicas"] = True
            c["saved"] = self.check_saved(save, r)
        # agents: every fault undone cleanly, every agent alive and answering
        undone = [f.error for f in faults if f.error]
        dead, silent = [], []
        for n in self.c.nodes:
            if not alive(n.pid):
                dead.append(n.name)
        time.sleep(0.5)
        for n in self.c.nodes:
            if n.name not in dead:
                ok = False
                for _ in range(20):  # a restarted agent takes a moment to listen
                    if self.c.answers(n):
                        ok = True
                        break
                    time.sleep(0.5)
                if not ok:
                    silent.append(n.name)
        if undone or dead or silent:
            c["agents"] = f"undo errors {undone}, dead {dead}, not answering {silent}"
        else:
            c["agents"] = True
        return c

    def check_saved(self, save, r):
        if not os.path.exists(save):
            return f"{save} was not written"
        p = subprocess.run([self.c.cli, "evaluate", "--model", "lenet5", "--weights", save,
                            "--test-limit", str(self.args.test_limit), "--json"],
                           capture_output=True, text=True,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
        try:
            ev = json.loads(p.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return f"evaluate failed: {p.stderr.strip()[-300:]}"
        reported = r.get("test_accuracy")
        got = ev.get("test_accuracy", ev.get("accuracy"))
        if reported is None or got is None:
            return f"no accuracy to compare (run {reported}, evaluate {got})"
        if round(got * self.args.test_limit) != round(reported * self.args.test_limit):
            return f"saved weights score {got:.4f}, the run reported {reported:.4f}"
        return True


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def thread_count(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def idle_sample(cluster, started, writer):
    """Every agent between two runs (no job on it): RSS, open descriptors, threads."""
    t = round(time.time() - started, 1)
    for n in cluster.nodes:
        row = [t, n.name, n.pid, rss_bytes(n.pid), fd_count(n.pid), thread_count(n.pid)]
        writer.write(",".join(str(v) for v in row) + "\n")
    writer.flush()


def steady_agent(path, name, warmup_seconds):
    """The idle samples of one agent that lived through the whole session (never killed):
    after warm-up, its first and last RSS, descriptors and threads, and the largest."""
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            t, node, pid, rss, fds, threads = line.strip().split(",")
            if node == name:
                rows.append((float(t), int(pid), int(rss), int(fds), int(threads)))
    if not rows or len({r[1] for r in rows}) != 1:
        return None  # restarted: not one process's history
    after = [r for r in rows if r[0] >= warmup_seconds] or rows[-1:]
    first, last = after[0], after[-1]
    return {"node": name, "samples": len(rows), "warmup_seconds": warmup_seconds,
            "rss_after_warmup": first[2], "rss_last": last[2],
            "rss_max": max(r[2] for r in after), "fds_after_warmup": first[3],
            "fds_last": last[3], "fds_max": max(r[3] for r in after),
            "threads_after_warmup": first[4], "threads_last": last[4],
            "threads_max": max(r[4] for r in after)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default="build/default/bin")
    p.add_argument("--out", required=True)
    p.add_argument("--faults", type=int, default=100, help="stop after this many faults")
    p.add_argument("--max-runs", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lab", action="store_true", help="an edge lab's nodes (root)")
    p.add_argument("--auto", action="store_true",
                   help="an edge lab where one can be set up, else plain local nodes")
    p.add_argument("--devices", default="pi4:3", help="with --lab: the lab's devices")
    p.add_argument("--time-scale", type=float, default=0, help="with --lab: lab up's")
    p.add_argument("--nodes", type=int, default=3, help="without --lab: local nodes")
    p.add_argument("--modes", default="sync,async,local-sgd,ship")
    p.add_argument("--concurrent", type=int, default=1,
                   help="at most this many nodes hurt at once (a new fault 2-8 s after the "
                        "last one ended)")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--train-limit", type=int, default=12800)
    p.add_argument("--test-limit", type=int, default=1000)
    p.add_argument("--run-timeout", type=float, default=600)
    p.add_argument("--minutes", type=float, default=0,
                   help="soak: start runs for this long (then --faults is not a limit)")
    p.add_argument("--steady", action="store_true",
                   help="the first node is never killed (frozen, cut and slowed only): its "
                        "agent's idle RSS, descriptors and threads between runs are the soak's "
                        "measurement, and must not grow after warm-up")
    args = p.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    if not os.path.exists(os.path.join(FASHION, "train-images-idx3-ubyte.gz")) and \
            not os.path.exists(os.path.join(FASHION, "train-images-idx3-ubyte")):
        print(f"chaos: Fashion-MNIST is missing in {FASHION} (dataset-fashion-mnist)",
              file=sys.stderr)
        return 2
    modes = args.modes.split(",")
    cluster = Cluster(args)
    chaos = None
    started = time.time()
    try:
        cluster.up()
        chaos = Chaos(args, cluster)
        log(f"{len(cluster.nodes)} nodes, faults: {', '.join(chaos.kinds)}; seed {args.seed}")
        index = 0
        samples = open(os.path.join(args.out, "agents.csv"), "w")
        samples.write("seconds,node,pid,rss_bytes,fds,threads\n")
        def more():
            if index >= args.max_runs:
                return False
            if args.minutes > 0:
                return time.time() - started < args.minutes * 60
            return chaos.fault_count < args.faults
        while more():
            idle_sample(cluster, started, samples)
            chaos.one_run(index, modes[index % len(modes)])
            index += 1
        time.sleep(2)
        idle_sample(cluster, started, samples)
        samples.close()
    finally:
        cluster.down()
    counts = {}
    for run in chaos.runs:
        for f in run["faults"]:
            key = f"{run['mode']}/{f['kind']}"
            counts[key] = counts.get(key, 0) + 1
    summary = {
        "command": "chaos", "lab": cluster.lab_dir is not None, "emulated": cluster.emulated,
        "nodes": len(cluster.nodes), "seed": args.seed, "runs": len(chaos.runs),
        "faults": chaos.fault_count, "faults_by_mode_and_kind": counts,
        "runs_finished": sum(1 for r in chaos.runs if r["finished"]),
        "runs_stopped_with_reason": sum(1 for r in chaos.runs
                                        if not r["finished"] and r["checks"]["ended"] is True),
        "violations": chaos.violations,
        "agent_rss_first_bytes": {n.name: n.rss_first for n in cluster.nodes},
        "agent_rss_peak_bytes": {n.name: n.rss_peak for n in cluster.nodes},
        "seconds": round(time.time() - started, 1), "run_list": chaos.runs,
    }
    if args.steady and chaos.runs:
        warmup = min(600.0, 0.1 * summary["seconds"])
        steady = steady_agent(os.path.join(args.out, "agents.csv"), cluster.nodes[0].name, warmup)
        summary["steady_agent"] = steady
        if steady is None:
            chaos.violations.append("the steady agent was restarted")
        else:
            # Descriptors and threads of an idle agent come back to where they were; its RSS
            # may move with the allocator, not grow with the hours.
            if steady["fds_last"] > steady["fds_after_warmup"]:
                chaos.violations.append(f"idle agent's descriptors grew: {steady}")
            if steady["threads_last"] > steady["threads_after_warmup"]:
                chaos.violations.append(f"idle agent's threads grew: {steady}")
            if steady["rss_last"] > 1.10 * steady["rss_after_warmup"]:
                chaos.violations.append(f"idle agent's RSS grew more than 10 %: {steady}")
        summary["violations"] = chaos.violations
    with open(os.path.join(args.out, "chaos.json"), "w") as f:
        json.dump(summary, f, indent=1)
    log(f"{chaos.fault_count} faults over {len(chaos.runs)} runs "
        f"({summary['runs_finished']} finished, {summary['runs_stopped_with_reason']} stopped "
        f"with a reason): {len(chaos.violations)} violations")
    for v in chaos.violations:
        log("  " + v)
    return 1 if chaos.violations else 0


if __name__ == "__main__":
    sys.exit(main())
