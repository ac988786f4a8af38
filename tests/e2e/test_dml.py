#!/usr/bin/python3
"""End-to-end tests of DML and queries beyond single-table SELECT: tables
without a primary key, UPDATE and DELETE, over the real shaled with PyMySQL.
Run as:
    python3 tests/e2e/test_dml.py --shaled build/src/shaled
"""
import os
import sys

import pymysql

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402


class HiddenPrimaryKeyTest(NodeTestCase):
    def test_table_without_primary_key(self):
        conn, cur = self.fresh_db("nopk")
        cur.execute("CREATE TABLE t1(a INTEGER, b INTEGER, c INTEGER, d INTEGER, e INTEGER)")
        self.assertEqual(cur.execute("INSERT INTO t1 VALUES (1,2,3,4,5), (1,2,3,4,5), "
                                     "(NULL,NULL,NULL,NULL,NULL)"), 3)
        cur.execute("SELECT * FROM t1 ORDER BY a")
        self.assertEqual([d[0] for d in cur.description], ["a", "b", "c", "d", "e"])
        self.assertEqual(cur.fetchall(), ((None,) * 5, (1, 2, 3, 4, 5), (1, 2, 3, 4, 5)))
        cur.execute("SHOW COLUMNS FROM t1")
        self.assertEqual([r[0] for r in cur.fetchall()], ["a", "b", "c", "d", "e"])
        cur.execute("SHOW CREATE TABLE t1")
        create = cur.fetchall()[0][1]
        self.assertNotIn("PRIMARY KEY", create)
        self.assertNotIn("__shale_row_id", create)
        self.assertSqlError(cur, "SELECT __shale_row_id FROM t1", 1054)
        conn.close()
        # Row ids survive a restart: new rows never reuse one (a reuse would
        # be a duplicate key).
        self.node.stop()
        self.node.start()
        conn = self.connect("nopk")
        cur = conn.cursor()
        self.assertEqual(cur.execute("INSERT INTO t1 (a) VALUES (7), (8)"), 2)
        cur.execute("SELECT a FROM t1 WHERE a IS NOT NULL ORDER BY a")
        self.assertEqual(cur.fetchall(), ((1,), (1,), (7,), (8,)))
        conn.close()


class UpdateDeleteTest(NodeTestCase):
    def setUp(self):
        self.conn, self.cur = self.fresh_db("dml")
        self.cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(5) NOT NULL, n INT)")
        self.cur.execute("INSERT INTO t VALUES (1,'a',10), (2,'b',20), (3,'c',30), (4,'d',NULL)")

    def tearDown(self):
        self.conn.close()

    def assertInfo(self, info):
        # PyMySQL keeps the OK packet's info with its length prefix.
        self.assertTrue(self.conn._result.message.endswith(info), self.conn._result.message)

    def rows(self, sql="SELECT id, v, n FROM t ORDER BY id"):
        self.cur.execute(sql)
        return self.cur.fetchall()

    def test_update_counts_changed_rows(self):
        self.assertEqual(self.cur.execute("UPDATE t SET n = n + 1 WHERE id >= 2"), 2)
        self.assertInfo(b"Rows matched: 3  Changed: 2  Warnings: 0")
        self.assertEqual(self.cur.execute("UPDATE t SET v = 'a' WHERE id = 1"), 0)
        self.assertInfo(b"Rows matched: 1  Changed: 0  Warnings: 0")
        self.assertEqual(self.rows(), ((1, "a", 10), (2, "b", 21), (3, "c", 31), (4, "d", None)))

    def test_update_with_order_by_and_limit(self):
        self.assertEqual(self.cur.execute("UPDATE t SET v = 'x' ORDER BY id DESC LIMIT 2"), 2)
        self.assertEqual(self.rows("SELECT id FROM t WHERE v = 'x' ORDER BY id"), ((3,), (4,)))

    def test_update_moves_a_primary_key(self):
        self.assertEqual(self.cur.execute("UPDATE t SET id = id + 10 ORDER BY id DESC"), 4)
        self.assertEqual(self.rows("SELECT id FROM t ORDER BY id"), ((11,), (12,), (13,), (14,)))
        self.assertEqual(self.rows("SELECT v FROM t WHERE id = 13"), (("c",),))

    def test_failing_update_changes_nothing(self):
        before = self.rows()
        self.assertSqlError(self.cur, "UPDATE t SET id = id + 1", 1062)
        self.assertSqlError(self.cur, "UPDATE t SET id = 1 WHERE id = 4", 1062)
        self.assertSqlError(self.cur, "UPDATE t SET v = NULL WHERE id > 2", 1048)
        self.assertSqlError(self.cur, "UPDATE t SET n = 2147483648", 1264)
        self.assertSqlError(self.cur, "UPDATE t SET v = 'toolong'", 1406)
        self.assertSqlError(self.cur, "UPDATE t SET nope = 1", 1054)
        self.assertSqlError(self.cur, "UPDATE nosuch SET n = 1", 1146)
        self.assertSqlError(self.cur, "UPDATE IGNORE t SET n = 1", 1235)
        self.assertEqual(self.rows(), before)

    def test_delete(self):
        self.assertEqual(self.cur.execute("DELETE FROM t WHERE n IS NULL OR id = 1"), 2)
        self.assertEqual(self.rows("SELECT id FROM t ORDER BY id"), ((2,), (3,)))
        self.assertEqual(self.cur.execute("DELETE FROM t ORDER BY id LIMIT 1"), 1)
        self.assertEqual(self.rows("SELECT id FROM t"), ((3,),))
        self.assertEqual(self.cur.execute("DELETE FROM t WHERE id = 99"), 0)
        self.assertSqlError(self.cur, "DELETE FROM t WHERE nope = 1", 1054)
        self.assertEqual(self.cur.execute("DELETE FROM t"), 1)
        self.assertEqual(self.rows(), ())
        self.cur.execute("INSERT INTO t VALUES (1, 'again', 1)")
        self.assertEqual(self.rows(), ((1, "again", 1),))


