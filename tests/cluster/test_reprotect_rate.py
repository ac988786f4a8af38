"""Reprotection runs many copies at once, from many sources to many
targets, at a rate limited by one setting (issue 6; docs/cluster.md
"Reprotection and rebalancing", docs/operations.md "Reprotection rate").

Three nodes, a 6-slice REPLICAS=2 table of about 8 MB. node3 is SIGKILLed
twice; each time node1 and node2 re-protect the slices it held by copying
to each other:

1. unlimited (the default, shale_rebalance_rate_mb = 0): the copies'
   throughput is measured from system.rebalancer (stream bytes over the
   time from the first task's start to the last one's finish);
2. with SET GLOBAL shale_rebalance_rate_mb = 1 on every node, while a
   writer inserts rows through node1 and node2: every receiving node gets
   at most about 1 MiB/s (bytes of the tasks it received over their time
   span), the whole reprotection is measurably slower than the unlimited
   one, copies to both targets ran at the same time, and afterwards every
   acknowledged row is there and the two replicas of every slice hold the
   same number of rows (the new replica received the writes made while it
   filled).

It also checks every column of system.slices (hash ranges, replicas,
ranking replica, rows and bytes of each node's replicas) and of
system.rebalancer (task, slice, source, target, bytes, started, finished).
"""
import argparse
import os
import random
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_fixture import close_quietly, members_agree, start_cluster, wait_until  # noqa: E402

SHALED = None
DB = "rr"
MIB = 1 << 20
ROWS = 4000  # of about 2 KB each


def protected(nodes, members):
    for node in nodes:
        if node.query("SELECT status FROM system.protection")[0][0] != "fully protected":
            return False
        for replicas, building in node.query("SELECT replicas, building_replicas FROM system.slices "
                                             "WHERE db = '%s'" % DB):
            if building or len(replicas.split(",")) != 2 or not set(replicas.split(",")) <= members:
                return False
    return True


def finished_reprotects(node, after_task):
    """(task_id, source, target, bytes, started_ms, finished_ms) of the
    finished reprotect tasks with ids above `after_task`."""
    return node.query("SELECT task_id, source, target, bytes, started_ms, finished_ms FROM system.rebalancer "
                      "WHERE kind = 'reprotect' AND state = 'finished' AND task_id > %d ORDER BY task_id"
                      % after_task)


def span_s(tasks):
    return (max(t[5] for t in tasks) - min(t[4] for t in tasks)) / 1000.0


def throughput(tasks):
    """Bytes per second over the tasks' time span."""
    return sum(t[3] for t in tasks) / max(span_s(tasks), 0.001)


