#!/usr/bin/python3
"""Runs the external sqllogictest corpus against shaled and counts results.

    run_corpus.py --shaled build/src/shaled [FILE.test ...]
    run_corpus.py --port 3306 [FILE.test ...]      # an already running server

Default files: select1.test ... select5.test and evidence/*.test from
<repo>/../shared/sqllogictest (SQLite's corpus with MySQL 8 expectations;
its README says where it comes from). Prints "file: N passed, N failed,
N skipped" per file, the totals, and the most common failure reasons.
Not part of ctest: most records need features Shale lacks (tables without
a primary key, aggregates, joins, subqueries), so it measures progress;
it exits 0 unless the corpus is missing files it was asked to run.
Each record has a time limit (--timeout, default 10 s); with --shaled,
a server that died or stopped answering is restarted and the file goes
on, at most --max-restarts times per file (then "server gone" ends that
file and its remaining records are not counted).
"""
import argparse
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
CORPUS = os.path.join(REPO, "..", "shared", "sqllogictest")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import pymysql  # noqa: E402
import slt  # noqa: E402
from shaled_fixture import ShaledProcess  # noqa: E402


def default_files():
    files = [os.path.join(CORPUS, "select%d.test" % i) for i in range(1, 6)]
    files += sorted(glob.glob(os.path.join(CORPUS, "evidence", "*.test")))
    return [f for f in files if os.path.exists(f)]


def responsive(host, port):
    try:
        conn = pymysql.connect(host=host, port=port, user="root", password="",
                               connect_timeout=5, read_timeout=5)
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
        conn.close()
        return True
    except pymysql.MySQLError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*")
    server = ap.add_mutually_exclusive_group(required=True)
    server.add_argument("--shaled", help="the shaled binary to start")
    server.add_argument("--port", type=int, help="port of a running server (with --host)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--timeout", type=float, default=10, help="seconds per record")
    ap.add_argument("--max-restarts", type=int, default=2,
                    help="restarts of a stuck shaled per file before the rest of the file is skipped")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every failing record")
    args = ap.parse_args()
    files = args.files or default_files()
    if not files:
        print("no corpus at %s; skipping" % os.path.normpath(CORPUS))
        return 0
    node = None
    port = args.port
    if args.shaled:
        node = ShaledProcess(args.shaled)
        node.start()
        port = node.port
    runner = slt.Runner(args.host, port, "root", "", timeout=args.timeout, quiet=not args.verbose)
    restarts = [0]
    file_restarts = [0]
    if node is not None:
        def recover():
            if file_restarts[0] >= args.max_restarts:
                raise slt.ServerGone("gave up on this file after %d restarts" % file_restarts[0])
            restarts[0] += 1
            file_restarts[0] += 1
            tail = node.log().strip().splitlines()[-1:] or [""]
            print("shaled stopped answering (last log line: %s); restarting it" % tail[0][:200],
                  flush=True)
            node.kill()
            node.start()
        runner.recover = recover
    total = slt.Counts()
    try:
        for path in files:
            if node is not None and not responsive(args.host, port):
                state = ("exited with %s" % node.proc.returncode if node.proc.poll() is not None
                         else "does not answer")
                print("shaled %s; restarting it" % state, flush=True)
                node.kill()
                node.start()
            file_restarts[0] = 0
            counts = runner.run_file(path)
            print("%s: %s" % (os.path.relpath(path, CORPUS), counts.summary()), flush=True)
            total.add(counts)
    finally:
        runner.close()
        if node is not None:
            node.cleanup()
    print("total: " + total.summary() + (", %d shaled restarts" % restarts[0] if restarts[0] else ""))
    reasons = sorted(runner.errors.items(), key=lambda kv: -kv[1])
    print("failures by reason: " + ", ".join("%s: %d" % kv for kv in reasons[:15]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
