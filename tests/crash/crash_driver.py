#!/usr/bin/python3
"""Crash driver: kill -9 a busy shaled again and again; lose nothing.

Each round starts shaled on the same data directory (with a small buffer
pool and frequent checkpoints, so kills land during page spills and
checkpoints too, and with --verify-pages-at-start so every page of the data
file and every slice tree is checked at each start), runs several clients
that commit statements, and SIGKILLs the server at a random moment. Every
statement is a multi-row INSERT, UPDATE or DELETE of one *group* of rows
whose primary keys hash to several slices, so a half-applied statement shows
as a group whose rows disagree.

The expected state lives here, outside the database: per group, the last
acknowledged state, plus each client's one statement in flight when the
server died (acknowledged or not is unknown: either outcome is allowed, but
whole). After every restart the whole table is read back and compared:

  - every acknowledged statement is present (durable WAL mode);
  - every group is whole: all of its rows, with the same version and the
    padding that version implies, or none of them;
  - no row exists that no statement wrote;
  - the secondary indexes (KEY by_grp (grp), KEY by_v (v)) agree with the
    primary key: reading the table through each of them (EXPLAIN must show
    the index) gives exactly the rows of the primary-key scan.

With --wal-sync=async the driver only checks atomicity and that what is
there is a prefix of each client's acknowledged history (async mode may lose
the last flush interval).

--mode bank runs multi-statement transactions instead: each client moves
money between two of 64 accounts (spread over 4 slices) in BEGIN; SELECT
... FOR UPDATE; UPDATE; UPDATE; INSERT into a transfer log; COMMIT. After
every restart: the total of all balances is unchanged, every acknowledged
COMMIT's transfer is in the log, no transfer that was never committed is,
and every balance equals its initial amount plus the logged transfers (so
no transaction is half there). Deadlock victims (1213) retry.

--kill-points (groups mode) places most kills exactly: each round the
server is started with SHALE_TEST_KILL_AT=<point>:<n> (storage/kill_point.h)
and SIGKILLs itself the n-th time it passes that point -- half way through
writing a checkpoint's double-write file, half way through its in-place page
writes, between those and the meta page, after the meta page (the
checkpoint whole, its double-write file not yet emptied, no checkpoint
record, no WAL segment recycled), right after a page flush to the spill
file, in the copy-on-write capture of a running checkpoint (a writer
copying a page owed to it, or the checkpoint's own pass over the pool), in
the middle of a WAL write (half of it written: what a SIGKILL inside
write(2) leaves), right after a new WAL segment was made (empty) --
or, if it has not died within the round, is killed as usual. The points are
taken in turn (from a shuffled list), so --rounds >= 9 arms every one.
A kill point may also fire in the checkpoint that ends recovery; the driver
then starts the server again (a crash during recovery).

Usage: crash_driver.py --shaled build/src/shaled [--rounds N] [--seconds S]
       [--clients C] [--seed X] [--wal-sync durable|async] [--mode groups|bank]
       [--kill-points] [--keep]
Exit status 0 when every round verified.
"""
import argparse
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from shaled_fixture import ShaledProcess  # noqa: E402

import pymysql  # noqa: E402

ROWS_PER_GROUP = 4
GROUPS_PER_CLIENT = 1_000_000  # group ids of client c are c * GROUPS_PER_CLIENT + n


