#!/usr/bin/env python3
"""SQL whose answers a MariaDB reference file (tests/sql) cannot hold:
UUID() and UUID_SHORT() (a new value per call: format and uniqueness are
checked, not values); MySQL 8 forms MariaDB 10.11 refuses — REGEXP_LIKE
(checked against the REGEXP operator) and WITH before UPDATE/DELETE; WITH
RECURSIVE (MariaDB runs it, Shale answers 1235); EXPLAIN ANALYZE (MySQL
8's; MariaDB spells it ANALYZE SELECT); and a REGEXP pattern read from each
row, compiled again whenever it changes."""
import re

from shaled_fixture import NodeTestCase, main

UUID_V1 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-1[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


class MySql8FormsTest(NodeTestCase):
    def test_uuid_format_and_uniqueness(self):
        conn, cur = self.fresh_db("fn_uuid")
        cur.execute("CREATE TABLE u (id INT PRIMARY KEY, x VARCHAR(36))")
        # One statement evaluates UUID() once per row.
        cur.execute("INSERT INTO u VALUES " + ", ".join("(%d, UUID())" % i for i in range(200)))
        cur.execute("SELECT x, LENGTH(x) FROM u")
        rows = cur.fetchall()
        self.assertEqual(len(rows), 200)
        for x, n in rows:
            self.assertEqual(n, 36)
            self.assertRegex(x, UUID_V1)
        cur.execute("SELECT COUNT(DISTINCT x) FROM u")
        self.assertEqual(cur.fetchone()[0], 200)
        cur.execute("SELECT UUID(), UUID()")
        a, b = cur.fetchone()
        self.assertNotEqual(a, b)
        # Version-1 timestamps grow: the time fields of a later UUID are larger.
        def ts(u):
            low, mid, hi = u.split("-")[:3]
            return int(hi[1:] + mid + low, 16)
        self.assertLess(ts(a), ts(b))
        cur.execute("SELECT UUID_SHORT(), UUID_SHORT()")
        s1, s2 = cur.fetchone()
        self.assertLess(s1, s2)
        conn.close()

    def test_regexp_like_matches_the_operator(self):
        conn, cur = self.fresh_db("fn_regexp")
        cur.execute("CREATE TABLE r (id INT PRIMARY KEY, s VARCHAR(20), b VARCHAR(20) COLLATE utf8mb4_bin)")
        cur.execute("INSERT INTO r VALUES (1, 'Apple', 'Apple'), (2, 'banana', 'banana'), (3, NULL, NULL),"
                    " (4, 'a\nB', 'a\nB')")
        for pattern in ("^a", "an+", "B$", "^b", "a.b"):
            cur.execute("SELECT id, REGEXP_LIKE(s, %s), s REGEXP %s, REGEXP_LIKE(b, %s), b RLIKE %s FROM r"
                        " ORDER BY id", (pattern,) * 4)
            for row in cur.fetchall():
                self.assertEqual(row[1], row[2], (pattern, row))
                self.assertEqual(row[3], row[4], (pattern, row))
        # match_type: c (case-sensitive), i (insensitive), m (multi-line), n (. matches \n).
        cur.execute("SELECT REGEXP_LIKE('ABC', 'b', 'c'), REGEXP_LIKE('abc', 'B', 'i'),"
                    " REGEXP_LIKE(b, 'P', 'i'), REGEXP_LIKE(b, 'P'), REGEXP_LIKE('a\nb', '^b', 'm'),"
                    " REGEXP_LIKE('a\nb', 'a.b', 'n'), REGEXP_LIKE('a\nb', 'a.b') FROM r WHERE id = 1")
        self.assertEqual(cur.fetchone(), (0, 1, 1, 0, 1, 1, 0))
        self.assertSqlError(cur, "SELECT REGEXP_LIKE('a', 'a', 'z')", 1210)
        self.assertSqlError(cur, "SELECT REGEXP_LIKE('a', '(')", 1139)
        self.assertSqlError(cur, "SELECT REGEXP_LIKE('a')", 1582)
        conn.close()

    def test_pattern_per_row(self):
        # A pattern read from each row is compiled again whenever it changes;
        # answers must not leak from one row's pattern to the next.
        conn, cur = self.fresh_db("fn_regexp_rows")
        cur.execute("CREATE TABLE p (id INT PRIMARY KEY, s VARCHAR(20), p VARCHAR(20))")
        values = []
        for i in range(300):
            values.append("(%d, 'x%dy', '%s')" % (i, i, "^x%dy$" % (i % 7)))
        cur.execute("INSERT INTO p VALUES " + ", ".join(values))
        cur.execute("SELECT id FROM p WHERE s REGEXP p ORDER BY id")
        self.assertEqual([r[0] for r in cur.fetchall()], list(range(7)))
        cur.execute("SELECT COUNT(*) FROM p WHERE s REGEXP '^x[0-9]*7y$'")
        self.assertEqual(cur.fetchone()[0], len([i for i in range(300) if str(i).endswith("7")]))
        conn.close()

    def test_with_before_update_and_delete(self):
        conn, cur = self.fresh_db("cte_writes")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT, tag VARCHAR(10))")
        cur.execute("INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'a'), (4, 40, 'c')")
        cur.execute("WITH a AS (SELECT id FROM t WHERE tag = 'a') UPDATE t SET v = v + 1 WHERE id IN (SELECT id FROM a)")
        self.assertEqual(cur.rowcount, 2)
        cur.execute("SELECT id, v FROM t ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1, 11), (2, 20), (3, 31), (4, 40)))
        cur.execute("WITH big AS (SELECT id FROM t WHERE v > 30), bigger AS (SELECT id FROM big WHERE id > 3)"
                    " DELETE FROM t WHERE id IN (SELECT id FROM bigger)")
        self.assertEqual(cur.rowcount, 1)
        cur.execute("SELECT id FROM t ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1,), (2,), (3,)))
        # A CTE joined into a multi-table UPDATE.
        cur.execute("WITH m AS (SELECT tag, MAX(v) AS top FROM t GROUP BY tag)"
                    " UPDATE t JOIN m ON m.tag = t.tag SET t.v = m.top")
        cur.execute("SELECT id, v FROM t ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1, 31), (2, 20), (3, 31)))
        # EXPLAIN shows the CTE as the derived table it is bound to.
        cur.execute("EXPLAIN WITH c AS (SELECT id FROM t WHERE v > 25) SELECT COUNT(*) FROM c")
        self.assertTrue(cur.fetchall())
        self.assertSqlError(cur, "WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3)"
                                 " SELECT n FROM r", 1235)
        self.assertSqlError(cur, "WITH c AS (SELECT 1 AS x) UPDATE c SET x = 1", 1288)
        self.assertSqlError(cur, "WITH c AS (SELECT 1 AS x) DELETE FROM c", 1288)
        conn.close()

    def test_explain_analyze_runs_the_query(self):
        conn, cur = self.fresh_db("explain_analyze")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO t VALUES " + ", ".join("(%d, %d)" % (i, i % 5) for i in range(40)))
        cur.execute("EXPLAIN ANALYZE SELECT id FROM t WHERE v = 3")
        rows = cur.fetchall()
        self.assertEqual(len(rows), 1)
        plan = rows[0][0]
        self.assertIn("Filter", plan)
        last = plan.splitlines()[-1]
        self.assertRegex(last, r"^-> executed: actual rows=8, rows sent between nodes: \d+, time=[0-9.]+ ms$")
        cur.execute("EXPLAIN ANALYZE WITH c AS (SELECT id FROM t WHERE v < 2) SELECT COUNT(*) FROM c")
        self.assertIn("actual rows=1,", cur.fetchall()[0][0].splitlines()[-1])
        self.assertSqlError(cur, "EXPLAIN ANALYZE UPDATE t SET v = 1", 1235)
        self.assertSqlError(cur, "EXPLAIN FORMAT=JSON SELECT 1", 1235)
        conn.close()


if __name__ == "__main__":
    main()
