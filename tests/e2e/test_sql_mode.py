#!/usr/bin/python3
"""Non-strict sql_mode against a real shaled: the warnings (codes as
MariaDB 10.11 gives them, checked by hand) that INSERT and UPDATE report
when they adjust values, and the warning count of the OK packet.
tests/sql/sql_mode.test checks the stored values against MariaDB.

Run by ctest (tests/CMakeLists.txt) as:
    python3 tests/e2e/test_sql_mode.py --shaled build/src/shaled
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402


class SqlModeTest(NodeTestCase):
    def warnings(self, cur, sql):
        cur.execute(sql)
        cur.execute("SHOW WARNINGS")
        rows = cur.fetchall()
        return [(level, code) for level, code, _ in rows], [msg for _, _, msg in rows]

    def test_adjusted_values_warn(self):
        conn, cur = self.fresh_db("mode_warn")
        self.addCleanup(conn.close)
        cur.execute("CREATE TABLE ns (id INT PRIMARY KEY, i TINYINT, v VARCHAR(3), e ENUM('a'), dt DATE, "
                    "j JSON)")
        cur.execute("SET sql_mode = ''")
        codes, messages = self.warnings(
            cur, "INSERT INTO ns (id, i) VALUES (1, 300), (2, -300), (3, 'abc'), (4, '12x')")
        self.assertEqual(codes, [("Warning", 1264), ("Warning", 1264), ("Warning", 1366), ("Warning", 1265)])
        self.assertEqual(messages[1], "Out of range value for column 'i' at row 2")
        self.assertEqual(messages[3], "Data truncated for column 'i' at row 4")
        codes, messages = self.warnings(cur, "INSERT INTO ns (id, v, e, dt) VALUES (5, 'abcd', 'zz', 'nope')")
        self.assertEqual(codes, [("Warning", 1265)] * 3)
        self.assertEqual(messages[0], "Data truncated for column 'v' at row 1")
        codes, _ = self.warnings(cur, "UPDATE ns SET i = i + 1000 WHERE id = 1")
        self.assertEqual(codes, [("Warning", 1264)])
        cur.execute("SELECT i FROM ns WHERE id = 1")
        self.assertEqual(cur.fetchone()[0], 127)
        # Invalid JSON stays an error; NULL into a NOT NULL column too.
        self.assertSqlError(cur, "INSERT INTO ns (id, j) VALUES (6, '{')", 3140)
        self.assertSqlError(cur, "INSERT INTO ns (id, i) VALUES (NULL, 1)", 1048)
        # Strict again: the same value fails and changes nothing.
        cur.execute("SET sql_mode = 'STRICT_ALL_TABLES'")
        self.assertSqlError(cur, "INSERT INTO ns (id, i) VALUES (7, 300)", 1264)
        cur.execute("SELECT COUNT(*) FROM ns")
        self.assertEqual(cur.fetchone()[0], 5)

    def test_default_mode_is_strict(self):
        conn, cur = self.fresh_db("mode_default")
        self.addCleanup(conn.close)
        cur.execute("SELECT @@sql_mode LIKE '%STRICT_TRANS_TABLES%'")
        self.assertEqual(cur.fetchone()[0], 1)
        cur.execute("CREATE TABLE t (i TINYINT)")
        self.assertSqlError(cur, "INSERT INTO t VALUES (300)", 1264)


if __name__ == "__main__":
    main()
