"""Deadlocks across nodes (docs/transactions.md "Deadlocks across nodes").

Three real shaled processes; a table whose slices rank on different nodes.
Session A and session B, through different nodes, each update a row (one
ranked at node2, one at node3), then each updates the other's row: A waits
at the node ranking B's row, B at the node ranking A's row. Run with A
through node1 and B through node2 (B waits in its own node's lock manager),
then the other way round (B waits at another node). No node's lock manager sees that cycle; the
cluster's detector (on the metadata leader) must end exactly one of the
two waits with 1213 (SQLSTATE 40001) within a couple of seconds — far below
innodb_lock_wait_timeout, set to 30 s — rolling that whole transaction
back, while the other transaction commits. A plain wait across nodes (no
cycle) must still wait and then succeed.

Without the detector the cycle ends only by lock wait timeout: 1205 after
30 s, and this test fails.
"""
import argparse
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_fixture import ThreeNodeTestCase, status_counter, wait_for_table  # noqa: E402

SHALED = None
ROWS = 24


def connect(node):
    import pymysql
    conn = pymysql.connect(host="127.0.0.1", port=node.port, user="root", password="", autocommit=True,
                           connect_timeout=5, read_timeout=60)
    conn.cursor().execute("SET SESSION innodb_lock_wait_timeout = 30")
    return conn


