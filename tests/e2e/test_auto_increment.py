#!/usr/bin/python3
"""AUTO_INCREMENT against a real shaled: the OK packet's insert id
(cursor.lastrowid) and LAST_INSERT_ID(), the counter across a clean restart
(exact) and a kill -9 (never reused), concurrent inserters, overflow (1467),
and what SHOW CREATE TABLE / SHOW TABLE STATUS / DESCRIBE show.

Run by ctest (tests/CMakeLists.txt) as:
    python3 tests/e2e/test_auto_increment.py --shaled build/src/shaled
"""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402


class AutoIncrementTest(NodeTestCase):
    def test_insert_id_and_last_insert_id(self):
        conn, cur = self.fresh_db("ai_ids")
        self.addCleanup(conn.close)
        cur.execute("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, k INT UNIQUE, v INT)")

        def run(sql):
            cur.execute(sql)
            rowid = cur.lastrowid
            cur.execute("SELECT LAST_INSERT_ID()")
            return rowid, cur.fetchone()[0]

        # As MariaDB answers (checked by hand against 10.11): the first
        # generated id; an explicit id is the insert id but not
        # LAST_INSERT_ID(); an ON DUPLICATE KEY UPDATE that changes a row
        # reports that row's id, one that changes nothing 0.
        self.assertEqual(run("INSERT INTO t (k, v) VALUES (1, 1), (2, 2)"), (1, 1))
        self.assertEqual(run("INSERT INTO t VALUES (10, 10, 10)"), (10, 1))
        self.assertEqual(run("INSERT INTO t (k, v) VALUES (1, 5) ON DUPLICATE KEY UPDATE v = v + 1"), (1, 1))
        self.assertEqual(run("INSERT INTO t (k, v) VALUES (1, 5) ON DUPLICATE KEY UPDATE v = v"), (0, 1))
        self.assertEqual(run("INSERT INTO t (k, v) VALUES (3, 5) ON DUPLICATE KEY UPDATE v = v + 1"), (13, 13))
        self.assertEqual(run("INSERT INTO t (id, k, v) VALUES (20, 20, 20), (21, 21, 21)"), (21, 13))
        self.assertEqual(run("INSERT IGNORE INTO t (k, v) VALUES (1, 1)"), (0, 13))
        self.assertEqual(run("UPDATE t SET v = 7 WHERE id = 1"), (0, 13))
        self.assertEqual(run("REPLACE INTO t (k, v) VALUES (3, 9)"), (23, 23))
        self.assertEqual(run("INSERT INTO t (id, k, v) VALUES (0, 40, 1)"), (24, 24))
        # A failed statement leaves LAST_INSERT_ID() alone.
        self.assertSqlError(cur, "INSERT INTO t (k, v) VALUES (50, 1), (40, 2)", 1062)
        cur.execute("SELECT LAST_INSERT_ID()")
        self.assertEqual(cur.fetchone()[0], 24)
        # LAST_INSERT_ID() is per connection.
        other = self.connect("ai_ids")
        self.addCleanup(other.close)
        with other.cursor() as c2:
            c2.execute("SELECT LAST_INSERT_ID()")
            self.assertEqual(c2.fetchone()[0], 0)
            c2.execute("INSERT INTO t (k, v) VALUES (60, 1)")
            self.assertGreater(c2.lastrowid, 24)
        cur.execute("SELECT LAST_INSERT_ID()")
        self.assertEqual(cur.fetchone()[0], 24)

    def test_show_statements(self):
        conn, cur = self.fresh_db("ai_show")
        self.addCleanup(conn.close)
        cur.execute("CREATE TABLE t (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, v INT, PRIMARY KEY (id))"
                    " AUTO_INCREMENT=42")
        cur.execute("SHOW CREATE TABLE t")
        text = cur.fetchone()[1]
        self.assertIn("`id` bigint unsigned NOT NULL AUTO_INCREMENT", text)
        self.assertIn(") AUTO_INCREMENT=42 ", text)
        cur.execute("INSERT INTO t (v) VALUES (1), (2)")
        cur.execute("SHOW TABLE STATUS LIKE 't'")
        cols = [d[0] for d in cur.description]
        row = cur.fetchone()
        self.assertEqual(row[cols.index("Auto_increment")], 44)
        cur.execute("DESCRIBE t")
        self.assertEqual(cur.fetchall()[0][5], "auto_increment")
        # A table without an AUTO_INCREMENT column shows NULL and no option.
        cur.execute("CREATE TABLE plain (id INT PRIMARY KEY)")
        cur.execute("SHOW TABLE STATUS LIKE 'plain'")
        self.assertIsNone(cur.fetchone()[cols.index("Auto_increment")])
        cur.execute("SHOW CREATE TABLE plain")
        self.assertNotIn("AUTO_INCREMENT", cur.fetchone()[1])
        # CREATE TABLE ... LIKE copies the attribute, not the counter.
        cur.execute("CREATE TABLE copy LIKE t")
        cur.execute("INSERT INTO copy (v) VALUES (1)")
        cur.execute("SELECT id FROM copy")
        self.assertEqual(cur.fetchall(), ((1,),))

    def test_errors(self):
        conn, cur = self.fresh_db("ai_errors")
        self.addCleanup(conn.close)
        # MariaDB takes FLOAT/DOUBLE AUTO_INCREMENT; MySQL 8 deprecates it and
        # Shale refuses it.
        self.assertSqlError(cur, "CREATE TABLE f (id DOUBLE AUTO_INCREMENT PRIMARY KEY)", 1063)
        self.assertSqlError(cur, "CREATE TABLE f (id DECIMAL(5) AUTO_INCREMENT PRIMARY KEY)", 1063)
        self.assertSqlError(cur, "CREATE TABLE f (id DATE AUTO_INCREMENT PRIMARY KEY)", 1063)
        self.assertSqlError(cur, "CREATE TABLE f (id INT AUTO_INCREMENT, v INT)", 1075)
        self.assertSqlError(cur, "ALTER TABLE nope AUTO_INCREMENT = 5", 1146)
        # Past the column type's largest value: 1467, nothing inserted.
        cur.execute("CREATE TABLE tiny (id TINYINT AUTO_INCREMENT PRIMARY KEY) AUTO_INCREMENT=126")
        cur.execute("INSERT INTO tiny VALUES (NULL), (NULL)")
        self.assertSqlError(cur, "INSERT INTO tiny VALUES (NULL)", 1467)
        cur.execute("SELECT id FROM tiny ORDER BY id")
        self.assertEqual(cur.fetchall(), ((126,), (127,)))
        cur.execute("CREATE TABLE big (id BIGINT AUTO_INCREMENT PRIMARY KEY)")
        # (Shale never generates BIGINT's very last value, 2^63-1.)
        cur.execute("INSERT INTO big VALUES (9223372036854775805)")
        cur.execute("INSERT INTO big VALUES (NULL)")
        self.assertSqlError(cur, "INSERT INTO big VALUES (NULL)", 1467)
        cur.execute("SELECT COUNT(*) FROM big")
        self.assertEqual(cur.fetchone()[0], 2)

    def test_concurrent_inserts_get_distinct_ids(self):
        conn, cur = self.fresh_db("ai_threads")
        self.addCleanup(conn.close)
        cur.execute("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, who INT)")
        errors = []
        ids = [[] for _ in range(4)]

        def worker(n):
            try:
                c = self.connect("ai_threads")
                with c.cursor() as wc:
                    for _ in range(50):
                        wc.execute("INSERT INTO t (who) VALUES (%s), (%s)", (n, n))
                        # A statement's rows get consecutive ids.
                        ids[n].append(wc.lastrowid)
                c.close()
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        cur.execute("SELECT COUNT(*), COUNT(DISTINCT id), MIN(id), MAX(id) FROM t")
        self.assertEqual(cur.fetchone(), (400, 400, 1, 400))
        for n in range(4):
            for first in ids[n]:
                cur.execute("SELECT who FROM t WHERE id IN (%s, %s)", (first, first + 1))
                self.assertEqual(cur.fetchall(), ((n,), (n,)))


class AutoIncrementRestartTest(NodeTestCase):
    def test_counter_survives_restart_and_crash(self):
        conn, cur = self.fresh_db("ai_restart")
        cur.execute("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO t (v) VALUES (1), (2), (3)")
        conn.close()
        # A clean restart continues exactly where the ids stopped.
        self.node.stop()
        self.node.start()
        conn = self.connect("ai_restart")
        with conn.cursor() as c:
            c.execute("INSERT INTO t (v) VALUES (4)")
            self.assertEqual(c.lastrowid, 4)
        conn.close()
        # After kill -9 ids reserved before may be skipped, never reused.
        self.node.kill()
        self.node.start()
        conn = self.connect("ai_restart")
        self.addCleanup(conn.close)
        with conn.cursor() as c:
            c.execute("INSERT INTO t (v) VALUES (5)")
            self.assertGreater(c.lastrowid, 4)
            c.execute("SELECT COUNT(*), COUNT(DISTINCT id) FROM t")
            self.assertEqual(c.fetchone(), (5, 5))


if __name__ == "__main__":
    main()
