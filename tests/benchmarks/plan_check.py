#!/usr/bin/env python3
"""The cluster planner against measurement on an edge lab (issue #12, section 3).

For every case (model x batch size) it runs `edgetrain-cli plan` once over all the lab's nodes,
then trains the same job on every subset of the nodes (sync), and compares: per objective (time,
power, energy, EDP) whether the planner's pick is the measured best, or among the best two;
per subset the predicted training time against the measured one. Run as root (the lab needs
it); writes a CSV of every run and a summary JSON to --out.

  sudo tests/benchmarks/plan_check.py --bin build/default/bin --out docs/evidence/issue-12/plan-check
"""
import argparse, csv, itertools, json, os, statistics, subprocess, sys, time

p = argparse.ArgumentParser()
p.add_argument("--bin", default="build/default/bin")
p.add_argument("--out", default="/tmp/plan-check")
p.add_argument("--devices", default="pi3:2,pi4:2,pi5:1")
p.add_argument("--models", default="lenet5:8192,mlp:4096", help="model:train-limit,...")
p.add_argument("--batches", default="32,64,128")
p.add_argument("--test-limit", default="1024")
p.add_argument("--measured", help="runs.csv of an earlier check: plan again, train nothing, and "
               "judge the new plans against those measurements")
a = p.parse_args()
earlier = {}
if a.measured:
    for r in csv.DictReader(open(a.measured)):
        earlier[(r["model"], r["batch"], tuple(r["nodes"].split("+")))] = (
            float(r["measured_seconds"]), float(r["measured_joules"]))
cli = os.path.join(a.bin, "edgetrain-cli")
os.makedirs(a.out, exist_ok=True)
lab = os.path.join(a.out, "lab")
env = dict(os.environ, LC_ALL="C")


def run(args, check=True):
    r = subprocess.run([cli] + args, capture_output=True, text=True, env=env)
    if check and r.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(args), r.stderr[-2000:]))
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    return (json.loads(lines[-1]) if lines else {}), r.stderr


subprocess.run([cli, "lab", "down", "--out", lab], capture_output=True)
run(["lab", "up", "--devices", a.devices, "--out", lab])
addresses = open(os.path.join(lab, "nodes")).read().split()
key = os.path.join(lab, "cluster.key")
status, _ = run(["lab", "status", "--out", lab, "--json"])
names = [n["name"] for n in status["nodes"]]
objectives = {
    "time": lambda s, j: s,
    "power": lambda s, j: j / s,
    "energy": lambda s, j: j,
    "edp": lambda s, j: j * s,
}
rows, cases, errors, overheads = [], [], [], []
try:
    for spec in a.models.split(","):
        model, limit = spec.split(":")
        for batch in a.batches.split(","):
            job = ["--key-file", key, "--model", model, "--train-limit", limit,
                   "--test-limit", a.test_limit, "--batch", batch]
            t0 = time.time()
            plan, _ = run(["plan", "--nodes", ",".join(addresses), "--modes", "sync",
                           "--objective", "time", "--json"] + job)
            predicted = {tuple(c["nodes"]): c for c in plan["candidates"]}
            json.dump(plan, open(os.path.join(a.out, "plan-%s-%s.json" % (model, batch)), "w"))
            measured = {}
            for k in range(1, len(addresses) + 1):
                for subset in itertools.combinations(range(len(addresses)), k):
                    key_names = tuple(names[i] for i in subset)
                    if a.measured:
                        if (model, batch, key_names) not in earlier:
                            continue
                        s, j = earlier[(model, batch, key_names)]
                    else:
                        r, err = run(["train", "--nodes",
                                      ",".join(addresses[i] for i in subset), "--json"] + job,
                                     check=False)
                        if "training_seconds" not in r:
                            print("no measurement for", key_names, err[-300:], file=sys.stderr)
                            continue
                        s, j = r["training_seconds"], r.get("training_joules", 0.0)
                    measured[key_names] = (s, j)
                    c = predicted[key_names]
                    rows.append(dict(model=model, batch=batch, nodes="+".join(key_names),
                                     predicted_seconds=c["predicted_seconds"], measured_seconds=s,
                                     predicted_joules=c["predicted_joules"], measured_joules=j,
                                     predicted_watts=c["predicted_watts"],
                                     measured_watts=j / s if s > 0 else 0))
                    errors.append(abs(c["predicted_seconds"] - s) / s)
            for name, f in objectives.items():
                suitable = [c for c in plan["candidates"] if c["suitable"]]
                pick = min(suitable, key=lambda c: (c["predicted_" + {"time": "seconds", "power": "watts", "energy": "joules", "edp": "edp"}[name]], c["predicted_seconds"]))
                order = sorted(measured, key=lambda n: (f(*measured[n]), measured[n][0]))
                pick_nodes = tuple(pick["nodes"])
                rank = order.index(pick_nodes) + 1 if pick_nodes in order else None
                best = measured[order[0]]
                cases.append(dict(model=model, batch=batch, objective=name,
                                  picked="+".join(pick_nodes), measured_best="+".join(order[0]),
                                  rank=rank, picked_value=f(*measured[pick_nodes]),
                                  best_value=f(*best)))
            # profiling against the best cluster's (measured) training time for this job
            best_time = min(v[0] for v in measured.values())
            overheads.append(dict(model=model, batch=batch,
                                  profiling_seconds=plan["profiling_seconds"],
                                  best_training_seconds=best_time))
            print("%s batch %s: %d subsets in %.0f s" % (model, batch, len(measured),
                                                         time.time() - t0), file=sys.stderr)
finally:
    subprocess.run([cli, "lab", "down", "--out", lab], capture_output=True)

with open(os.path.join(a.out, "runs.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
with open(os.path.join(a.out, "cases.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(cases[0].keys()))
    w.writeheader()
    w.writerows(cases)
best = sum(1 for c in cases if c["rank"] == 1)
top2 = sum(1 for c in cases if c["rank"] in (1, 2))
summary = dict(devices=a.devices, cases=len(cases), best=best, best_or_second=top2,
               best_fraction=best / len(cases), best_or_second_fraction=top2 / len(cases),
               median_time_error=statistics.median(errors),
               p90_time_error=sorted(errors)[int(0.9 * (len(errors) - 1))],
               runs=len(rows), profiling=overheads,
               # the job length at which profiling is 5 % of it
               median_profiling_seconds=statistics.median(o["profiling_seconds"] for o in overheads))
json.dump(summary, open(os.path.join(a.out, "summary.json"), "w"), indent=1)
print(json.dumps(summary, indent=1))