class DeadlockTest(ThreeNodeTestCase):

    def setUp(self):
        super().setUp()
        n1 = self.nodes[0]
        n1.query("CREATE DATABASE dl")
        n1.query("CREATE TABLE dl.t (id INT PRIMARY KEY, n INT NOT NULL) SLICES=6 REPLICAS=2")
        wait_for_table(self.nodes, "dl.t")
        n1.query("INSERT INTO dl.t VALUES " + ",".join("(%d, %d)" % (i, i) for i in range(1, ROWS + 1)))

    def ranking_node(self, row_id):
        """The index of the node whose ranking replica holds row_id: the one
        whose lock manager holds a lock while node1 locks the row."""
        conn = connect(self.nodes[0])
        try:
            cur = conn.cursor()
            cur.execute("BEGIN")
            cur.execute("SELECT n FROM dl.t WHERE id = %d FOR UPDATE" % row_id)
            held = [status_counter(n, "Shale_row_locks_held") for n in self.nodes]
            cur.execute("ROLLBACK")
        finally:
            conn.close()
        return held.index(1) if held.count(1) == 1 and sum(held) == 1 else None

    def rows_ranked_on(self, wanted):
        """{node index: a row id ranked there} for the node indexes in wanted."""
        found = {}
        for row_id in range(1, ROWS + 1):
            where = self.ranking_node(row_id)
            if where in wanted and where not in found:
                found[where] = row_id
            if len(found) == len(wanted):
                break
        self.assertEqual(set(found), set(wanted), "rows ranked on nodes %s" % sorted(wanted))
        return found

    def deadlocks(self):
        return sum(status_counter(n, "Shale_deadlocks") for n in self.nodes)

    def run_cycle(self, a_node, b_node, x, y, a_value, b_value):
        """A (through a_node) and B (through b_node) update x and y in
        opposite orders; returns (victim, seconds from the cycle to 1213)."""
        import pymysql
        before = self.deadlocks()
        a, b = connect(a_node), connect(b_node)
        ca, cb = a.cursor(), b.cursor()
        ca.execute("BEGIN")
        ca.execute("UPDATE dl.t SET n = %d WHERE id = %d" % (a_value, x))
        cb.execute("BEGIN")
        cb.execute("UPDATE dl.t SET n = %d WHERE id = %d" % (b_value, y))
        outcome = {}

        def second_update(name, cur, row_id, value):
            t0 = time.time()
            try:
                cur.execute("UPDATE dl.t SET n = %d WHERE id = %d" % (value, row_id))
                outcome[name] = ("ok", time.time() - t0)
            except pymysql.err.MySQLError as e:
                outcome[name] = (e.args[0], time.time() - t0)

        ta = threading.Thread(target=second_update, args=("A", ca, y, a_value))
        tb = threading.Thread(target=second_update, args=("B", cb, x, b_value))
        ta.start()
        time.sleep(0.3)
        tb.start()  # closes the cycle
        ta.join(60)
        tb.join(60)
        self.assertIn("A", outcome)
        self.assertIn("B", outcome)
        codes = sorted(str(outcome[k][0]) for k in "AB")
        self.assertEqual(codes, ["1213", "ok"], outcome)
        victim = "A" if outcome["A"][0] == 1213 else "B"
        survivor = "B" if victim == "A" else "A"
        ended = outcome[victim][1] - (0.3 if victim == "A" else 0.0)
        print("A through node%d, B through node%d: %s got 1213 %.2f s after the cycle formed; %s went on after "
              "%.2f s" % (a_node.index, b_node.index, victim, ended, survivor, outcome[survivor][1]))
        self.assertLess(ended, 5.0, "1213 came %.1f s after the cycle formed" % ended)
        # The victim's whole transaction is gone (as InnoDB does): its first
        # update too. The survivor commits both of its rows.
        (cb if victim == "B" else ca).execute("COMMIT")  # nothing left to commit
        (ca if survivor == "A" else cb).execute("COMMIT")
        value = a_value if survivor == "A" else b_value
        for node in self.nodes:
            got = dict(node.query("SELECT id, n FROM dl.t WHERE id IN (%d, %d)" % (x, y)))
            self.assertEqual(got, {x: value, y: value}, "node%d" % node.index)
        self.assertEqual([status_counter(n, "Shale_row_locks_held") for n in self.nodes], [0, 0, 0])
        self.assertEqual(self.deadlocks() - before, 1)
        a.close()
        b.close()
        return value

    def test_cycle_across_nodes_ends_one_transaction_with_1213(self):
        # A row ranked at node2 and one at node3: A waits at node3, B at node2.
        rows = self.rows_ranked_on({1, 2})
        x, y = rows[1], rows[2]
        n1, n2 = self.nodes[0], self.nodes[1]
        # B through node2 waits in node2's own lock manager for A's lock
        # there; then B through node1 waits at node2, a remote lock request.
        self.run_cycle(n1, n2, x, y, 100, 200)
        value = self.run_cycle(n2, n1, x, y, 300, 400)
        for node in self.nodes:
            total = node.query("SELECT SUM(n) FROM dl.t")[0][0]
            self.assertEqual(int(total), ROWS * (ROWS + 1) // 2 - x - y + 2 * value, "node%d" % node.index)

    def test_plain_wait_across_nodes_is_not_a_deadlock(self):
        rows = self.rows_ranked_on({2})
        x = rows[2]
        before = self.deadlocks()
        a, b = connect(self.nodes[0]), connect(self.nodes[1])
        ca, cb = a.cursor(), b.cursor()
        ca.execute("BEGIN")
        ca.execute("UPDATE dl.t SET n = n + 1 WHERE id = %d" % x)
        result = {}

        def waiter():
            t0 = time.time()
            cb.execute("UPDATE dl.t SET n = n + 10 WHERE id = %d" % x)
            result["waited"] = time.time() - t0

        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(3.0)  # many detector rounds
        self.assertNotIn("waited", result)
        ca.execute("COMMIT")
        t.join(30)
        self.assertIn("waited", result)
        self.assertGreaterEqual(result["waited"], 2.5)
        self.assertEqual(self.nodes[2].query("SELECT n FROM dl.t WHERE id = %d" % x)[0][0], x + 11)
        self.assertEqual(self.deadlocks(), before)
        a.close()
        b.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--shaled", required=True)
    args, rest = parser.parse_known_args()
    ThreeNodeTestCase.SHALED = args.shaled
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