class AggregateJoinTest(NodeTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        conn = pymysql.connect(host="127.0.0.1", port=cls.node.port, user="root", autocommit=True)
        cur = conn.cursor()
        cur.execute("CREATE DATABASE q")
        cur.execute("USE q")
        cur.execute("CREATE TABLE emp (id INT PRIMARY KEY, dept INT, name VARCHAR(10), pay INT)")
        cur.execute("INSERT INTO emp VALUES (1, 10, 'ann', 100), (2, 10, 'bob', 200), "
                    "(3, 20, 'cy', 300), (4, NULL, 'dee', NULL), (5, 20, 'ed', 300)")
        cur.execute("CREATE TABLE dept (id INT PRIMARY KEY, title VARCHAR(10))")
        cur.execute("INSERT INTO dept VALUES (10, 'eng'), (20, 'ops'), (30, 'hr')")
        conn.close()

    def setUp(self):
        self.conn = self.connect("q")
        self.cur = self.conn.cursor()

    def tearDown(self):
        self.conn.close()

    def query(self, sql):
        self.cur.execute(sql)
        return self.cur.fetchall()

    def test_aggregates_without_group_by(self):
        self.assertEqual(self.query("SELECT COUNT(*), COUNT(pay), COUNT(DISTINCT pay), SUM(pay), "
                                    "MIN(name), MAX(pay) FROM emp"),
                         ((5, 4, 3, 900, "ann", 300),))
        self.assertEqual(self.query("SELECT COUNT(*), SUM(pay), MAX(name) FROM emp WHERE id > 99"),
                         ((0, None, None),))

    def test_group_by_and_having(self):
        self.assertEqual(self.query("SELECT dept, COUNT(*), SUM(pay) FROM emp GROUP BY dept ORDER BY dept"),
                         ((None, 1, None), (10, 2, 300), (20, 2, 600)))
        self.assertEqual(self.query("SELECT dept AS d, SUM(pay) AS s FROM emp GROUP BY d HAVING s > 300"),
                         ((20, 600),))
        self.assertEqual(self.query("SELECT pay DIV 100, COUNT(*) FROM emp WHERE pay IS NOT NULL "
                                    "GROUP BY 1 ORDER BY 1"),
                         ((1, 1), (2, 1), (3, 2)))
        self.assertSqlError(self.cur, "SELECT dept FROM emp WHERE COUNT(*) > 1", 1111)
        self.assertSqlError(self.cur, "SELECT COUNT(*) FROM emp GROUP BY COUNT(*)", 1056)
        self.assertSqlError(self.cur, "SELECT SUM(nope) FROM emp", 1054)
        self.cur.execute("SELECT AVG(pay) IS NOT NULL FROM emp")  # a DECIMAL now
        self.assertEqual(self.cur.fetchall(), ((1,),))

    def test_joins(self):
        self.assertEqual(self.query("SELECT e.name, d.title FROM emp e JOIN dept d ON d.id = e.dept "
                                    "ORDER BY e.id"),
                         (("ann", "eng"), ("bob", "eng"), ("cy", "ops"), ("ed", "ops")))
        self.assertEqual(self.query("SELECT name, title FROM emp, dept WHERE dept.id = emp.dept "
                                    "AND pay > 250 ORDER BY name"),
                         (("cy", "ops"), ("ed", "ops")))
        self.assertEqual(self.query("SELECT d.title, COUNT(e.id) FROM dept d LEFT OUTER JOIN emp e "
                                    "ON e.dept = d.id GROUP BY d.title ORDER BY d.title"),
                         (("eng", 2), ("hr", 0), ("ops", 2)))
        self.assertEqual(self.query("SELECT COUNT(*) FROM emp CROSS JOIN dept"), ((15,),))
        self.assertEqual(self.query("SELECT e.name FROM emp e LEFT JOIN dept d ON d.id = e.dept "
                                    "WHERE d.id IS NULL"),
                         (("dee",),))
        self.cur.execute("SELECT * FROM emp INNER JOIN dept ON dept.id = emp.dept WHERE emp.id = 1")
        self.assertEqual([c[0] for c in self.cur.description], ["id", "dept", "name", "pay", "id", "title"])
        self.assertEqual(self.cur.fetchall(), ((1, 10, "ann", 100, 10, "eng"),))
        self.assertSqlError(self.cur, "SELECT id FROM emp, dept", 1052)
        self.assertSqlError(self.cur, "SELECT * FROM emp JOIN dept ON nope = 1", 1054)
        self.assertSqlError(self.cur, "SELECT * FROM emp, emp", 1066)
        # STRAIGHT_JOIN is an inner join (the hint on join order is ignored).
        self.assertEqual(self.query("SELECT COUNT(*) FROM emp STRAIGHT_JOIN dept ON dept.id = emp.dept"),
                         self.query("SELECT COUNT(*) FROM emp JOIN dept ON dept.id = emp.dept"))
        self.assertSqlError(self.cur, "SELECT * FROM emp STRAIGHT_JOIN dept ON nope = 1", 1054)


class FunctionTest(NodeTestCase):
    def test_control_flow_string_functions_and_like(self):
        conn, cur = self.fresh_db("fn")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(10), n INT)")
        cur.execute("INSERT INTO t VALUES (1, 'Apple', 5), (2, 'banana', NULL), (3, NULL, -7)")
        cur.execute("SELECT id, CASE WHEN n > 0 THEN 'pos' WHEN n < 0 THEN 'neg' ELSE 'none' END, "
                    "CASE id WHEN 1 THEN 'one' END, IF(n IS NULL, 'y', 'n'), IFNULL(s, '?'), "
                    "COALESCE(n, id), NULLIF(id, 2), ABS(n), LENGTH(s), CONCAT(s, '-', id), "
                    "LOWER(s), UPPER(s) FROM t ORDER BY id")
        self.assertEqual(cur.fetchall(), (
            (1, "pos", "one", "n", "Apple", 5, 1, 5, 5, "Apple-1", "apple", "APPLE"),
            (2, "none", None, "y", "banana", 2, None, None, 6, "banana-2", "banana", "BANANA"),
            (3, "neg", None, "n", "?", -7, 3, 7, None, None, None, None)))
        cur.execute("SELECT id FROM t WHERE s LIKE 'a%' OR s LIKE '_anana' ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1,), (2,)))
        cur.execute("SELECT id FROM t WHERE s NOT LIKE '%an%' ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1,),))
        self.assertSqlError(cur, "SELECT IF(1, 2) FROM t", 1582)
        cur.execute("SELECT id, s REGEXP '^a' FROM t ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1, 1), (2, 0), (3, None)))
        self.assertSqlError(cur, "SELECT s REGEXP '(' FROM t", 1139)
        conn.close()


if __name__ == "__main__":
    main()
