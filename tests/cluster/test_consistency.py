"""Acknowledged commits are visible through every node at once (issue 6:
snapshot reads across nodes; the stale reads ycsb_d and game saw on a
three-node cluster).

Three real shaled, a REPLICAS=2 table spread over every node. Background
clients keep multi-node transactions (two-phase commits) in flight all the
time, so the cluster's read watermark always has commits below it still
being applied. In the foreground, round after round, a client commits a
change through one node and, as soon as the commit is acknowledged, another
client reads it through a different node -- an autocommit point read, a
range read, and a new REPEATABLE READ transaction -- and must see it. The
same client then updates the row through another node and reads it back in
a new transaction through the first one (the game workload's pattern).
"""
import argparse
import os
import random
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_fixture import close_quietly, ThreeNodeTestCase, wait_for_table  # noqa: E402

ROUNDS = 150
ACCOUNTS = 24


class Background:
    """Transfers between accounts on different slices through every node:
    commits in flight all the time."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.stop = threading.Event()
        self.commits = 0
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(3)]

    def run(self, seed):
        import pymysql
        rng = random.Random(seed)
        conn = None
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = self.nodes[seed % len(self.nodes)].connect()
                a, b = rng.sample(range(1, ACCOUNTS + 1), 2)
                cur = conn.cursor()
                cur.execute("BEGIN")
                cur.execute("UPDATE c.accounts SET balance = balance - 1 WHERE id = %d" % a)
                cur.execute("UPDATE c.accounts SET balance = balance + 1 WHERE id = %d" % b)
                cur.execute("COMMIT")
                self.commits += 1
            except pymysql.err.MySQLError:
                conn = close_quietly(conn)

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)


class ConsistencyTest(ThreeNodeTestCase):
    def test_acknowledged_commits_are_visible_through_every_node(self):
        n1 = self.nodes[0]
        n1.query("CREATE DATABASE c")
        n1.query("CREATE TABLE c.accounts (id INT PRIMARY KEY, balance INT NOT NULL) REPLICAS=2")
        n1.query("INSERT INTO c.accounts VALUES " + ",".join("(%d, 1000)" % i for i in range(1, ACCOUNTS + 1)))
        n1.query("CREATE TABLE c.t (id INT PRIMARY KEY, v INT NOT NULL) REPLICAS=2")
        wait_for_table(self.nodes, "c.t")
        conns = [n.connect() for n in self.nodes]
        background = Background(self.nodes)
        background.start()
        stale = []
        try:
            for i in range(1, ROUNDS + 1):
                w, r = i % 3, (i + 1) % 3
                conns[w].cursor().execute("INSERT INTO c.t VALUES (%d, 0)" % i)
                cur = conns[r].cursor()
                cur.execute("SELECT v FROM c.t WHERE id = %d" % i)
                if cur.fetchall() != ((0,),):
                    stale.append(("point read after insert", i))
                cur.execute("SELECT COUNT(*) FROM c.t WHERE id <= %d" % i)
                if cur.fetchall() != ((i,),):
                    stale.append(("count after insert", i))
                # The row updated through a third node, read back in a new
                # transaction through the node that inserted it.
                conns[(i + 2) % 3].cursor().execute("UPDATE c.t SET v = %d WHERE id = %d" % (i, i))
                cur = conns[w].cursor()
                cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                cur.execute("SELECT v FROM c.t WHERE id = %d" % i)
                got = cur.fetchall()
                cur.execute("COMMIT")
                if got != ((i,),):
                    stale.append(("transaction after update", i, got))
        finally:
            background.finish()
            for c in conns:
                c.close()
        print("consistency: %d rounds, %d background commits, %d stale reads" %
              (ROUNDS, background.commits, len(stale)))
        self.assertGreater(background.commits, 0, "the background kept commits in flight")
        self.assertEqual(stale, [], "a read missed a commit acknowledged before it began")
        total = n1.query("SELECT SUM(balance) FROM c.accounts")[0][0]
        self.assertEqual(int(total), ACCOUNTS * 1000)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--shaled", required=True)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args, rest = parser.parse_known_args()
    ThreeNodeTestCase.SHALED = os.path.abspath(args.shaled)
    ROUNDS = args.rounds
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
