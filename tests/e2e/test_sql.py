#!/usr/bin/python3
"""End-to-end SQL tests: the real shaled over TCP with the mariadb CLI and
PyMySQL. Run by ctest (tests/CMakeLists.txt) as:
    python3 tests/e2e/test_sql.py --shaled build/src/shaled
"""
import os
import subprocess
import sys
import threading
import time

import pymysql

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402


def mariadb(port, sql, *extra, password=None):
    """Runs the mariadb CLI in batch mode; returns (rc, stdout, stderr)."""
    cmd = ["mariadb", "-h127.0.0.1", "-P%d" % port, "-uroot", "--batch", "--skip-column-names"]
    if password:
        cmd.append("-p" + password)
    cmd += list(extra) + ["-e", sql]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


ShaleTestCase = NodeTestCase


class CliTest(ShaleTestCase):
    def test_done_when_scenario_and_restart(self):
        rc, out, err = mariadb(self.node.port,
                               "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(20)); "
                               "INSERT INTO d.t VALUES (1,'a'),(2,'b'),(3,'c'); "
                               "SELECT v FROM d.t WHERE id >= 2 ORDER BY id DESC")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.split(), ["c", "b"])
        self.node.stop()
        self.node.start()
        rc, out, err = mariadb(self.node.port, "SELECT id, v FROM d.t ORDER BY id")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines(), ["1\ta", "2\tb", "3\tc"])

    def test_cli_errors_carry_mysql_codes(self):
        cases = [("SELECT * FROM nosuchdb.t", "ERROR 1146 (42S02)"),
                 ("USE nosuchdb", "ERROR 1049 (42000)"),
                 ("SELEC 1", "ERROR 1064 (42000)"),
                 ("SELECT nosuch", "ERROR 1054 (42S22)")]
        for sql, prefix in cases:
            rc, out, err = mariadb(self.node.port, sql)
            self.assertNotEqual(rc, 0)
            self.assertIn(prefix, err, sql)

    def test_cli_connects_with_database_and_reads_variables(self):
        mariadb(self.node.port, "CREATE DATABASE IF NOT EXISTS clidb")
        rc, out, err = mariadb(self.node.port, "SELECT DATABASE(), @@version_comment, @@autocommit",
                               "clidb")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.strip().split("\t"), ["clidb", "Shale distributed SQL database", "1"])
        rc, out, err = mariadb(self.node.port, "SELECT 1", "nosuchdb")
        self.assertNotEqual(rc, 0)
        self.assertIn("1049", err)


