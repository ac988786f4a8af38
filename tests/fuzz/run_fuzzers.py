#!/usr/bin/python3
"""A bounded run of every protocol fuzzer (tests/fuzz/fuzz_*.cc), for ctest
(label fuzz): each runs for --seconds from its seed corpus in
tests/fuzz/corpus/<name>/ (new inputs go to a scratch directory, so the
checked-in corpus only changes by hand), and any crash, leak, sanitizer
report or timeout fails the run, printing the input that caused it.

    run_fuzzers.py --bin build/fuzz [--seconds 6] [--only packet]
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FUZZERS = ("packet", "handshake", "stmt_execute", "compressed")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="directory holding the fuzz_* binaries")
    ap.add_argument("--seconds", type=int, default=6, help="run time of each fuzzer")
    ap.add_argument("--only", help="run only this fuzzer")
    args = ap.parse_args()
    failed = []
    for name in FUZZERS:
        if args.only and name != args.only:
            continue
        binary = os.path.join(args.bin, "fuzz_" + name)
        seeds = os.path.join(HERE, "corpus", name)
        with tempfile.TemporaryDirectory(prefix="shale-fuzz-") as scratch:
            work = os.path.join(scratch, "corpus")
            os.mkdir(work)
            cmd = [binary, work, seeds, "-max_total_time=%d" % args.seconds,
                   "-timeout=10", "-rss_limit_mb=2048", "-max_len=4096",
                   "-artifact_prefix=" + scratch + "/", "-print_final_stats=1"]
            run = subprocess.run(cmd, capture_output=True, text=True)
            stats = [l for l in run.stderr.splitlines() if l.startswith("stat::number_of_executed_units")]
            print("fuzz_%s: exit %d, %s" % (name, run.returncode, stats[0] if stats else "no stats"))
            if run.returncode != 0:
                failed.append(name)
                print(run.stderr[-6000:])
                for artifact in glob.glob(os.path.join(scratch, "*-*")):
                    with open(artifact, "rb") as f:
                        print("input %s: %s" % (os.path.basename(artifact), f.read().hex()))
    if failed:
        print("FAILED: " + ", ".join(failed))
        sys.exit(1)
    print("%d passed, 0 failed" % (len(FUZZERS) if not args.only else 1))


if __name__ == "__main__":
    main()
