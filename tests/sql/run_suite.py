#!/usr/bin/python3
"""Runs the SQL suite (tests/sql/*.test) against a real shaled.

    run_suite.py --shaled build/src/shaled [FILE.test ...]
    run_suite.py --port 3306 [FILE.test ...]      # an already running server
    run_suite.py --shaled build/src/shaled --shaled-arg=--slices=1
    run_suite.py --shaled build/src/shaled --restart-every 5

Starts shaled on a free loopback port with a temporary data directory
(tests/e2e/shaled_fixture.py), runs slt.py over the files (default: every
tests/sql/*.test), stops the server, and exits non-zero if any record
failed. The same files run in several configurations (tests/CMakeLists.txt,
label sql): sql_logic (defaults: 4 slices per table), sql_logic_one_slice
(--slices=1), sql_logic_restart (shaled restarted every few records, so
every answer after a restart comes from what was made durable).
"""
import argparse
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
# Records that read session state the previous statement left behind.
READS_PREVIOUS_STATEMENT = re.compile(
    r"^\s*(SHOW\s+(WARNINGS|ERRORS|COUNT)\b|.*(@@(session\.)?(warning|error)_count|"
    r"LAST_INSERT_ID\s*\(\s*\)|ROW_COUNT\s*\(|FOUND_ROWS\s*\())", re.IGNORECASE | re.DOTALL)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import slt  # noqa: E402
from shaled_fixture import ShaledProcess  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="default: tests/sql/*.test")
    server = ap.add_mutually_exclusive_group(required=True)
    server.add_argument("--shaled", help="the shaled binary to start")
    server.add_argument("--port", type=int, help="port of a running server (with --host)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--timeout", type=float, default=30, help="seconds per record")
    ap.add_argument("--shaled-arg", action="append", default=[], metavar="ARG",
                    help="extra shaled flag, e.g. --shaled-arg=--slices=1 (repeatable)")
    ap.add_argument("--restart-every", type=int, default=0, metavar="N",
                    help="restart shaled (SIGTERM, same data directory) every N records")
    args = ap.parse_args()
    if args.restart_every and not args.shaled:
        ap.error("--restart-every needs --shaled")
    files = args.files or sorted(glob.glob(os.path.join(HERE, "*.test")))
    node = None
    port = args.port
    if args.shaled:
        node = ShaledProcess(args.shaled, args.shaled_arg)
        node.start()
        port = node.port
    runner = slt.Runner(args.host, port, "root", "", timeout=args.timeout)
    if args.restart_every:
        records = [0]

        def restart(r, rec):
            records[0] += 1
            # An open transaction (SERVER_STATUS_IN_TRANS) or autocommit off
            # (no SERVER_STATUS_AUTOCOMMIT) would not survive a restart:
            # wait until both are over. Nor would what a record reads about
            # the previous statement of the session (its warnings, counts,
            # last insert id): never restart just before such a record.
            if (r.conn is not None and (r.conn.server_status & 0x0001 or not r.conn.server_status & 0x0002)) \
                    or READS_PREVIOUS_STATEMENT.search(rec.sql):
                records[0] -= 1
                return
            if records[0] % args.restart_every == 0:
                # Session state does not survive a restart; keep the current
                # database (USE) and "no database selected" as they were,
                # and the session variables the files set.
                db = r.current_database()
                with r.conn.cursor() as cur:
                    cur.execute("SELECT @@session.time_zone, @@session.sql_mode")
                    time_zone, sql_mode = cur.fetchone()
                node.stop()
                node.start()
                r.connect(db)
                with r.conn.cursor() as cur:
                    cur.execute("SET time_zone = %s, sql_mode = %s", (time_zone, sql_mode))
        runner.before_record = restart
    total = slt.Counts()
    try:
        for path in files:
            counts = runner.run_file(path)
            print("%s: %s" % (os.path.relpath(path, REPO), counts.summary()), flush=True)
            total.add(counts)
    finally:
        runner.close()
        if node is not None:
            crashed = node.proc is not None and node.proc.poll() is not None
            if total.failed or crashed:
                print("shaled log (tail):\n" + node.log())
            node.cleanup()
    print(total.summary())
    return 1 if total.failed else 0


if __name__ == "__main__":
    sys.exit(main())