def pad_for(group, version):
    """The padding a (group, version) row carries: its length varies, some
    are large enough for overflow pages."""
    rnd = random.Random(group * 7919 + version)
    n = rnd.choice([20, 200, 700, 700, 3000, 9000])
    unit = "%d.%d:" % (group, version)
    return (unit * (n // len(unit) + 1))[:n]


def row_ids(group):
    return [group * ROWS_PER_GROUP + k for k in range(ROWS_PER_GROUP)]


class Client(threading.Thread):
    """Runs statements on its own groups until the server dies."""

    def __init__(self, port, cid, acked, seed):
        super().__init__(daemon=True)
        self.port, self.cid, self.acked = port, cid, acked
        self.rnd = random.Random(seed)
        self.in_doubt = None  # (group, state before, state after)
        self.count = 0

    def next_group(self):
        return self.cid * GROUPS_PER_CLIENT + (max(self.acked) % GROUPS_PER_CLIENT + 1 if self.acked else 0)

    def run(self):
        try:
            conn = pymysql.connect(host="127.0.0.1", port=self.port, user="root", database="crash",
                                   autocommit=True, connect_timeout=5, read_timeout=30)
        except pymysql.MySQLError:
            return
        cur = conn.cursor()
        while True:
            live = [g for g, v in self.acked.items() if v is not None]
            op = self.rnd.random()
            if not live or op < 0.45:
                g = self.next_group()
                before, after = None, 0
                values = ",".join("(%d,%d,%d,'%s')" % (i, g, 0, pad_for(g, 0)) for i in row_ids(g))
                sql = "INSERT INTO t (id, grp, v, pad) VALUES " + values
            elif op < 0.85:
                g = self.rnd.choice(live)
                before = self.acked[g]
                after = before + 1
                ids = row_ids(g)
                sql = "UPDATE t SET v = %d, pad = '%s' WHERE id BETWEEN %d AND %d" % (
                    after, pad_for(g, after), ids[0], ids[-1])
            else:
                g = self.rnd.choice(live)
                before, after = self.acked[g], None
                ids = row_ids(g)
                sql = "DELETE FROM t WHERE id BETWEEN %d AND %d" % (ids[0], ids[-1])
            self.in_doubt = (g, before, after)
            try:
                cur.execute(sql)
            except (pymysql.MySQLError, OSError):
                return  # the server died (or refused): the statement stays in doubt
            self.acked[g] = after
            self.in_doubt = None
            self.count += 1


def read_table(port):
    conn = pymysql.connect(host="127.0.0.1", port=port, user="root", database="crash", autocommit=True,
                           read_timeout=120)
    cur = conn.cursor()
    cur.execute("SELECT id, grp, v, pad FROM t")
    rows = cur.fetchall()
    conn.close()
    return rows


def check_indexes(port, rows, fail):
    """Secondary indexes agree with the primary key: the rows read through
    each index (an index range covering every row; EXPLAIN must show the
    index) are exactly the rows of the primary-key scan -- no entry missing,
    none stale or dangling."""
    conn = pymysql.connect(host="127.0.0.1", port=port, user="root", database="crash", autocommit=True,
                           read_timeout=120)
    cur = conn.cursor()
    want = sorted((rid, grp, v) for rid, grp, v, _ in rows)
    for index, where in (("by_grp", "grp >= 0"), ("by_v", "v >= -1")):
        sql = "SELECT id, grp, v FROM t WHERE %s" % where
        cur.execute("EXPLAIN " + sql)
        plan = " ".join(str(r) for r in cur.fetchall())
        if index not in plan:
            fail("EXPLAIN does not read through index %s: %s" % (index, plan))
            continue
        cur.execute(sql)
        got = sorted(cur.fetchall())
        if got != want:
            missing = sorted(set(want) - set(got))[:5]
            extra = sorted(set(got) - set(want))[:5]
            fail("index %s disagrees with the primary key: %d rows vs %d; missing %s, extra %s" %
                 (index, len(got), len(want), missing, extra))
    conn.close()


def group_states(rows, fail):
    """grp -> version, checking each group is whole and self-consistent."""
    by_group = {}
    for rid, grp, v, pad in rows:
        by_group.setdefault(grp, []).append((rid, v, pad))
    states = {}
    for grp, members in by_group.items():
        ids = sorted(m[0] for m in members)
        versions = {m[1] for m in members}
        if ids != row_ids(grp) or len(versions) != 1:
            fail("group %d is not whole: ids %s versions %s" % (grp, ids, sorted(versions)))
            continue
        v = versions.pop()
        for rid, _, pad in members:
            if pad != pad_for(grp, v):
                fail("row %d of group %d version %d has the wrong padding (%d bytes)" % (rid, grp, v, len(pad)))
        states[grp] = v
    return states


ACCOUNTS = 64
INITIAL = 1000


class BankClient(threading.Thread):
    """Transfers between random accounts in transactions until the server dies."""

    def __init__(self, port, cid, acked, seed):
        super().__init__(daemon=True)
        self.port, self.cid, self.acked = port, cid, acked  # acked: transfer id -> (from, to, amount)
        self.rnd = random.Random(seed)
        self.in_doubt = None  # the transfer whose COMMIT was sent, outcome unknown
        self.count = 0
        self.seq = max(acked) % GROUPS_PER_CLIENT + 1 if acked else 1

    def run(self):
        try:
            conn = pymysql.connect(host="127.0.0.1", port=self.port, user="root", database="crash",
                                   autocommit=True, connect_timeout=5, read_timeout=60)
        except pymysql.MySQLError:
            return
        cur = conn.cursor()
        while True:
            a, b = self.rnd.sample(range(ACCOUNTS), 2)
            amount = self.rnd.randint(1, 50)
            tid = self.cid * GROUPS_PER_CLIENT + self.seq
            try:
                cur.execute("BEGIN")
                cur.execute("SELECT bal FROM acct WHERE id = %d FOR UPDATE" % a)
                cur.execute("SELECT bal FROM acct WHERE id = %d FOR UPDATE" % b)
                cur.execute("UPDATE acct SET bal = bal - %d WHERE id = %d" % (amount, a))
                cur.execute("UPDATE acct SET bal = bal + %d WHERE id = %d" % (amount, b))
                cur.execute("INSERT INTO transfers VALUES (%d, %d, %d, %d)" % (tid, a, b, amount))
                self.in_doubt = (tid, a, b, amount)
                cur.execute("COMMIT")
            except pymysql.MySQLError as e:
                if e.args and e.args[0] in (1213, 1205):
                    self.in_doubt = None
                    try:
                        cur.execute("ROLLBACK")
                    except (pymysql.MySQLError, OSError):
                        return
                    continue
                return  # the server died: the COMMIT (if sent) stays in doubt
            except OSError:
                return
            self.acked[tid] = (a, b, amount)
            self.in_doubt = None
            self.seq += 1
            self.count += 1


def run_bank(args, rnd):
    node = ShaledProcess(args.shaled, ["--buffer-pool-mb=4", "--checkpoint-interval-ms=150",
                                       "--checkpoint-wal-mb=1", "--wal-segment-mb=1",
                                       "--verify-pages-at-start=ON", "--wal-sync=" + args.wal_sync,
                                       "--log-level=warn"])
    failures = []

    def fail(msg):
        failures.append(msg)
        print("FAIL: " + msg, flush=True)

    acked = {}  # client -> {transfer id -> (from, to, amount)}
    rnd_no = 0
    try:
        node.start()
        conn = pymysql.connect(host="127.0.0.1", port=node.port, user="root", autocommit=True)
        cur = conn.cursor()
        cur.execute("CREATE DATABASE crash")
        cur.execute("CREATE TABLE crash.acct (id INT PRIMARY KEY, bal BIGINT NOT NULL) SLICES=4")
        cur.execute("CREATE TABLE crash.transfers (id BIGINT PRIMARY KEY, src INT, dst INT, amount INT) SLICES=4")
        cur.execute("INSERT INTO crash.acct VALUES " + ",".join("(%d,%d)" % (i, INITIAL) for i in range(ACCOUNTS)))
        conn.close()
        total = 0
        for rnd_no in range(1, args.rounds + 1):
            clients = [BankClient(node.port, c, acked.setdefault(c, {}), rnd.random()) for c in range(args.clients)]
            for c in clients:
                c.start()
            time.sleep(rnd.uniform(0.3, args.seconds))
            node.kill()
            for c in clients:
                c.join(timeout=90)
            total += sum(c.count for c in clients)
            node.start(timeout=120)
            conn = pymysql.connect(host="127.0.0.1", port=node.port, user="root", database="crash",
                                   autocommit=True, read_timeout=120)
            cur = conn.cursor()
            cur.execute("SELECT id, bal FROM acct")
            balances = dict(cur.fetchall())
            cur.execute("SELECT id, src, dst, amount FROM transfers")
            logged = {r[0]: (r[1], r[2], r[3]) for r in cur.fetchall()}
            conn.close()
            if sum(balances.values()) != ACCOUNTS * INITIAL:
                fail("round %d: total %d, expected %d" % (rnd_no, sum(balances.values()), ACCOUNTS * INITIAL))
            doubt = {c.in_doubt[0]: c.in_doubt[1:] for c in clients if c.in_doubt is not None}
            all_acked = {t: v for mine in acked.values() for t, v in mine.items()}
            for t, v in all_acked.items():
                if t not in logged and args.wal_sync == "durable":
                    fail("round %d: acknowledged transfer %d is missing" % (rnd_no, t))
            for t, v in logged.items():
                if t not in all_acked:
                    if t in doubt and doubt[t] == v:
                        acked[t // GROUPS_PER_CLIENT][t] = v  # its COMMIT did happen
                    else:
                        fail("round %d: transfer %d was never committed" % (rnd_no, t))
            if args.wal_sync == "async":
                for mine in acked.values():
                    for t in [t for t in mine if t not in logged]:
                        del mine[t]
            expect = {i: INITIAL for i in range(ACCOUNTS)}
            for a, b, amount in logged.values():
                expect[a] -= amount
                expect[b] += amount
            if balances != expect:
                bad = [i for i in expect if balances.get(i) != expect[i]]
                fail("round %d: balances disagree with the transfer log on accounts %s" % (rnd_no, bad[:10]))
            print("round %d: %d transfers logged, %d in doubt, total %d, verified" %
                  (rnd_no, len(logged), len(doubt), sum(balances.values())), flush=True)
            if failures:
                break
        node.stop()
        print("crash driver (bank): %d rounds, %d transfers, %s" %
              (rnd_no, total, "FAILED" if failures else "every acknowledged COMMIT survived whole"), flush=True)
    except Exception as e:  # noqa: BLE001 - report and fail
        fail("%s: %s\n%s" % (type(e).__name__, e, node.log()))
    finally:
        if args.keep or failures:
            node.kill()
            print("data directory kept: " + node.data_dir, flush=True)
        else:
            node.cleanup()
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shaled", required=True)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=3.0, help="longest run before the kill in a round")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--wal-sync", default="durable", choices=["durable", "async"])
    ap.add_argument("--keep", action="store_true", help="keep the data directory")
    ap.add_argument("--mode", default="groups", choices=["groups", "bank"])
    ap.add_argument("--kill-points", action="store_true",
                    help="kill inside checkpoints and page flushes (SHALE_TEST_KILL_AT)")
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    if args.mode == "bank":
        print("crash driver (bank): seed %d, %d rounds, %d clients, wal-sync %s" %
              (args.seed, args.rounds, args.clients, args.wal_sync), flush=True)
        return run_bank(args, rnd)
    print("crash driver: seed %d, %d rounds, %d clients, wal-sync %s" % (args.seed, args.rounds, args.clients,
                                                                          args.wal_sync), flush=True)
    node = ShaledProcess(args.shaled, ["--buffer-pool-mb=4", "--checkpoint-interval-ms=150",
                                       "--checkpoint-wal-mb=1", "--wal-segment-mb=1",
                                       "--verify-pages-at-start=ON", "--wal-sync=" + args.wal_sync,
                                       "--log-level=warn"])
    failures = []

    def fail(msg):
        failures.append(msg)
        print("FAIL: " + msg, flush=True)

    acked = {}  # client -> {group -> version (None: deleted)}; each client thread owns its dict
    kill_points = ["checkpoint-dw", "checkpoint-inplace", "checkpoint-meta", "checkpoint-done", "spill-write",
                   "checkpoint-cow", "checkpoint-capture", "wal-write", "wal-roll"]
    # How many passes a round may make before the kill: points passed many
    # times a second get a wider range, so the kill lands anywhere in the run.
    passes = {"spill-write": 6, "checkpoint-cow": 6, "wal-write": 300}
    rnd.shuffle(kill_points)
    armed_count = [0]
    planned = [None]  # the kill point armed for the running server

    def start_node(timeout=None):  # None: ShaledProcess.START_TIMEOUT
        """Starts the server, armed with a kill point if --kill-points; a
        kill point that fires during recovery's own checkpoint is a crash
        during recovery: start again, unarmed."""
        planned[0] = None
        if args.kill_points:
            point = kill_points[armed_count[0] % len(kill_points)]
            armed_count[0] += 1
            planned[0] = point
            os.environ["SHALE_TEST_KILL_AT"] = "%s:%d" % (point, rnd.randint(1, passes.get(point, 3)))
        try:
            node.start(timeout=timeout)
        except RuntimeError as e:
            if "exited with -9" not in str(e):
                raise
            print("  kill point %s fired during recovery; starting again" % planned[0], flush=True)
            planned[0] = None
            os.environ.pop("SHALE_TEST_KILL_AT", None)
            node.start(timeout=timeout)
        finally:
            os.environ.pop("SHALE_TEST_KILL_AT", None)

    fired = {}
    try:
        start_node()
        conn = pymysql.connect(host="127.0.0.1", port=node.port, user="root", autocommit=True)
        conn.cursor().execute("CREATE DATABASE crash")
        conn.cursor().execute(
            "CREATE TABLE crash.t (id BIGINT PRIMARY KEY, grp BIGINT NOT NULL, v INT NOT NULL, "
            "pad VARCHAR(10000) NOT NULL, KEY by_grp (grp), KEY by_v (v)) SLICES=4")
        conn.close()
        total = 0
        for rnd_no in range(1, args.rounds + 1):
            clients = [Client(node.port, c, acked.setdefault(c, {}), rnd.random()) for c in range(args.clients)]
            for c in clients:
                c.start()
            deadline = time.time() + rnd.uniform(0.3, args.seconds)
            while time.time() < deadline and node.proc.poll() is None:
                time.sleep(0.02)
            how = "kill -9"
            if node.proc.poll() is not None:
                how = "kill point %s" % planned[0]
                fired[planned[0]] = fired.get(planned[0], 0) + 1
            node.kill()
            for c in clients:
                c.join(timeout=60)
            statements = sum(c.count for c in clients)
            total += statements
            start_node(timeout=120)  # recovery + page verification happen here
            rows = read_table(node.port)
            states = group_states(rows, fail)
            check_indexes(node.port, rows, fail)
            doubt = {c.in_doubt[0]: c.in_doubt for c in clients if c.in_doubt is not None}
            all_acked = {g: v for mine in acked.values() for g, v in mine.items()}
            for g in set(all_acked) | set(states):
                have = states.get(g)
                want = all_acked.get(g)
                mine = acked.setdefault(g // GROUPS_PER_CLIENT, {})
                if g in doubt:
                    _, before, after = doubt[g]
                    if have == after:
                        mine[g] = after
                        continue
                    want = before
                if have != want:
                    if args.wal_sync == "async":
                        mine[g] = have  # async mode may lose the last flush interval, never atomicity
                    else:
                        fail("group %d: version %s after the crash, acknowledged %s" % (g, have, want))
            print("round %d (%s): %d statements acknowledged, %d in doubt, %d groups live, verified" %
                  (rnd_no, how, statements, len(doubt), len(states)), flush=True)
            if failures:
                break
        os.environ.pop("SHALE_TEST_KILL_AT", None)
        node.stop()
        if args.kill_points:
            print("kill points that fired: %s" % (fired or "none"), flush=True)
        print("crash driver: %d rounds, %d statements, %s" %
              (rnd_no, total, "FAILED" if failures else "every acknowledged statement survived"), flush=True)
    except Exception as e:  # noqa: BLE001 - report and fail
        fail("%s: %s\n%s" % (type(e).__name__, e, node.log()))
    finally:
        if args.keep or failures:
            node.kill()
            print("data directory kept: " + node.data_dir, flush=True)
        else:
            node.cleanup()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
