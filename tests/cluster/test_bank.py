"""Issue 6 test 2: a bank workload across nodes while nodes die.

Accounts live in a table with REPLICAS=2 whose slices are spread over three
real shaled processes. Transfer clients run BEGIN; UPDATE ... -x; UPDATE ...
+x; COMMIT through every node (retrying on retryable errors: 1047/08S01,
1205, 1213, 1180, a broken connection); snapshot readers run START
TRANSACTION WITH CONSISTENT SNAPSHOT; SELECT SUM(balance), COUNT(*) through
every node, and every answer must be the same total. Meanwhile a node is
killed with SIGKILL and restarted (it rejoins by itself). At the end every
node gives the same balances and the right total.

Short form (ctest cluster_bank): one kill/restart cycle. Long form
(--cycles N, ctest cluster_bank_long, label slow): N cycles of a random
node; between kills it waits until system.protection says "fully
protected" (reprotection re-copies the replicas a kill took), so no kill
can take the last replica of a slice.
"""
import argparse
import os
import random
import shutil
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_fixture import (ThreeNodeTestCase, close_quietly, fully_protected, members_agree, wait_for_table,  # noqa: E402
                             wait_until)

SHALED = None
CYCLES = 1
ACCOUNTS = 24
START_BALANCE = 1000
TOTAL = ACCOUNTS * START_BALANCE
ALL3 = {"node1", "node2", "node3"}
# Errors a transfer or a reader may get while a node dies; the client retries.
# 1047 (08S01): cluster changed / node did not answer / no quorum; 1205 lock
# wait timeout; 1213 deadlock; 1180 commit outcome unknown; 1412 "Table
# definition has changed, please retry transaction" (the slice map changed
# under the transaction: a failed node's replicas left it); 2003, 2006, 2013:
# the client's own node went away.
RETRYABLE = {1047, 1205, 1213, 1180, 1412, 2003, 2006, 2013}


