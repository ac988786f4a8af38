#!/usr/bin/python3
"""Runs run.py for every combination of workloads, nemeses and seeds, one
cluster at a time, and prints a table of verdicts (ctest jepsen_long).

    tests/jepsen/suite.py --shaled build/src/shaled [--workloads register,bank,append]
        [--nemeses none,kill,pause,partition,mixed] [--seeds 1,2] [--duration 45] [--out DIR]
        [-- extra run.py arguments]

Each run keeps its directory under --out (default: a new temporary
directory, printed) as <workload>-<nemesis>-<seed>/. The partition nemesis
is skipped (not failed) where network namespaces are unavailable. Exit
status: 0 when every run was valid, 1 otherwise.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULT = {0: "valid", 1: "INVALID", 2: "RUN ERROR", 3: "unknown", 77: "skipped", 130: "interrupted"}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shaled", required=True)
    p.add_argument("--workloads", default="register,bank,append")
    p.add_argument("--nemeses", default="none,kill,pause,partition,mixed")
    p.add_argument("--seeds", default="1,2")
    p.add_argument("--duration", type=float, default=45)
    p.add_argument("--out")
    p.add_argument("--cache-dir")
    args, extra = p.parse_known_args()
    extra = [a for a in extra if a != "--"]
    out = os.path.abspath(args.out or tempfile.mkdtemp(prefix="shale-jepsen-suite-"))
    os.makedirs(out, exist_ok=True)
    rows = []
    for workload in args.workloads.split(","):
        for nemesis in args.nemeses.split(","):
            for seed in args.seeds.split(","):
                name = "%s-%s-%s" % (workload, nemesis, seed)
                cmd = [sys.executable, os.path.join(HERE, "run.py"), "--shaled", args.shaled, "--workload", workload,
                       "--nemesis", nemesis, "--seed", seed, "--duration", str(args.duration),
                       "--out", os.path.join(out, name), "--skip-if-no-netns"] + extra
                if args.cache_dir:
                    cmd += ["--cache-dir", args.cache_dir]
                print("=== %s" % " ".join(cmd), flush=True)
                t0 = time.time()
                rc = subprocess.call(cmd)
                rows.append((name, rc, time.time() - t0))
                print("=== %s: %s (%.0f s)" % (name, RESULT.get(rc, "exit %d" % rc), time.time() - t0), flush=True)
                if rc == 130:
                    break
    print("\nsuite results (%s):" % out)
    for name, rc, secs in rows:
        print("  %-28s %-12s %4.0f s" % (name, RESULT.get(rc, "exit %d" % rc), secs))
    bad = [r for r in rows if r[1] not in (0, 77)]
    print("%d runs, %d not valid" % (len(rows), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
