#!/usr/bin/python3
"""End-to-end tests of the planner's index-order and IN-list access paths
and of EXPLAIN over the real shaled: ORDER BY <key prefix> [DESC] LIMIT n
reads a representation in key order with no Sort (EXPLAIN shows it) and
answers exactly what a sort answers; IN lists and ORs of equalities become
point ranges; EXPLAIN FORMAT=TREE and EXPLAIN UPDATE/DELETE. Run as:
    python3 tests/e2e/test_index_order.py --shaled build/src/shaled
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402


def ops(cur, sql):
    cur.execute("EXPLAIN " + sql)
    return [op.strip() for op, _ in cur.fetchall()]


def rows(cur, sql):
    cur.execute(sql)
    return list(cur.fetchall())


class IndexOrderTest(NodeTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        conn = cls.connect(cls)
        cur = conn.cursor()
        cur.execute("DROP DATABASE IF EXISTS io")
        cur.execute("CREATE DATABASE io")
        cur.execute("USE io")
        cur.execute("CREATE TABLE posts (id INT PRIMARY KEY, user_id INT NOT NULL, last_updated BIGINT, "
                    "note VARCHAR(10), KEY user_time (user_id, last_updated)) SLICES=4")
        rng = random.Random(5)
        values = []
        for i in range(1, 601):
            ts = "NULL" if i % 37 == 0 else str(rng.randint(0, 100000))
            values.append("(%d, %d, %s, '%s')" % (i, i % 7, ts, rng.choice(["x", "y", "z"])))
        cur.execute("INSERT INTO posts VALUES " + ", ".join(values))
        cur.execute("CREATE TABLE usertable (YCSB_KEY VARCHAR(64) PRIMARY KEY, FIELD0 VARCHAR(20)) SLICES=4")
        cur.execute("INSERT INTO usertable VALUES " + ", ".join(
            "('user%05d', 'f%d')" % (i * 7 % 1000, i) for i in range(1000)))
        conn.close()

    def cursor(self):
        conn = self.connect(db="io")
        self.addCleanup(conn.close)
        return conn.cursor()

    def assertSameAsSorted(self, cur, sql, sorted_sql):
        self.assertEqual(rows(cur, sql), rows(cur, sorted_sql), sql)

    def test_equality_prefix_order_desc_limit(self):
        cur = self.cursor()
        sql = "SELECT id, last_updated FROM posts WHERE user_id = 3 ORDER BY last_updated DESC LIMIT 10"
        plan = ops(cur, sql)
        self.assertFalse(any(op.startswith("Sort") for op in plan), plan)
        self.assertTrue(any(op.startswith("IndexScan io.posts(user_time)") and "reverse limit=10" in op
                            for op in plan), plan)
        got = rows(cur, sql)
        # last_updated values are distinct per user (almost surely): compare with a sort.
        want = rows(cur, "SELECT id, last_updated FROM posts WHERE user_id = 3 ORDER BY last_updated + 0 DESC, id "
                         "LIMIT 10")
        self.assertEqual([r[1] for r in got], [r[1] for r in want])
        self.assertEqual(len(got), 10)
        # ASC puts NULLs first, as a sort does.
        self.assertSameAsSorted(
            cur, "SELECT last_updated FROM posts WHERE user_id = 2 ORDER BY last_updated LIMIT 5",
            "SELECT last_updated FROM posts WHERE user_id = 2 ORDER BY last_updated + 0 LIMIT 5")
        # Sort keys on equality-fixed columns are constants.
        self.assertFalse(any(op.startswith("Sort") for op in ops(
            cur, "SELECT id FROM posts WHERE user_id = 1 ORDER BY user_id DESC, last_updated DESC LIMIT 3")))
        # LIMIT with OFFSET.
        self.assertSameAsSorted(
            cur, "SELECT last_updated FROM posts WHERE user_id = 4 ORDER BY last_updated DESC LIMIT 3 OFFSET 4",
            "SELECT last_updated FROM posts WHERE user_id = 4 ORDER BY last_updated + 0 DESC LIMIT 3 OFFSET 4")

    def test_residual_filter_with_desc_keeps_whole_range(self):
        cur = self.cursor()
        sql = ("SELECT last_updated FROM posts WHERE user_id = 5 AND note = 'x' "
               "ORDER BY last_updated DESC LIMIT 4")
        plan = ops(cur, sql)
        self.assertFalse(any(op.startswith("Sort") for op in plan), plan)
        self.assertFalse(any("limit=4" in op for op in plan), plan)  # the filter may drop kept rows
        self.assertSameAsSorted(cur, sql, sql.replace("ORDER BY last_updated", "ORDER BY last_updated + 0"))

    def test_primary_key_scan_order(self):
        cur = self.cursor()
        sql = "SELECT YCSB_KEY, FIELD0 FROM usertable WHERE YCSB_KEY >= 'user00500' ORDER BY YCSB_KEY LIMIT 10"
        plan = ops(cur, sql)
        self.assertFalse(any(op.startswith("Sort") for op in plan), plan)
        self.assertTrue(any(op.startswith("SliceScan io.usertable") and "ordered" in op and "limit=10" in op
                            for op in plan), plan)
        got = rows(cur, sql)
        self.assertEqual([r[0] for r in got], ["user%05d" % i for i in range(500, 510)])
        # DESC over the primary key with no WHERE, and a range.
        self.assertEqual([r[0] for r in rows(cur, "SELECT YCSB_KEY FROM usertable ORDER BY YCSB_KEY DESC LIMIT 3")],
                         ["user00999", "user00998", "user00997"])
        self.assertEqual([r[0] for r in rows(cur, "SELECT YCSB_KEY FROM usertable WHERE YCSB_KEY < 'user00003' "
                                                  "ORDER BY YCSB_KEY DESC LIMIT 10")],
                         ["user00002", "user00001", "user00000"])
        # Mixed directions or an expression still sort.
        self.assertTrue(any(op.startswith("Sort") for op in ops(
            cur, "SELECT id FROM posts WHERE user_id = 1 ORDER BY last_updated DESC, id LIMIT 3")))
        self.assertTrue(any(op.startswith("Sort") for op in ops(
            cur, "SELECT id FROM posts ORDER BY id + 1 LIMIT 3")))

    def test_in_list_and_or_of_equalities(self):
        cur = self.cursor()
        sql = "SELECT id FROM posts WHERE id IN (5, 17, 5, 900, NULL, 42) ORDER BY id"
        plan = ops(cur, sql)
        self.assertTrue(any(op.startswith("SliceScan io.posts") and "points=4" in op for op in plan), plan)
        self.assertEqual(rows(cur, sql), [(5,), (17,), (42,)])
        sql = "SELECT id FROM posts WHERE user_id = 2 AND (last_updated = 1 OR last_updated = %d) ORDER BY id" % (
            rows(cur, "SELECT last_updated FROM posts WHERE id = 2")[0][0])
        plan = ops(cur, sql)
        self.assertTrue(any(op.startswith("IndexScan io.posts(user_time)") and "points=2" in op for op in plan),
                        plan)
        self.assertIn((2,), rows(cur, sql))
        # NOT IN and non-constant lists are filters over a scan.
        self.assertFalse(any("points=" in op for op in ops(cur, "SELECT id FROM posts WHERE id NOT IN (1, 2)")))
        self.assertEqual(rows(cur, "SELECT COUNT(*) FROM posts WHERE user_id IN (1, 2) AND id IN (1, 2, 8, 9)"),
                         [(4,)])

    def test_explain_formats_and_writes(self):
        cur = self.cursor()
        cur.execute("EXPLAIN FORMAT=TREE SELECT id FROM posts WHERE user_id = 3 ORDER BY last_updated DESC LIMIT 2")
        (text,), = cur.fetchall()
        lines = text.split("\n")
        self.assertTrue(lines[0].startswith("-> Limit 2 offset 0  (rows=2)"), text)
        self.assertTrue(lines[-1].startswith("    " * (len(lines) - 1) + "-> IndexScan"), text)
        cur.execute("EXPLAIN FORMAT=TRADITIONAL SELECT 1")
        self.assertEqual(len(cur.fetchall()), 2)
        plan = ops(cur, "UPDATE posts SET note = 'q' WHERE id = 7")
        self.assertTrue(plan[0].startswith("Update io.posts"), plan)
        self.assertTrue(plan[1].startswith("Filter"), plan)
        plan = ops(cur, "DELETE p FROM posts p JOIN usertable u ON u.FIELD0 = p.note")
        self.assertTrue(plan[0].startswith("Delete io.posts"), plan)
        self.assertEqual(rows(cur, "SELECT note FROM posts WHERE id = 7")[0][0] != "q", True)  # EXPLAIN ran nothing
        self.assertSqlError(cur, "EXPLAIN FORMAT=JSON SELECT 1", 1235)


class MultiTableWriteTest(NodeTestCase):
    def test_update_join_and_delete_join(self):
        conn, cur = self.fresh_db("mt")
        cur.execute("CREATE TABLE a (id INT PRIMARY KEY, v INT, KEY v (v))")
        cur.execute("CREATE TABLE b (id INT PRIMARY KEY, a_id INT, w INT)")
        cur.execute("INSERT INTO a VALUES (1, 10), (2, 20), (3, 30)")
        cur.execute("INSERT INTO b VALUES (1, 1, 5), (2, 1, 6), (3, 2, 7)")
        cur.execute("UPDATE a JOIN b ON b.a_id = a.id SET a.v = a.v + b.w")
        self.assertEqual(cur.rowcount, 2)  # a.1 joined twice, changed once
        self.assertEqual(rows(cur, "SELECT id, v FROM a ORDER BY id"), [(1, 15), (2, 27), (3, 30)])
        # The index on v was maintained.
        self.assertEqual(rows(cur, "SELECT id FROM a WHERE v = 27"), [(2,)])
        self.assertEqual(rows(cur, "SELECT id FROM a WHERE v = 20"), [])
        cur.execute("DELETE a FROM a LEFT JOIN b ON b.a_id = a.id WHERE b.id IS NULL")
        self.assertEqual(cur.rowcount, 1)
        self.assertEqual(rows(cur, "SELECT id FROM a ORDER BY id"), [(1,), (2,)])
        # Several tables written by one statement; one table twice is 1235.
        cur.execute("UPDATE a JOIN b ON b.a_id = a.id SET a.v = 1, b.w = 2")
        self.assertEqual(rows(cur, "SELECT id, v FROM a ORDER BY id"), [(1, 1), (2, 1)])
        self.assertEqual(rows(cur, "SELECT id, w FROM b ORDER BY id"), [(1, 2), (2, 2), (3, 2)])
        self.assertEqual(rows(cur, "SELECT id FROM a WHERE v = 1 ORDER BY id"), [(1,), (2,)])
        self.assertSqlError(cur, "UPDATE a x JOIN a y ON x.id = y.id SET x.v = 1, y.v = 2", 1235)
        cur.execute("DELETE a, b FROM a JOIN b ON b.a_id = a.id WHERE a.id = 2")
        self.assertEqual(cur.rowcount, 2)
        self.assertEqual(rows(cur, "SELECT id FROM a ORDER BY id"), [(1,)])
        self.assertEqual(rows(cur, "SELECT id FROM b ORDER BY id"), [(1,), (2,)])
        self.assertSqlError(cur, "UPDATE a JOIN (SELECT 1 AS k) d ON d.k = a.id SET d.k = 2", 1288)

    def test_privileges(self):
        conn, cur = self.fresh_db("mtp")
        cur.execute("CREATE TABLE a (id INT PRIMARY KEY, v INT)")
        cur.execute("CREATE TABLE b (id INT PRIMARY KEY, w INT)")
        cur.execute("INSERT INTO a VALUES (1, 1)")
        cur.execute("INSERT INTO b VALUES (1, 2)")
        cur.execute("DROP USER IF EXISTS dan")
        cur.execute("CREATE USER dan IDENTIFIED BY 'd'")
        cur.execute("GRANT SELECT, UPDATE ON mtp.a TO dan")
        import pymysql
        dan = pymysql.connect(host="127.0.0.1", port=self.node.port, user="dan", password="d", database="mtp",
                              autocommit=True)
        dcur = dan.cursor()
        # b is read without SELECT on it.
        self.assertSqlError(dcur, "UPDATE a JOIN b ON b.id = a.id SET a.v = b.w", 1142)
        cur.execute("GRANT SELECT ON mtp.b TO dan")
        dcur.execute("UPDATE a JOIN b ON b.id = a.id SET a.v = b.w")
        self.assertEqual(rows(cur, "SELECT v FROM a"), [(2,)])
        # Writing b needs UPDATE on b.
        self.assertSqlError(dcur, "UPDATE a JOIN b ON b.id = a.id SET b.w = 9", 1142)
        self.assertSqlError(dcur, "DELETE b FROM a JOIN b ON b.id = a.id", 1142)
        # Writing two tables needs the privilege on each.
        self.assertSqlError(dcur, "UPDATE a JOIN b ON b.id = a.id SET a.v = 5, b.w = 9", 1142)
        self.assertEqual(rows(cur, "SELECT v FROM a"), [(2,)])
        cur.execute("GRANT UPDATE ON mtp.b TO dan")
        dcur.execute("UPDATE a JOIN b ON b.id = a.id SET a.v = 5, b.w = 9")
        self.assertEqual(rows(cur, "SELECT a.v, b.w FROM a JOIN b ON b.id = a.id"), [(5, 9)])
        dan.close()
        cur.execute("DROP USER dan")


if __name__ == "__main__":
    main()