class ReprotectRateTest(unittest.TestCase):
    def setUp(self):
        self.nodes = start_cluster(SHALED, 3)

    def tearDown(self):
        result = getattr(getattr(self, "_outcome", None), "result", None)
        if result is not None and any(t is self for t, _ in result.errors + result.failures):
            print("\n".join("--- node%d\n%s" % (n.index, n.log()[-3000:]) for n in self.nodes), flush=True)
        for node in self.nodes:
            node.cleanup()

    def kill_and_reprotect(self, victim, survivors):
        """Kills `victim`; returns the reprotect tasks that restored full
        protection on `survivors`."""
        last = survivors[0].query("SELECT COALESCE(MAX(task_id), 0) FROM system.rebalancer")[0][0]
        victim.kill()
        members = {"node%d" % n.index for n in survivors}
        wait_until("fully protected on %s" % sorted(members), lambda: protected(survivors, members), 180)
        tasks = wait_until("finished reprotect tasks", lambda: finished_reprotects(survivors[0], last), 30)
        return list(tasks)

    def check_slices_table(self):
        """system.slices, through every node: the 6 slices of the primary
        key cover the hash space, each with 2 replicas on distinct nodes,
        the first ranking; each node reports rows and bytes of its own
        replicas (NULL for the others), both replicas the same rows, and
        the rows add up to the table's."""
        views = []
        for node in self.nodes:
            rows = node.query("SELECT slice_id, representation, hash_begin, hash_end, replicas, ranking_replica, "
                              "replica_count, wanted_replicas, `rows`, bytes FROM system.slices "
                              "WHERE db = '%s' AND table_name = 't' ORDER BY hash_begin" % DB)
            self.assertEqual(len(rows), 6)
            self.assertEqual(int(rows[0][2]), 0)
            self.assertEqual(int(rows[-1][3]), 2 ** 64 - 1)
            for a, b in zip(rows, rows[1:]):
                self.assertEqual(int(b[2]), int(a[3]) + 1)
            me = "node%d" % node.index
            for slice_id, rep, _, _, replicas, ranking, count, wanted, nrows, nbytes in rows:
                names = replicas.split(",")
                self.assertEqual((rep, count, wanted, len(set(names)), ranking), ("PRIMARY", 2, 2, 2, names[0]))
                if me in names:
                    self.assertGreater(nrows, 0)
                    self.assertGreaterEqual(nbytes, nrows * 2000)  # 2000 hex characters a row
                else:
                    self.assertIsNone(nrows)
                    self.assertIsNone(nbytes)
            views.append({r[0]: (r[4], r[8]) for r in rows})
        total = 0
        for slice_id, (replicas, _) in views[0].items():
            counts = {views[int(name[4:]) - 1][slice_id][1] for name in replicas.split(",")}
            self.assertEqual(len(counts), 1, "slice %d: replicas hold %s rows" % (slice_id, counts))
            total += counts.pop()
        self.assertEqual(total, ROWS)

    def check_rebalancer_table(self, node, task_ids):
        """system.rebalancer's row of each finished task, every column."""
        slice_ids = {r[0] for r in node.query("SELECT slice_id FROM system.slices WHERE db = '%s'" % DB)}
        now_ms = time.time() * 1000
        for task_id in task_ids:
            (tid, kind, db, table, rep, slice_id, source, target, state, nbytes, started, finished,
             error) = node.query("SELECT task_id, kind, db, table_name, representation, slice_id, source, target, "
                                 "state, bytes, started_ms, finished_ms, error FROM system.rebalancer "
                                 "WHERE task_id = %d" % task_id)[0]
            self.assertEqual((tid, kind, db, table, rep, state), (task_id, "reprotect", DB, "t", "PRIMARY", "finished"))
            self.assertIn(slice_id, slice_ids)
            self.assertNotEqual(source, target)
            self.assertIn(source, ("node1", "node2"))
            self.assertIn(target, ("node1", "node2"))
            self.assertGreater(nbytes, 2000)
            self.assertLessEqual(started, finished)
            self.assertLess(now_ms - started, 600 * 1000)
            self.assertFalse(error)

    def test_copies_run_in_parallel_at_the_set_rate(self):
        n1, n2, n3 = self.nodes
        all3 = {"node1", "node2", "node3"}
        wait_until("three members", lambda: members_agree(self.nodes, all3), 60)
        n1.query("CREATE DATABASE %s" % DB)
        n1.query("CREATE TABLE %s.t (id BIGINT PRIMARY KEY, pad VARCHAR(2100) NOT NULL) SLICES=6 REPLICAS=2" % DB)
        wait_until("a fully protected table", lambda: protected(self.nodes, all3), 60)
        rng = random.Random(7)
        conn = n1.connect()
        for b in range(0, ROWS, 100):
            # Random hex: storage compression cannot shrink it.
            conn.cursor().execute("INSERT INTO %s.t VALUES " % DB + ", ".join(
                "(%d, '%s')" % (i, rng.randbytes(1000).hex()) for i in range(b, b + 100)))
        close_quietly(conn)
        self.check_slices_table()

        # 1. Unlimited.
        unlimited = self.kill_and_reprotect(n3, [n1, n2])
        self.check_rebalancer_table(n1, [t[0] for t in unlimited])
        fast = throughput(unlimited)
        print("unlimited: %d tasks, %.1f MB in %.2f s: %.2f MiB/s"
              % (len(unlimited), sum(t[3] for t in unlimited) / 1e6, span_s(unlimited), fast / MIB))

        # node3 returns and replicas move back onto it.
        n3.forget_join()
        n3.start()
        wait_until("node3 rejoined", lambda: members_agree(self.nodes, all3), 60)

        def balanced():
            if not protected(self.nodes, all3):
                return False
            counts = {}
            for (replicas,) in n1.query("SELECT replicas FROM system.slices WHERE db = '%s'" % DB):
                for r in replicas.split(","):
                    counts[r] = counts.get(r, 0) + 1
            return len(counts) == 3 and max(counts.values()) - min(counts.values()) <= 1
        wait_until("replicas moved back onto node3", balanced, 180)

        # 2. At most 1 MiB/s per receiving node, with writes going on.
        for node in self.nodes:
            node.query("SET GLOBAL shale_rebalance_rate_mb = 1")
            self.assertEqual(node.query("SHOW GLOBAL VARIABLES LIKE 'shale_rebalance_rate_mb'")[0][1], "1")
        stop = threading.Event()
        acked, errors = [], []

        def writer():
            conns = {n.index: n.connect() for n in (n1, n2)}
            x = 10 ** 6
            while not stop.is_set():
                x += 1
                try:
                    conns[1 + x % 2].cursor().execute("INSERT INTO %s.t VALUES (%d, 'w')" % (DB, x))
                    acked.append(x)
                except Exception as e:  # noqa: BLE001 - retried inside the cluster; counted
                    errors.append(repr(e))
                    time.sleep(0.05)
            for c in conns.values():
                close_quietly(c)
        w = threading.Thread(target=writer, daemon=True)
        w.start()
        try:
            wait_until("some writes", lambda: len(acked) >= 10, 60)
            limited = self.kill_and_reprotect(n3, [n1, n2])
            before = len(acked)
            wait_until("writes after the reprotection", lambda: len(acked) >= before + 20, 60)
        finally:
            stop.set()
            w.join(60)
        slow = throughput(limited)
        print("limited to 1 MiB/s per target: %d tasks, %.1f MB in %.2f s: %.2f MiB/s; %d writes meanwhile, "
              "%d errors" % (len(limited), sum(t[3] for t in limited) / 1e6, span_s(limited), slow / MIB,
                             len(acked), len(errors)))
        targets = {}
        for t in limited:
            targets.setdefault(t[2], []).append(t)
        # Many sources to many targets, at once.
        self.assertEqual(set(targets), {"node1", "node2"})
        self.assertEqual({t[1] for t in limited}, {"node1", "node2"})
        a, b = targets["node1"], targets["node2"]
        overlap = min(max(t[5] for t in a), max(t[5] for t in b)) - max(min(t[4] for t in a), min(t[4] for t in b))
        self.assertGreater(overlap, 0, "copies to node1 and node2 did not run at the same time: %r" % limited)
        for target, tasks in targets.items():
            rate = throughput(tasks)
            print("  to %s: %d tasks, %.2f MB in %.2f s: %.2f MiB/s"
                  % (target, len(tasks), sum(t[3] for t in tasks) / 1e6, span_s(tasks), rate / MIB))
            if sum(t[3] for t in tasks) >= 2 * MIB:
                # The first 256 KiB chunk of a copy is not waited for.
                self.assertLess(rate, 1.3 * MIB, target)
        # The limit made the reprotection measurably slower (about 5x in
        # our runs: 8.9-13.9 MiB/s unlimited, 1.8 MiB/s limited; load slows
        # the unlimited copies, so the margin asked for is small).
        self.assertLess(slow, 0.9 * fast)

        # Every acknowledged write is there, and both replicas of every
        # slice hold the same rows.
        ids = {r[0] for r in n1.query("SELECT id FROM %s.t WHERE id > 1000000" % DB)}
        self.assertEqual(sorted(set(acked) - ids), [])
        self.assertEqual(n2.query("SELECT COUNT(*) FROM %s.t" % DB), n1.query("SELECT COUNT(*) FROM %s.t" % DB))

        def replicas_agree():
            rows = {}
            for node in (n1, n2):
                for slice_id, r in node.query("SELECT slice_id, `rows` FROM system.slices WHERE db = '%s'" % DB):
                    rows.setdefault(slice_id, set()).add(r)
            return all(len(v) == 1 for v in rows.values())
        wait_until("both replicas of every slice agree", replicas_agree, 30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--shaled", required=True)
    args, rest = parser.parse_known_args()
    SHALED = os.path.abspath(args.shaled)
    result = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