class PyMySQLTest(ShaleTestCase):
    def setUp(self):
        self.conn = self.connect()
        self.cur = self.conn.cursor()
        self.cur.execute("DROP DATABASE IF EXISTS app")
        self.cur.execute("CREATE DATABASE app")
        self.conn.select_db("app")  # COM_INIT_DB
        self.cur.execute("CREATE TABLE users (id BIGINT PRIMARY KEY, name VARCHAR(32) NOT NULL, "
                         "age INT, city VARCHAR(16) DEFAULT 'x') SLICES=3")
        rows = ",".join("(%d, 'user%03d', %s, '%s')" % (i, i, "NULL" if i % 10 == 0 else i % 50,
                                                       ["ams", "ber", "cph"][i % 3])
                        for i in range(1, 201))
        self.cur.execute("INSERT INTO users VALUES " + rows)
        self.assertEqual(self.cur.rowcount, 200)

    def tearDown(self):
        self.conn.close()

    def q(self, sql, *args):
        self.cur.execute(sql, args or None)
        return list(self.cur.fetchall())

    def test_point_and_range_on_key(self):
        self.assertEqual(self.q("SELECT name FROM users WHERE id = 42"), [("user042",)])
        self.assertEqual(self.q("SELECT name FROM users WHERE id = 999"), [])
        got = self.q("SELECT id FROM users WHERE id > 195 ORDER BY id")
        self.assertEqual(got, [(i,) for i in range(196, 201)])
        got = self.q("SELECT id FROM users WHERE id >= 10 AND id < 13 ORDER BY id DESC")
        self.assertEqual(got, [(12,), (11,), (10,)])
        got = self.q("SELECT id FROM users WHERE id BETWEEN 5 AND 7 ORDER BY 1")
        self.assertEqual(got, [(5,), (6,), (7,)])
        got = self.q("SELECT id FROM users WHERE 3 >= id ORDER BY id")
        self.assertEqual(got, [(1,), (2,), (3,)])

    def test_filters_on_other_columns(self):
        got = self.q("SELECT id FROM users WHERE age = 7 ORDER BY id")
        self.assertEqual(got, [(7,), (57,), (107,), (157,)])
        got = self.q("SELECT id FROM users WHERE age IS NULL ORDER BY id LIMIT 3")
        self.assertEqual(got, [(10,), (20,), (30,)])
        got = self.q("SELECT id, city FROM users WHERE city = 'ber' AND id < 12 ORDER BY id")
        self.assertEqual(got, [(1, "ber"), (4, "ber"), (7, "ber"), (10, "ber")])
        got = self.q("SELECT id FROM users WHERE age IN (1, 2) OR name = 'user100' ORDER BY id")
        self.assertEqual(got, [(1,), (2,), (51,), (52,), (100,), (101,), (102,), (151,), (152,)])
        got = self.q("SELECT DISTINCT city FROM users ORDER BY city")
        self.assertEqual(got, [("ams",), ("ber",), ("cph",)])

    def test_order_by_and_limit(self):
        got = self.q("SELECT id, age FROM users WHERE id <= 20 ORDER BY age DESC, id LIMIT 3")
        self.assertEqual(got, [(19, 19), (18, 18), (17, 17)])
        got = self.q("SELECT id FROM users ORDER BY id LIMIT 2 OFFSET 5")
        self.assertEqual(got, [(6,), (7,)])
        got = self.q("SELECT id FROM users ORDER BY id LIMIT 5, 2")
        self.assertEqual(got, [(6,), (7,)])
        got = self.q("SELECT id AS k FROM users ORDER BY k DESC LIMIT 1")
        self.assertEqual(got, [(200,)])
        # NULLs sort first ascending.
        got = self.q("SELECT id FROM users WHERE id <= 20 ORDER BY age, id LIMIT 3")
        self.assertEqual(got, [(10,), (20,), (1,)])
        self.assertEqual(len(self.q("SELECT * FROM users")), 200)

    def test_insert_defaults_and_column_lists(self):
        self.cur.execute("INSERT INTO users (name, id) VALUES ('zed', 1000), ('amy', 1001)")
        self.assertEqual(self.cur.rowcount, 2)
        self.assertEqual(self.q("SELECT id, name, age, city FROM users WHERE id >= 1000 ORDER BY id"),
                         [(1000, "zed", None, "x"), (1001, "amy", None, "x")])
        self.cur.execute("INSERT INTO users VALUES (1002, 'bo', DEFAULT, DEFAULT)")
        self.assertEqual(self.q("SELECT city FROM users WHERE id = 1002"), [("x",)])
        self.cur.execute("INSERT INTO users (id, name) VALUES (%s, %s)", (1003, "it's"))
        self.assertEqual(self.q("SELECT name FROM users WHERE id = 1003"), [("it's",)])

    def test_errors_have_mysql_codes_and_change_nothing(self):
        c = self.cur
        self.assertSqlError(c, "SELECT * FROM nodb.users", 1146)
        self.assertSqlError(c, "USE nodb", 1049)
        self.assertSqlError(c, "CREATE TABLE nodb.t (id INT PRIMARY KEY)", 1049)
        self.assertSqlError(c, "SELECT * FROM nosuch", 1146)
        self.assertSqlError(c, "SELECT nosuch FROM users", 1054)
        self.assertSqlError(c, "SELECT id FROM users WHERE nosuch = 1", 1054)
        self.assertSqlError(c, "SELECT id FROM users ORDER BY nosuch", 1054)
        self.assertSqlError(c, "SELECT FROM users", 1064)
        self.assertSqlError(c, "CREATE TABLE users (id INT PRIMARY KEY)", 1050)
        self.assertSqlError(c, "INSERT INTO users VALUES (1, 'a', 1, 'a')", 1062)
        self.assertSqlError(c, "INSERT INTO users VALUES (500, 'a'), (501, 'b', 1, 'x')", 1136)
        self.assertSqlError(c, "INSERT INTO users VALUES (500, NULL, 1, 'x')", 1048)
        self.assertSqlError(c, "INSERT INTO users VALUES (500, '%s', 1, 'x')" % ("n" * 33), 1406)
        self.assertSqlError(c, "INSERT INTO users VALUES (500, 'a', 3000000000, 'x')", 1264)
        self.assertSqlError(c, "INSERT INTO users (nosuch) VALUES (1)", 1054)
        self.assertSqlError(c, "DROP TABLE nosuch", 1051)
        self.assertSqlError(c, "CREATE DATABASE app", 1007)
        # A duplicate in the middle of a multi-row INSERT inserts nothing.
        self.assertSqlError(c, "INSERT INTO users VALUES (300, 'a', 1, 'x'), (5, 'b', 1, 'x')", 1062)
        self.assertSqlError(c, "INSERT INTO users VALUES (300, 'a', 1, 'x'), (300, 'b', 1, 'x')", 1062)
        self.assertEqual(self.q("SELECT id FROM users WHERE id = 300"), [])
        self.assertEqual(len(self.q("SELECT id FROM users")), 200)
        # The connection stays healthy.
        self.assertEqual(self.q("SELECT 1"), [(1,)])

    def test_no_database_selected(self):
        conn = self.connect()
        cur = conn.cursor()
        self.assertSqlError(cur, "SELECT * FROM users", 1046)
        cur.execute("USE app")
        cur.execute("SELECT id FROM users WHERE id = 1")
        self.assertEqual(cur.fetchall(), ((1,),))
        conn.close()

    def test_drop_table_and_database(self):
        self.cur.execute("CREATE TABLE gone (k VARCHAR(10) PRIMARY KEY)")
        self.cur.execute("INSERT INTO gone VALUES ('a'), ('b')")
        self.assertEqual(self.q("SELECT k FROM gone WHERE k > 'a'"), [("b",)])
        self.cur.execute("DROP TABLE gone")
        self.assertSqlError(self.cur, "SELECT * FROM gone", 1146)
        self.cur.execute("DROP TABLE IF EXISTS gone")
        self.cur.execute("CREATE DATABASE scratch")
        self.cur.execute("CREATE TABLE scratch.t (a INT, b INT, PRIMARY KEY (a, b))")
        self.cur.execute("INSERT INTO scratch.t VALUES (1, 1), (1, 2), (2, 1)")
        self.assertEqual(self.q("SELECT a, b FROM scratch.t WHERE a = 1 ORDER BY b"), [(1, 1), (1, 2)])
        self.assertEqual(self.q("SELECT b FROM scratch.t WHERE a = 1 AND b = 2"), [(2,)])
        self.cur.execute("DROP DATABASE scratch")
        self.assertSqlError(self.cur, "SELECT * FROM scratch.t", 1146)

    def test_session_statements_clients_send(self):
        self.assertEqual(self.q("SELECT @@version_comment LIMIT 1"), [("Shale distributed SQL database",)])
        self.cur.execute("SET NAMES utf8mb4")
        self.assertEqual(self.q("SELECT @@character_set_client"), [("utf8mb4",)])
        self.assertEqual(self.q("SELECT DATABASE()"), [("app",)])
        self.cur.execute("SET autocommit = 0")
        self.assertEqual(self.q("SELECT @@autocommit"), [(0,)])
        self.cur.execute("SET SESSION autocommit = ON")
        self.assertEqual(self.q("SELECT @@session.autocommit"), [(1,)])
        self.assertSqlError(self.cur, "SELECT @@no_such_variable", 1193)
        self.conn.ping()
        self.conn.commit()
        self.conn.rollback()
        self.assertTrue(self.q("SELECT VERSION()")[0][0].startswith("8.0"))
        self.assertEqual(self.q("SHOW VARIABLES LIKE 'version_comment'"),
                         [("version_comment", "Shale distributed SQL database")])

    def test_mysql_string_to_number_rules(self):
        self.cur.execute("CREATE TABLE conv (id INT PRIMARY KEY, n INT DEFAULT 5, s VARCHAR(5) DEFAULT 'd')")
        self.cur.execute("INSERT INTO conv (id, n) VALUES (1, '1.5'), (2, '1e3'), (3, ' 7 ')")
        self.assertEqual(self.q("SELECT id, n FROM conv ORDER BY id"), [(1, 2), (2, 1000), (3, 7)])
        self.assertSqlError(self.cur, "INSERT INTO conv VALUES (4, 'abc', 'x')", 1366)
        self.assertSqlError(self.cur, "INSERT INTO conv VALUES (4, '12abc', 'x')", 1265)
        # Mixed comparisons are numeric, as doubles.
        self.assertEqual(self.q("SELECT '1e1' = 10, '1.5' = 1, 1 < '1.5'"), [(1, 0, 1)])
        self.assertEqual(self.q("SELECT id FROM conv WHERE id = '1.5'"), [])
        self.assertEqual(self.q("SELECT id FROM conv WHERE id < '1.5'"), [(1,)])

    def test_insert_values_empty_takes_defaults(self):
        self.cur.execute("CREATE TABLE dflt (a INT DEFAULT 3, b VARCHAR(4) DEFAULT 'x')")
        self.cur.execute("INSERT INTO dflt VALUES (), ()")
        self.assertEqual(self.q("SELECT a, b FROM dflt"), [(3, "x"), (3, "x")])
        self.assertSqlError(self.cur, "INSERT INTO users VALUES ()", 1364)

    def test_utf8_strings_round_trip(self):
        self.cur.execute("INSERT INTO users (id, name) VALUES (%s, %s)", (2000, "Zoë ✓ 日本"))
        self.assertEqual(self.q("SELECT name FROM users WHERE id = 2000"), [("Zoë ✓ 日本",)])

    def test_concurrent_inserts_of_one_key_admit_exactly_one(self):
        results = []

        def worker(n):
            conn = self.connect("app")
            try:
                conn.cursor().execute("INSERT INTO users (id, name) VALUES (7777, 'w%d')" % n)
                results.append("ok")
            except pymysql.MySQLError as e:
                results.append(e.args[0])
            finally:
                conn.close()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(results.count("ok"), 1, results)
        self.assertEqual(results.count(1062), 7, results)


