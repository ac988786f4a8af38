#!/usr/bin/python3
"""sysbench oltp_read_write against a real shaled: prepare, a short run with
two threads, cleanup; once with server-side prepared statements
(--db-ps-mode=auto) and once with plain text queries (--db-ps-mode=disable).
Any sysbench error (a FATAL line or a non-zero exit) fails the test; the
table's rows are checked after the run.

The two-thread runs need real transactions: row locks keep two
transactions that DELETE and re-INSERT the same id from racing to 1062.

sysbench's table uses CHAR(120)/CHAR(60) columns, a secondary index k_1 and
BEGIN/COMMIT around every transaction, and sysbench's default --auto_inc=on:
id is an AUTO_INCREMENT column, prepare inserts rows without ids, the
read_write run re-inserts deleted rows with their ids, and oltp_insert
inserts id 0 so every row gets a generated id (two threads at once).
Skipped when sysbench is not installed.

Run by ctest (tests/CMakeLists.txt) as:
    python3 tests/e2e/test_sysbench.py --shaled build/src/shaled
"""
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402

TABLE_SIZE = 2000
RUN_SECONDS = 3


@unittest.skipUnless(shutil.which("sysbench"), "sysbench is not installed")
class SysbenchTest(NodeTestCase):
    def sysbench(self, db, ps_mode, command, threads=2, script="oltp_read_write"):
        args = ["sysbench", script, "--db-driver=mysql", "--mysql-host=127.0.0.1",
                "--mysql-port=%d" % self.node.port, "--mysql-user=root", "--mysql-password=",
                "--mysql-db=%s" % db, "--tables=1", "--table-size=%d" % TABLE_SIZE,
                "--threads=%d" % threads, "--time=%d" % RUN_SECONDS, "--events=0",
                "--report-interval=0", "--db-ps-mode=%s" % ps_mode, command]
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        out = proc.stdout.decode(errors="replace")
        self.assertEqual(proc.returncode, 0, "sysbench %s (%s) failed:\n%s\nshaled log:\n%s" %
                         (command, ps_mode, out[-4000:], self.node.log()[-2000:]))
        self.assertNotIn("FATAL", out, out[-4000:])
        return out

    def run_workload(self, ps_mode, threads):
        db = "sb_%s_%d" % (ps_mode, threads)
        conn, cur = self.fresh_db(db)
        self.addCleanup(conn.close)
        self.sysbench(db, ps_mode, "prepare")
        cur.execute("SELECT COUNT(*), MIN(id), MAX(id) FROM sbtest1")
        self.assertEqual(cur.fetchall(), ((TABLE_SIZE, 1, TABLE_SIZE),))
        cur.execute("SHOW INDEX FROM sbtest1")
        self.assertIn("k_1", [row[2] for row in cur.fetchall()])

        out = self.sysbench(db, ps_mode, "run", threads)
        self.assertIn("transactions:", out)
        transactions = int(out.split("transactions:")[1].split()[0])
        self.assertGreater(transactions, 0, out)

        # Each transaction deletes and re-inserts one row: the count stays;
        # the secondary index agrees with the table; c is CHAR(120) text.
        cur.execute("SELECT COUNT(*) FROM sbtest1")
        self.assertEqual(cur.fetchall()[0][0], TABLE_SIZE)
        cur.execute("SELECT COUNT(*) FROM sbtest1 WHERE k >= 0")
        self.assertEqual(cur.fetchall()[0][0], TABLE_SIZE)
        cur.execute("SELECT MAX(CHAR_LENGTH(c)), MAX(CHAR_LENGTH(pad)) FROM sbtest1")
        self.assertEqual(cur.fetchall(), ((119, 59),))

        self.sysbench(db, ps_mode, "cleanup")
        cur.execute("SHOW TABLES")
        self.assertEqual(cur.fetchall(), ())

    def test_insert_with_generated_ids(self):
        db = "sb_insert"
        conn, cur = self.fresh_db(db)
        self.addCleanup(conn.close)
        self.sysbench(db, "disable", "prepare", script="oltp_insert")
        cur.execute("SHOW COLUMNS FROM sbtest1 LIKE 'id'")
        self.assertEqual(cur.fetchall()[0][5], "auto_increment")
        cur.execute("SELECT COUNT(*), MIN(id), MAX(id) FROM sbtest1")
        self.assertEqual(cur.fetchall(), ((TABLE_SIZE, 1, TABLE_SIZE),))
        out = self.sysbench(db, "disable", "run", 2, script="oltp_insert")
        writes = int(out.split("write:")[1].split()[0])
        self.assertGreater(writes, 0, out)
        # Every insert got its own id, above the prepared ones.
        cur.execute("SELECT COUNT(*), COUNT(DISTINCT id), MIN(id) FROM sbtest1")
        self.assertEqual(cur.fetchall(), ((TABLE_SIZE + writes, TABLE_SIZE + writes, 1),))
        cur.execute("SELECT COUNT(*) FROM sbtest1 WHERE id > %d" % TABLE_SIZE)
        self.assertEqual(cur.fetchall()[0][0], writes)
        self.sysbench(db, "disable", "cleanup", script="oltp_insert")

    def test_prepared_statements_two_threads(self):
        self.run_workload("auto", 2)

    def test_text_queries_two_threads(self):
        self.run_workload("disable", 2)

    def test_prepared_statements_one_thread(self):
        self.run_workload("auto", 1)

    def test_text_queries_one_thread(self):
        self.run_workload("disable", 1)


if __name__ == "__main__":
    main()