class Workload:
    """Transfer and reader threads over a list of nodes; counts and checks."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.committed = 0
        self.commit_times = []
        self.snapshots = 0
        self.bad_totals = []       # (node, total, count)
        self.unexpected = []       # errors outside RETRYABLE
        self.errors = {}           # code -> count
        self.max_latency = 0.0
        self.threads = []

    def connect(self, node):
        import pymysql
        conn = pymysql.connect(host="127.0.0.1", port=node.port, user="root", password="", autocommit=True,
                               connect_timeout=3, read_timeout=30, write_timeout=30)
        conn.cursor().execute("SET SESSION innodb_lock_wait_timeout = 2")
        return conn

    def note_error(self, e, what):
        code = e.args[0] if e.args and isinstance(e.args[0], int) else -1
        with self.lock:
            self.errors[code] = self.errors.get(code, 0) + 1
            if code not in RETRYABLE:
                self.unexpected.append((what, repr(e)))

    def run(self, fn, seed):
        rng = random.Random(seed)
        conn = None
        node = None
        while not self.stop.is_set():
            try:
                if conn is None:
                    node = rng.choice([n for n in self.nodes if n.running()] or self.nodes)
                    conn = self.connect(node)
                t0 = time.time()
                fn(conn, rng, node)
                with self.lock:
                    self.max_latency = max(self.max_latency, time.time() - t0)
            except Exception as e:  # noqa: BLE001 - pymysql errors and broken sockets
                with self.lock:
                    self.max_latency = max(self.max_latency, time.time() - t0) if conn is not None else self.max_latency
                self.note_error(e, fn.__name__)
                if conn is not None:
                    try:
                        conn.rollback()
                    except Exception:  # noqa: BLE001
                        pass
                conn = close_quietly(conn)
                time.sleep(0.05)
            if rng.random() < 0.05 and conn is not None:
                conn.close()  # move to another node now and then
                conn = None

    def transfer(self, conn, rng, node):
        a, b = rng.sample(range(1, ACCOUNTS + 1), 2)
        x = rng.randint(1, 50)
        cur = conn.cursor()
        cur.execute("BEGIN")
        cur.execute("UPDATE bank.accounts SET balance = balance - %d WHERE id = %d" % (x, a))
        cur.execute("UPDATE bank.accounts SET balance = balance + %d WHERE id = %d" % (x, b))
        cur.execute("COMMIT")
        with self.lock:
            self.committed += 1
            self.commit_times.append(time.time())

    def read_total(self, conn, rng, node):
        cur = conn.cursor()
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.execute("SELECT SUM(balance), COUNT(*) FROM bank.accounts")
        total, count = cur.fetchone()
        # The same snapshot again, one account at a time: still the total.
        cur.execute("SELECT balance FROM bank.accounts WHERE id <= %d" % (ACCOUNTS // 2))
        first = sum(int(r[0]) for r in cur.fetchall())
        cur.execute("SELECT balance FROM bank.accounts WHERE id > %d" % (ACCOUNTS // 2))
        second = sum(int(r[0]) for r in cur.fetchall())
        cur.execute("COMMIT")
        with self.lock:
            self.snapshots += 1
            if int(total) != TOTAL or int(count) != ACCOUNTS or first + second != TOTAL:
                self.bad_totals.append((node.index, int(total), int(count), first + second,
                                        time.strftime("%H:%M:%S", time.gmtime())))

    def start(self, transfers=3, readers=2):
        for i in range(transfers):
            self.threads.append(threading.Thread(target=self.run, args=(self.transfer, 100 + i), daemon=True))
        for i in range(readers):
            self.threads.append(threading.Thread(target=self.run, args=(self.read_total, 200 + i), daemon=True))
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(90)
        return not any(t.is_alive() for t in self.threads)

    def commits_since(self, t):
        with self.lock:
            return sum(1 for c in self.commit_times if c > t)


class BankTest(ThreeNodeTestCase):
    def tearDown(self):
        # SHALE_KEEP_LOGS=dir: keep each node's whole log there (debugging).
        keep = os.environ.get("SHALE_KEEP_LOGS")
        if keep:
            os.makedirs(keep, exist_ok=True)
            for n in self.nodes:
                if os.path.exists(n.log_path):
                    shutil.copy(n.log_path, os.path.join(keep, "node%d.log" % n.index))
        super().tearDown()

    def balances(self, node):
        return node.query("SELECT id, balance FROM bank.accounts ORDER BY id")

    def test_bank_transfers_survive_kills(self):
        n1 = self.nodes[0]
        n1.query("CREATE DATABASE bank")
        n1.query("CREATE TABLE bank.accounts (id INT PRIMARY KEY, balance INT NOT NULL) REPLICAS=2")
        n1.query("INSERT INTO bank.accounts VALUES " +
                 ",".join("(%d, %d)" % (i, START_BALANCE) for i in range(1, ACCOUNTS + 1)))
        wait_for_table(self.nodes, "bank.accounts")
        rankers = {r[0].split(",")[0] for r in
                   n1.query("SELECT replicas FROM system.slices WHERE db='bank' AND table_name='accounts'")}
        self.assertEqual(rankers, ALL3, "the accounts are spread over every node")

        work = Workload(self.nodes)
        work.start()
        rng = random.Random(11)
        try:
            wait_until("transfers committing", lambda: work.committed >= 30, 60)
            for cycle in range(CYCLES):
                victim = self.nodes[2] if cycle == 0 else rng.choice(self.nodes)
                rest = [n for n in self.nodes if n is not victim]
                killed_at = time.time()
                victim.kill()
                wait_until("cycle %d: node%d removed" % (cycle, victim.index),
                           lambda: members_agree(rest, {"node%d" % n.index for n in rest}), 30)
                # Transfers go on on the survivors.
                wait_until("cycle %d: transfers after the kill" % cycle,
                           lambda: work.commits_since(killed_at + 0.5) >= 10, 60)
                victim.forget_join()
                victim.start()
                wait_until("cycle %d: node%d rejoined" % (cycle, victim.index),
                           lambda: members_agree(self.nodes, ALL3), 60)
                back_at = time.time()
                wait_until("cycle %d: transfers after the restart" % cycle,
                           lambda: work.commits_since(back_at) >= 10, 60)
                if CYCLES > 1:
                    # The next kill may take any node: every slice needs its
                    # second replica back first (reprotection).
                    wait_until("cycle %d: every slice fully protected" % cycle,
                               lambda: all(fully_protected(n) for n in self.nodes), 180)
        finally:
            self.assertTrue(work.finish(), "a client hangs")
        print("bank: %d transfers committed, %d snapshot reads, errors by code %r, slowest statement %.1f s" %
              (work.committed, work.snapshots, work.errors, work.max_latency))
        self.assertEqual(work.unexpected, [])
        self.assertEqual(work.bad_totals, [], "a snapshot saw a wrong total")
        self.assertGreater(work.snapshots, 10)
        self.assertLess(work.max_latency, 30)

        # Every node: the same balances, the right total.
        def same_everywhere():
            answers = [self.balances(n) for n in self.nodes]
            return all(a == answers[0] for a in answers) and answers[0]
        final = wait_until("the same balances on every node", same_everywhere, 30)
        self.assertEqual(len(final), ACCOUNTS)
        self.assertEqual(sum(int(b) for _, b in final), TOTAL)
        for n in self.nodes:
            self.assertEqual(n.query("SELECT SUM(balance), COUNT(*) FROM bank.accounts"), ((TOTAL, ACCOUNTS),))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--shaled", required=True)
    parser.add_argument("--cycles", type=int, default=1)
    args, rest = parser.parse_known_args()
    SHALED = os.path.abspath(args.shaled)
    ThreeNodeTestCase.SHALED = SHALED
    CYCLES = args.cycles
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
