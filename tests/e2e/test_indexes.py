#!/usr/bin/python3
"""End-to-end tests of secondary indexes, EXPLAIN and SHOW INDEX over the
real shaled with PyMySQL: the planner reads through an index, an index
survives a restart, UNIQUE holds under concurrent inserts, CREATE INDEX
during concurrent writes leaves the index consistent with the table, a
large index build survives a kill -9 right after it (WAL replay of its one
sorted batch), and a failed UNIQUE build names the first repeated row.
Run as:
    python3 tests/e2e/test_indexes.py --shaled build/src/shaled
"""
import os
import sys
import threading

import pymysql

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402


class IndexTest(NodeTestCase):
    def explain(self, cur, sql):
        cur.execute("EXPLAIN " + sql)
        return [(op.strip(), rows) for op, rows in cur.fetchall()]

    def test_explain_shows_index_scan_and_estimates(self):
        conn, cur = self.fresh_db("ix_explain")
        cur.execute("CREATE TABLE sbtest1 (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(20), KEY k_1 (k))")
        values = ", ".join("(%d, %d, 'c%d')" % (i, i % 10, i) for i in range(1, 201))
        cur.execute("INSERT INTO sbtest1 VALUES " + values)
        plan = self.explain(cur, "SELECT c FROM sbtest1 WHERE k = 3")
        ops = [op for op, _ in plan]
        self.assertTrue(any(op.startswith("IndexScan ix_explain.sbtest1(k_1) slices=[") and
                            "bounded-start" in op for op in ops), plan)
        # The index scan reads one slice of the index: at most all 200 rows.
        scan_rows = [rows for op, rows in plan if op.startswith("IndexScan")][0]
        self.assertLessEqual(scan_rows, 200)
        plan = self.explain(cur, "SELECT c FROM sbtest1 WHERE id = 3")
        self.assertEqual([rows for op, rows in plan if op.startswith("PointGet")], [1])
        plan = self.explain(cur, "SELECT c FROM sbtest1 WHERE c = 'c3'")
        # A full scan's bound comes from the slices' row counts: at least the 200 rows.
        scan_rows = [rows for op, rows in plan if op.startswith("SliceScan")]
        self.assertEqual(len(scan_rows), 1, plan)
        self.assertGreaterEqual(scan_rows[0], 200)
        cur.execute("SELECT id FROM sbtest1 WHERE k = 3 ORDER BY id")
        self.assertEqual([r[0] for r in cur.fetchall()], list(range(3, 201, 10)))
        plan = self.explain(cur, "SELECT id FROM sbtest1 WHERE id IN (SELECT k FROM sbtest1 WHERE k > 5)")
        self.assertTrue(any(op.startswith("Apply in") for op, _ in plan), plan)

    def test_show_index(self):
        conn, cur = self.fresh_db("ix_show")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(5) NOT NULL, "
                    "KEY ab (a, b), UNIQUE KEY (b))")
        cur.execute("SHOW INDEX FROM t")
        rows = cur.fetchall()
        self.assertEqual([d[0] for d in cur.description][:5],
                         ["Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name"])
        self.assertEqual([(r[1], r[2], r[3], r[4], r[9]) for r in rows],
                         [(0, "PRIMARY", 1, "id", ""), (1, "ab", 1, "a", "YES"), (1, "ab", 2, "b", ""),
                          (0, "b", 1, "b", "")])
        self.assertSqlError(cur, "SHOW INDEX FROM nosuch", 1146)

    def test_index_survives_restart(self):
        conn, cur = self.fresh_db("ix_restart")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, email VARCHAR(20))")
        cur.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        cur.execute("CREATE UNIQUE INDEX email_uq ON t (email)")
        conn.close()
        self.node.stop()
        self.node.start()
        conn = self.connect("ix_restart")
        cur = conn.cursor()
        cur.execute("SELECT id FROM t WHERE email = 'b'")
        self.assertEqual(cur.fetchall(), ((2,),))
        self.assertSqlError(cur, "INSERT INTO t VALUES (4, 'c')", 1062)
        cur.execute("SHOW CREATE TABLE t")
        self.assertIn("UNIQUE KEY `email_uq` (`email`)", cur.fetchall()[0][1])
        cur.execute("DROP INDEX email_uq ON t")
        cur.execute("INSERT INTO t VALUES (4, 'c')")
        conn.close()
        self.node.stop()
        self.node.start()
        cur = self.connect("ix_restart").cursor()
        cur.execute("SELECT COUNT(*) FROM t WHERE email = 'c'")
        self.assertEqual(cur.fetchall(), ((2,),))

    def test_unique_under_concurrent_inserts(self):
        conn, cur = self.fresh_db("ix_race")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, u INT, UNIQUE KEY u_uq (u))")
        results = []

        def insert(worker):
            c = self.connect("ix_race").cursor()
            for i in range(20):
                try:
                    c.execute("INSERT INTO t VALUES (%d, %d)" % (worker * 1000 + i, i))
                    results.append(("ok", i))
                except pymysql.MySQLError as e:
                    results.append((e.args[0], i))

        threads = [threading.Thread(target=insert, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i in range(20):
            outcomes = sorted(str(code) for code, v in results if v == i)
            self.assertEqual(outcomes, ["1062", "1062", "1062", "ok"], i)
        cur.execute("SELECT COUNT(*), COUNT(DISTINCT u) FROM t")
        self.assertEqual(cur.fetchall(), ((20, 20),))

    def test_create_index_during_writes_is_consistent(self):
        conn, cur = self.fresh_db("ix_build")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT)")
        cur.execute("INSERT INTO t VALUES " + ", ".join("(%d, %d)" % (i, i % 7) for i in range(500)))
        stop = threading.Event()
        errors = []

        def write():
            c = self.connect("ix_build").cursor()
            n = 1000
            while not stop.is_set():
                try:
                    c.execute("INSERT INTO t VALUES (%d, %d)" % (n, n % 7))
                    c.execute("UPDATE t SET k = k + 1 WHERE id = %d" % (n - 500))
                except pymysql.MySQLError as e:
                    if e.args[0] != 1412:  # planned against the old definition: retry
                        errors.append(e)
                n += 1

        writer = threading.Thread(target=write)
        writer.start()
        try:
            cur.execute("CREATE INDEX k_idx ON t (k)")
            cur.execute("INSERT INTO t VALUES (-1, 3)")
        finally:
            stop.set()
            writer.join()
        self.assertEqual(errors, [])
        for k in range(10):
            cur.execute("SELECT id FROM t WHERE k = %d" % k)
            via_index = sorted(r[0] for r in cur.fetchall())
            cur.execute("SELECT id FROM t WHERE k + 0 = %d" % k)  # not an index predicate: a scan
            via_scan = sorted(r[0] for r in cur.fetchall())
            self.assertEqual(via_index, via_scan, k)
        plan = self.explain(cur, "SELECT id FROM t WHERE k = 3")
        self.assertTrue(any(op.startswith("IndexScan") for op, _ in plan), plan)

    def test_large_index_build_survives_kill(self):
        # Enough rows for index trees of many leaves. Killed right after the
        # builds (before the next checkpoint), the restart replays their WAL
        # records, which apply by leaf runs as the builds did.
        conn, cur = self.fresh_db("ix_kill")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, s VARCHAR(30), u INT) SLICES=3")
        n = 30000
        for start in range(0, n, 5000):
            cur.execute("INSERT INTO t VALUES " + ", ".join(
                "(%d, %d, %s, %d)" % (i, (i * 7919) % 1000, "NULL" if i % 11 == 0 else "'s%d'" % (i % 4000), n - i)
                for i in range(start, start + 5000)))
        cur.execute("CREATE INDEX k_idx ON t (k)")
        cur.execute("CREATE INDEX s_idx ON t (s, k)")
        cur.execute("CREATE UNIQUE INDEX u_uq ON t (u)")
        conn.close()
        self.node.kill()
        self.node.start()
        cur = self.connect("ix_kill").cursor()
        for index, where, scan_where in (("k_idx", "k >= 0", "k + 0 >= 0"),
                                         ("s_idx", "s >= ''", "CONCAT(s, '') >= ''"),
                                         ("u_uq", "u >= 0", "u + 0 >= 0")):
            cur.execute("EXPLAIN SELECT id FROM t WHERE " + where)
            self.assertIn(index, " ".join(str(c) for row in cur.fetchall() for c in row))
            cur.execute("SELECT id FROM t WHERE " + where)
            via_index = sorted(r[0] for r in cur.fetchall())
            cur.execute("SELECT id FROM t WHERE " + scan_where)  # not an index predicate: a scan
            via_scan = sorted(r[0] for r in cur.fetchall())
            self.assertEqual(via_index, via_scan, index)
            self.assertEqual(len(via_index), n - (n // 11 + 1 if index == "s_idx" else 0), index)
        cur.execute("SELECT COUNT(*) FROM t WHERE k = 123")
        self.assertEqual(cur.fetchall(), ((sum(1 for i in range(n) if (i * 7919) % 1000 == 123),),))
        self.assertSqlError(cur, "INSERT INTO t VALUES (-5, 1, 'x', 17)", 1062)

    def test_failed_unique_build_names_the_first_repeated_row(self):
        # Scanned in primary-key order (one slice), 'A' (id 3) is the first
        # row whose value (under the case-insensitive collation) an earlier
        # row had; 'b' (id 4) repeats too, later. Nothing of the index is left.
        conn, cur = self.fresh_db("ix_dup")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, c VARCHAR(10)) SLICES=1")
        cur.execute("INSERT INTO t VALUES (1, 'a'), (2, 'B'), (3, 'A'), (4, 'b'), (5, NULL), (6, NULL)")
        with self.assertRaises(pymysql.MySQLError) as ctx:
            cur.execute("CREATE UNIQUE INDEX c_uq ON t (c)")
        self.assertEqual(ctx.exception.args, (1062, "Duplicate entry 'A' for key 't.c_uq'"))
        cur.execute("SHOW INDEX FROM t")
        self.assertEqual([r[2] for r in cur.fetchall()], ["PRIMARY"])
        cur.execute("DELETE FROM t WHERE id IN (3, 4)")
        cur.execute("CREATE UNIQUE INDEX c_uq ON t (c)")  # NULLs repeat freely
        self.assertSqlError(cur, "INSERT INTO t VALUES (7, 'A')", 1062)


    def test_updates_keep_every_index_matching_the_table(self):
        # An UPDATE that leaves an index's key unchanged does not rewrite its
        # entry; one that changes it moves the entry. Every index must still
        # answer as a scan of the table does, UNIQUE must still hold, and a
        # row must not collide with its own unchanged UNIQUE entry.
        conn, cur = self.fresh_db("ix_update")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, u INT, c VARCHAR(10), v INT NOT NULL, "
                    "KEY k_idx (k), UNIQUE KEY u_uq (u), UNIQUE KEY c_uq (c))")
        n = 300
        cur.execute("INSERT INTO t VALUES " + ", ".join(
            "(%d, %d, %d, 'c%d', 0)" % (i, i % 7, i, i) for i in range(n)))
        cur.execute("UPDATE t SET v = v + 1")                       # no index key changes
        self.assertEqual(cur.rowcount, n)
        cur.execute("UPDATE t SET k = k + 1, v = v + 1 WHERE id % 3 = 0")   # k moves, u and c stay
        cur.execute("UPDATE t SET u = u + 1000 WHERE id % 5 = 0")   # unique values move
        cur.execute("UPDATE t SET c = UPPER(c) WHERE id % 2 = 0")   # equal under the collation
        self.assertSqlError(cur, "UPDATE t SET u = 1 WHERE id = 2", 1062)
        self.assertSqlError(cur, "UPDATE t SET c = 'C3' WHERE id = 4", 1062)
        cur.execute("UPDATE t SET u = 1, v = v WHERE id = 1")       # its own value: no conflict
        self.assertEqual(cur.rowcount, 0)
        cur.execute("UPDATE t SET c = 'c1', v = 7 WHERE id = 1")
        self.assertEqual(cur.rowcount, 1)
        for k in range(8):
            cur.execute("SELECT id FROM t WHERE k = %d ORDER BY id" % k)
            via_index = [r[0] for r in cur.fetchall()]
            expect = [i for i in range(n) if (i % 7) + (1 if i % 3 == 0 else 0) == k]
            self.assertEqual(via_index, expect, k)
        for i in range(0, n, 10):
            u = i + 1000 if i % 5 == 0 else i
            cur.execute("SELECT id FROM t WHERE u = %d" % u)
            self.assertEqual(cur.fetchall(), ((i,),), u)
            cur.execute("SELECT id, c FROM t WHERE c = 'c%d'" % i)
            self.assertEqual(cur.fetchall(), ((i, ("C%d" if i % 2 == 0 else "c%d") % i),), i)
        cur.execute("SELECT COUNT(*), SUM(v) FROM t")
        self.assertEqual(cur.fetchall(), ((n, n + n // 3 + (1 if n % 3 else 0) + 6),))
        self.assertSqlError(cur, "INSERT INTO t VALUES (1000, 0, 1005, 'x', 0)", 1062)
        self.assertSqlError(cur, "INSERT INTO t VALUES (1000, 0, 5000, 'C4', 0)", 1062)
        cur.execute("INSERT INTO t VALUES (1000, 0, 5, 'x', 0)")    # 5's value moved to 1005
        # One statement changing one row's k_idx entry twice, and rows
        # deleted in an order their k_idx entries are not in.
        cur.execute("INSERT INTO t VALUES (500, 1, 500, 'c500', 0), (500, 1, 500, 'c500', 0), (501, 6, 501, 'c501', 0) "
                    "ON DUPLICATE KEY UPDATE k = k + 5")
        cur.execute("DELETE FROM t WHERE id % 4 = 1 AND id < 300")
        cur.execute("EXPLAIN SELECT k, id FROM t WHERE k BETWEEN 0 AND 10")
        self.assertIn("k_idx", " ".join(str(c) for row in cur.fetchall() for c in row))
        cur.execute("SELECT k, id FROM t WHERE k BETWEEN 0 AND 10 ORDER BY k, id")
        via_index = list(cur.fetchall())
        cur.execute("SELECT k, id FROM t WHERE k + 0 BETWEEN 0 AND 10 ORDER BY k, id")  # a scan
        self.assertEqual(via_index, list(cur.fetchall()))
        self.assertIn((6, 500), via_index)
        self.assertNotIn((1, 500), via_index)

if __name__ == "__main__":
    main()
