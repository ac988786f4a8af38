"""End-to-end tests of LOAD DATA LOCAL INFILE against a real shaled: the
LOCAL INFILE request (0xFB) and the client's file packets, the FIELDS /
LINES / IGNORE / column list / SET clauses, the OK info text, warnings of
bad records, the local_infile switch, and one transaction per file.

Clients: PyMySQL with local_infile=True, the mariadb CLI with
--local-infile=1, and test_protocol.RawClient for a file sent as one
payload larger than 16 MiB (split into several frames).

Run by ctest (tests/CMakeLists.txt) as:
    python3 tests/e2e/test_protocol_load_data.py --shaled build/src/shaled
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import pymysql

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402
from test_protocol import COM_QUERY, RawClient, ServerError  # noqa: E402

LOCAL_FILES = 1 << 7
MAX_FRAME = 0xFFFFFF


class LoadDataTestCase(NodeTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-load-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def file(self, content, name="data.txt"):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())
        return path

    def local(self, db):
        conn = self.connect(db, local_infile=True)
        return conn, conn.cursor()

    @staticmethod
    def info(conn):
        # PyMySQL keeps the rest of the OK packet, the info's length byte
        # included (it does so with MySQL and MariaDB servers too).
        message = conn._result.message
        if isinstance(message, str):
            message = message.encode()
        assert message and message[0] == len(message) - 1, message
        return message[1:].decode()

    @staticmethod
    def warnings(cur):
        cur.execute("SHOW WARNINGS")
        return [(r[1], r[2]) for r in cur.fetchall()]


class PyMySQLLoadTest(LoadDataTestCase):
    def setUp(self):
        super().setUp()
        conn, cur = self.fresh_db("ld")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(10), n INT)")
        conn.close()

    def test_tab_separated_default_format(self):
        path = self.file("1\talpha\t10\n2\tbeta\t20\n3\t\\N\t30\n")
        conn, cur = self.local("ld")
        n = cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE t", (path,))
        self.assertEqual(n, 3)
        self.assertEqual(self.info(conn), "Records: 3  Deleted: 0  Skipped: 0  Warnings: 0")
        cur.execute("SELECT id, name, n FROM t ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1, "alpha", 10), (2, "beta", 20), (3, None, 30)))

    def test_csv_with_quotes_escapes_header_and_crlf(self):
        path = self.file('id,name,n\r\n1,"a,b",5\r\n2,"say ""hi""",6\r\n3,tab\\there,7\r\n"4",NULL,8\r\n')
        conn, cur = self.local("ld")
        cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE t FIELDS TERMINATED BY ',' "
                    "OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n' IGNORE 1 LINES", (path,))
        cur.execute("SELECT id, name, n FROM t ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1, "a,b", 5), (2, 'say "hi"', 6), (3, "tab\there", 7),
                                          (4, None, 8)))

    def test_lines_starting_by_skips_other_text(self):
        path = self.file("xxx>1|one|1\nnoise\n>2|two|2\n")
        conn, cur = self.local("ld")
        cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE t FIELDS TERMINATED BY '|' "
                    "LINES STARTING BY '>'", (path,))
        cur.execute("SELECT id, name FROM t ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1, "one"), (2, "two")))

    def test_column_list_user_variables_and_set(self):
        path = self.file("a;10;1\nb;20;2\n")
        conn, cur = self.local("ld")
        cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE t FIELDS TERMINATED BY ';' "
                    "(name, @x, id) SET n = @x * 2 + id", (path,))
        cur.execute("SELECT id, name, n FROM t ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1, "a", 21), (2, "b", 42)))
        cur.execute("SELECT @x")  # the last record's value stays
        self.assertEqual(cur.fetchone()[0], "20")

    def test_missing_columns_take_defaults(self):
        conn, cur = self.local("ld")
        cur.execute("CREATE TABLE d (id INT PRIMARY KEY, v VARCHAR(5) DEFAULT 'dflt', w INT)")
        path = self.file("1\n2\n")
        cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE d (id)", (path,))
        cur.execute("SELECT id, v, w FROM d ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1, "dflt", None), (2, "dflt", None)))

    def test_short_row_mid_file_takes_current_timestamp_default(self):
        # Rows go to the INSERT as converted values until a short row needs
        # its CURRENT_TIMESTAMP default; the rows before and after it load
        # as given.
        conn, cur = self.local("ld")
        cur.execute("CREATE TABLE s (id INT PRIMARY KEY, ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP, n INT)")
        path = self.file("1\t2020-01-02 03:04:05\t5\n2\n3\t2021-06-07 08:09:10\t7\n")
        cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE s", (path,))
        self.assertEqual(conn.affected_rows(), 3)
        cur.execute("SELECT id, CAST(ts AS CHAR), n FROM s WHERE id <> 2 ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1, "2020-01-02 03:04:05", 5), (3, "2021-06-07 08:09:10", 7)))
        cur.execute("SELECT n, TIMESTAMPDIFF(SECOND, ts, NOW()) BETWEEN 0 AND 60 FROM s WHERE id = 2")
        self.assertEqual(cur.fetchall(), ((None, 1),))
        # A column list out of table order, leaving out a column whose
        # default is CURRENT_TIMESTAMP and one whose default is a constant.
        cur.execute("CREATE TABLE s2 (id INT PRIMARY KEY, ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP, n INT, "
                    "c VARCHAR(5) DEFAULT 'z')")
        path = self.file("5\t1\n6\t2\n")
        cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE s2 (n, id)", (path,))
        cur.execute("SELECT id, n, c, TIMESTAMPDIFF(SECOND, ts, NOW()) BETWEEN 0 AND 60 FROM s2 ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1, 5, "z", 1), (2, 6, "z", 1)))
        cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE s (n, id)", (self.file("8\t9\n"),))
        cur.execute("SELECT id, n FROM s WHERE id = 9")
        self.assertEqual(cur.fetchall(), ((9, 8),))

    def test_duplicates_skipped_with_warnings_or_replaced(self):
        conn, cur = self.local("ld")
        cur.execute("INSERT INTO t VALUES (1, 'old', 0)")
        path = self.file("1\tnew\t1\n2\tb\t2\n")
        n = cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE t", (path,))
        self.assertEqual(n, 1)
        self.assertEqual(self.info(conn), "Records: 2  Deleted: 0  Skipped: 1  Warnings: 1")
        self.assertEqual(self.warnings(cur), [(1062, "Duplicate entry '1' for key 't.PRIMARY'")])
        cur.execute("SELECT name FROM t WHERE id = 1")
        self.assertEqual(cur.fetchone()[0], "old")
        n = cur.execute("LOAD DATA LOCAL INFILE %s REPLACE INTO TABLE t", (path,))
        self.assertEqual(n, 4)  # two inserted, two replaced rows deleted
        self.assertEqual(self.info(conn), "Records: 2  Deleted: 2  Skipped: 0  Warnings: 0")
        cur.execute("SELECT name FROM t ORDER BY id")
        self.assertEqual(cur.fetchall(), (("new",), ("b",)))

    def test_bad_records_are_warnings(self):
        # Too few fields (1261), too many (1262), a value that is not a
        # number (1366, stored as 0), a string too long (1406, truncated),
        # NULL for NOT NULL (1263).
        conn, cur = self.local("ld")
        cur.execute("CREATE TABLE s (id INT PRIMARY KEY, name VARCHAR(3) NOT NULL, n INT)")
        path = self.file("1\tab\n2\tcd\t5\textra\n3\tef\tabc\n4\tlonger\t7\n5\t\\N\t8\n")
        n = cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE s", (path,))
        self.assertEqual(n, 5)
        self.assertEqual(self.info(conn), "Records: 5  Deleted: 0  Skipped: 0  Warnings: 5")
        codes = [code for code, _ in self.warnings(cur)]
        self.assertEqual(codes, [1261, 1262, 1366, 1406, 1263])
        cur.execute("SELECT id, name, n FROM s ORDER BY id")
        self.assertEqual(cur.fetchall(), ((1, "ab", None), (2, "cd", 5), (3, "ef", 0),
                                          (4, "lon", 7), (5, "", 8)))

    def test_latin1_character_set(self):
        path = self.file("1\tcaf\xe9\t1\n".encode("latin-1"))
        conn, cur = self.local("ld")
        cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE t CHARACTER SET latin1", (path,))
        cur.execute("SELECT name FROM t")
        self.assertEqual(cur.fetchone()[0], "caf\u00e9")

    def test_empty_file(self):
        path = self.file("")
        conn, cur = self.local("ld")
        self.assertEqual(cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE t", (path,)), 0)
        self.assertEqual(self.info(conn), "Records: 0  Deleted: 0  Skipped: 0  Warnings: 0")

    def test_refusals(self):
        path = self.file("1\ta\t1\n")
        # A client that did not allow local files (no CLIENT_LOCAL_FILES).
        conn = self.connect("ld")
        cur = conn.cursor()
        self.assertSqlError(cur, "LOAD DATA LOCAL INFILE '%s' INTO TABLE t" % path, 3948)
        # Server-side files: secure_file_priv is NULL.
        self.assertSqlError(cur, "LOAD DATA INFILE '%s' INTO TABLE t" % path, 1290)
        cur.execute("SELECT @@local_infile, @@secure_file_priv")
        self.assertEqual(cur.fetchone(), (1, None))
        # Unknown table and column, bad terminators: errors before the file is asked for.
        conn2, cur2 = self.local("ld")
        self.assertSqlError(cur2, "LOAD DATA LOCAL INFILE '%s' INTO TABLE nope" % path, 1146)
        self.assertSqlError(cur2, "LOAD DATA LOCAL INFILE '%s' INTO TABLE t (id, nope)" % path, 1054)
        self.assertSqlError(cur2, "LOAD DATA LOCAL INFILE '%s' INTO TABLE t FIELDS ENCLOSED BY 'ab'" % path,
                            1083)
        # The server switch.
        cur.execute("SET GLOBAL local_infile = 0")
        try:
            self.assertSqlError(cur2, "LOAD DATA LOCAL INFILE '%s' INTO TABLE t" % path, 3948)
        finally:
            cur.execute("SET GLOBAL local_infile = 1")
        cur2.execute("SELECT COUNT(*) FROM t")
        self.assertEqual(cur2.fetchone()[0], 0)
        # The connection still works after every refusal.
        cur2.execute("LOAD DATA LOCAL INFILE %s INTO TABLE t", (path,))
        cur2.execute("SELECT COUNT(*) FROM t")
        self.assertEqual(cur2.fetchone()[0], 1)

    def test_privileges(self):
        root = self.connect()
        rc = root.cursor()
        rc.execute("DROP USER IF EXISTS loader@'%'")
        rc.execute("CREATE USER loader@'%' IDENTIFIED BY 'pw'")
        rc.execute("GRANT SELECT ON ld.* TO loader@'%'")
        path = self.file("1\ta\t1\n")
        conn = pymysql.connect(host="127.0.0.1", port=self.node.port, user="loader", password="pw",
                               database="ld", local_infile=True, autocommit=True)
        cur = conn.cursor()
        self.assertSqlError(cur, "LOAD DATA LOCAL INFILE '%s' INTO TABLE t" % path, 1142)
        rc.execute("GRANT INSERT ON ld.* TO loader@'%'")
        cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE t", (path,))
        self.assertSqlError(cur, "LOAD DATA LOCAL INFILE '%s' REPLACE INTO TABLE t" % path, 1142)
        rc.execute("DROP USER loader@'%'")

    def test_one_transaction_for_the_whole_file(self):
        # 10000 rows (several internal chunks); the last one waits for a
        # row lock that another transaction holds until the lock wait times
        # out (1205): no row of the file stays.
        rows = "".join("%d\tr%d\t%d\n" % (i, i, i) for i in range(1, 10001))
        path = self.file(rows)
        holder = self.connect("ld")
        hc = holder.cursor()
        hc.execute("INSERT INTO t VALUES (10000, 'held', 0)")
        hc.execute("BEGIN")
        hc.execute("SELECT * FROM t WHERE id = 10000 FOR UPDATE")
        conn, cur = self.local("ld")
        cur.execute("SET innodb_lock_wait_timeout = 1")
        self.assertSqlError(cur, "LOAD DATA LOCAL INFILE '%s' REPLACE INTO TABLE t" % path, 1205)
        hc.execute("ROLLBACK")
        cur.execute("SELECT COUNT(*) FROM t")
        self.assertEqual(cur.fetchone()[0], 1)
        # Without the lock, all of it.
        self.assertEqual(cur.execute("LOAD DATA LOCAL INFILE %s REPLACE INTO TABLE t", (path,)), 10001)
        cur.execute("SELECT COUNT(*), SUM(n) FROM t")
        self.assertEqual(cur.fetchone(), (10000, sum(range(1, 10001))))

    def test_inside_a_transaction_rolls_back_with_it(self):
        path = self.file("1\ta\t1\n2\tb\t2\n")
        conn, cur = self.local("ld")
        cur.execute("BEGIN")
        cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE t", (path,))
        cur.execute("SELECT COUNT(*) FROM t")
        self.assertEqual(cur.fetchone()[0], 2)
        cur.execute("ROLLBACK")
        cur.execute("SELECT COUNT(*) FROM t")
        self.assertEqual(cur.fetchone()[0], 0)


class RawClientLoadTest(LoadDataTestCase):
    def test_file_payload_larger_than_16_mib_in_split_frames(self):
        conn, cur = self.fresh_db("big")
        cur.execute("CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(200))")
        line_value = "x" * 180
        count = 100000  # ~19 MB of text
        data = "".join("%d\t%s\n" % (i, line_value) for i in range(count)).encode()
        self.assertGreater(len(data), 16 * 1024 * 1024)
        c = RawClient(self.node.port, db="big", timeout=120, extra_caps=LOCAL_FILES)
        try:
            c.send_command(COM_QUERY, b"LOAD DATA LOCAL INFILE 'big.tsv' INTO TABLE b")
            request = c.read()
            self.assertEqual(request, b"\xfbbig.tsv")
            # One logical packet: frames of 0xFFFFFF bytes, then the rest.
            pos = 0
            while True:
                frame = data[pos:pos + MAX_FRAME]
                c.write(frame)
                pos += len(frame)
                if len(frame) < MAX_FRAME:
                    break
            c.write(b"")  # end of file
            kind, affected, _ = c.read_result(binary=False)
            self.assertEqual((kind, affected), ("ok", count))
            self.assertEqual(c.query("SELECT COUNT(*), MIN(LENGTH(v)) FROM b")[2], [[str(count), "180"]])
        finally:
            c.close()

    def test_client_that_declines_sends_an_empty_packet(self):
        conn, cur = self.fresh_db("dec")
        cur.execute("CREATE TABLE e (id INT PRIMARY KEY)")
        c = RawClient(self.node.port, db="dec", extra_caps=LOCAL_FILES)
        try:
            c.send_command(COM_QUERY, b"LOAD DATA LOCAL INFILE '/no/such' INTO TABLE e")
            self.assertEqual(c.read(), b"\xfb/no/such")
            c.write(b"")
            self.assertEqual(c.read_result(binary=False)[:2], ("ok", 0))
            self.assertTrue(c.ping())
        finally:
            c.close()

    def test_vanishing_client_mid_file_leaves_nothing_and_the_node_serves(self):
        conn, cur = self.fresh_db("gone")
        cur.execute("CREATE TABLE g (id INT PRIMARY KEY)")
        c = RawClient(self.node.port, db="gone", extra_caps=LOCAL_FILES)
        c.send_command(COM_QUERY, b"LOAD DATA LOCAL INFILE 'f' INTO TABLE g")
        self.assertEqual(c.read(), b"\xfbf")
        c.write(b"1\n2\n")
        c.close()  # no end-of-file packet
        deadline = time.time() + 30
        while time.time() < deadline:
            cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = 'gone'")
            if cur.fetchone()[0] == 0:
                break
            time.sleep(0.1)
        cur.execute("SELECT COUNT(*) FROM g")
        self.assertEqual(cur.fetchone()[0], 0)


class MariadbCliLoadTest(LoadDataTestCase):
    def setUp(self):
        super().setUp()
        if shutil.which("mariadb") is None:
            if os.environ.get("CI") == "true":
                self.fail("mariadb client missing")
            self.skipTest("mariadb client not installed")

    def cli(self, *args):
        return subprocess.run(["mariadb", "-h127.0.0.1", "-P%d" % self.node.port, "-uroot"] + list(args),
                              capture_output=True, text=True, timeout=60)

    def test_mariadb_local_infile(self):
        conn, cur = self.fresh_db("cli")
        cur.execute("CREATE TABLE c (id INT PRIMARY KEY, v VARCHAR(10))")
        path = self.file("1,one\n2,two\n3,three\n")
        sql = "LOAD DATA LOCAL INFILE '%s' INTO TABLE cli.c FIELDS TERMINATED BY ','" % path
        out = self.cli("--local-infile=1", "-vvv", "-e", sql)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("Query OK, 3 rows affected", out.stdout)
        self.assertIn("Records: 3  Deleted: 0  Skipped: 0  Warnings: 0", out.stdout)
        cur.execute("SELECT v FROM c ORDER BY id")
        self.assertEqual([r[0] for r in cur.fetchall()], ["one", "two", "three"])
        # Without --local-infile the client does not offer local files.
        out = self.cli("--local-infile=0", "-e", sql)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("3948", out.stderr)


if __name__ == "__main__":
    main()