class LongStatementTest(ShaleTestCase):
    def test_long_statement_does_not_stall_other_clients(self):
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE slow")
        cur.execute("CREATE TABLE slow.t (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO slow.t VALUES " + ",".join("(%d)" % i for i in range(300)))
        started = threading.Event()
        result = []

        def long_query():
            c = self.connect("slow")
            started.set()
            k = c.cursor()
            k.execute("SELECT COUNT(*) FROM t a, t b, t c")  # 27M combinations
            result.extend(k.fetchall())
            c.close()

        t = threading.Thread(target=long_query)
        t.start()
        started.wait()
        # While the long statement runs, new clients connect and are served.
        for _ in range(5):
            other = self.connect()
            oc = other.cursor()
            oc.execute("SELECT COUNT(*) FROM slow.t WHERE id < 10")
            self.assertEqual(oc.fetchall(), ((10,),))
            other.close()
        self.assertTrue(t.is_alive(), "the long statement finished too early to show anything")
        t.join()
        self.assertEqual(result, [(27000000,)])
        conn.close()


class DurabilityTest(ShaleTestCase):
    def test_acknowledged_inserts_survive_kill_9(self):
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE dur")
        cur.execute("CREATE TABLE dur.t (id INT PRIMARY KEY, v VARCHAR(64))")
        acked = []
        stop = threading.Event()

        def writer():
            c = self.connect("dur")
            i = 0
            try:
                while not stop.is_set():
                    c.cursor().execute("INSERT INTO t VALUES (%d, 'row-%d'), (%d, 'row-%d')"
                                       % (2 * i, i, 2 * i + 1, i))
                    acked.extend([2 * i, 2 * i + 1])
                    i += 1
            except pymysql.MySQLError:
                pass  # the node died under us: unacknowledged work may be lost

        t = threading.Thread(target=writer)
        t.start()
        # Not a busy loop: on a 2-core machine it would starve the writer.
        deadline = time.time() + 60
        while len(acked) < 200 and t.is_alive() and time.time() < deadline:
            time.sleep(0.01)
        if len(acked) < 200:
            stop.set()
            t.join()
            self.fail("the writer stopped early or is too slow: %d rows acknowledged" % len(acked))
        self.node.kill()  # power loss during writes
        stop.set()
        t.join()
        conn.close()
        self.node.start()
        conn = self.connect("dur")
        cur = conn.cursor()
        cur.execute("SELECT id FROM t")
        present = {r[0] for r in cur.fetchall()}
        missing = [k for k in acked if k not in present]
        self.assertEqual(missing, [], "acknowledged rows lost after kill -9")
        # Every row present holds exactly the value written.
        cur.execute("SELECT id, v FROM t WHERE id < 10 ORDER BY id")
        for k, v in cur.fetchall():
            self.assertEqual(v, "row-%d" % (k // 2))
        conn.close()


class PasswordTest(ShaleTestCase):
    extra_args = ("--root-password", "s3cret")

    def test_password_checked(self):
        conn = self.connect(password="s3cret")
        cur = conn.cursor()
        cur.execute("SELECT 1")
        self.assertEqual(cur.fetchall(), ((1,),))
        conn.close()
        with self.assertRaises(pymysql.MySQLError) as ctx:
            self.connect(password="wrong")
        self.assertEqual(ctx.exception.args[0], 1045)
        with self.assertRaises(pymysql.MySQLError) as ctx:
            self.connect()
        self.assertEqual(ctx.exception.args[0], 1045)
        rc, out, err = mariadb(self.node.port, "SELECT 2", password="s3cret")
        self.assertEqual((rc, out.strip()), (0, "2"), err)
        rc, out, err = mariadb(self.node.port, "SELECT 2", password="nope")
        self.assertIn("1045", err)


if __name__ == "__main__":
    main()
