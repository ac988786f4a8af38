#!/usr/bin/python3
"""End-to-end tests of session state and threads against a real shaled:
system variables with session and global scope, SHOW [GLOBAL] VARIABLES and
STATUS with real counters, SHOW PROCESSLIST, KILL [QUERY|CONNECTION] of a
running statement, and wait_timeout closing idle connections.

Run by ctest (tests/CMakeLists.txt) as:
    python3 tests/e2e/test_sessions.py --shaled build/src/shaled
"""
import os
import socket
import struct
import sys
import threading
import time
import unittest

import pymysql

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402


def status(cur, name, scope=""):
    cur.execute("SHOW %s STATUS LIKE '%s'" % (scope, name))
    rows = cur.fetchall()
    assert len(rows) == 1, rows
    return rows[0][1]


class SessionTest(NodeTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        conn = pymysql.connect(host="127.0.0.1", port=cls.node.port, user="root", autocommit=True)
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE s")
            cur.execute("CREATE TABLE s.big (id INT PRIMARY KEY)")
            values = ",".join("(%d)" % i for i in range(1500))
            cur.execute("INSERT INTO s.big VALUES " + values)
        conn.close()

    def test_session_and_global_scope(self):
        a = self.connect()
        b = self.connect()
        ca, cb = a.cursor(), b.cursor()
        ca.execute("SET SESSION wait_timeout = 100")
        ca.execute("SELECT @@wait_timeout, @@session.wait_timeout, @@global.wait_timeout")
        self.assertEqual(ca.fetchone(), (100, 100, 28800))
        cb.execute("SELECT @@wait_timeout")
        self.assertEqual(cb.fetchone(), (28800,))
        ca.execute("SET GLOBAL wait_timeout = 200")
        # The global changes; sessions already open keep their own value.
        cb.execute("SELECT @@wait_timeout, @@global.wait_timeout")
        self.assertEqual(cb.fetchone(), (28800, 200))
        c = self.connect()
        with c.cursor() as cc:
            cc.execute("SELECT @@wait_timeout")
            self.assertEqual(cc.fetchone(), (200,))
            cc.execute("SHOW GLOBAL VARIABLES LIKE 'WAIT_TIMEOUT'")
            self.assertEqual(cc.fetchall(), (("wait_timeout", "200"),))
        c.close()
        ca.execute("SET GLOBAL wait_timeout = 28800")
        self.assertSqlError(ca, "SET @@version = 'x'", 1238)
        self.assertSqlError(ca, "SET GLOBAL version_comment = 'x'", 1238)
        self.assertSqlError(ca, "SET GLOBAL no_such_variable = 1", 1193)
        ca.execute("SET NAMES latin1")
        ca.execute("SELECT @@character_set_client, @@character_set_results")
        self.assertEqual(ca.fetchone(), ("latin1", "latin1"))
        ca.execute("SELECT @@max_allowed_packet, CONNECTION_ID() = %d" % a.thread_id())
        self.assertEqual(ca.fetchone(), (64 << 20, 1))
        a.close()
        b.close()

    def test_status_counters(self):
        conn = self.connect()
        cur = conn.cursor()
        before = int(status(cur, "Com_select"))
        cur.execute("SELECT 1")
        cur.execute("SELECT 2")
        self.assertEqual(int(status(cur, "Com_select")), before + 2)
        self.assertGreaterEqual(int(status(cur, "Com_select", "GLOBAL")), before + 2)
        q1 = int(status(cur, "Questions"))
        cur.execute("SELECT 1")
        self.assertEqual(int(status(cur, "Questions")), q1 + 2)
        self.assertGreater(int(status(cur, "Bytes_received")), 0)
        self.assertGreater(int(status(cur, "Bytes_sent")), 0)
        self.assertGreaterEqual(int(status(cur, "Threads_connected")), 1)
        self.assertGreaterEqual(int(status(cur, "Uptime")), 0)
        self.assertEqual(status(cur, "Ssl_cipher"), "")
        conn.close()
        tls = pymysql.connect(host="127.0.0.1", port=self.node.port, user="root", ssl={"ssl": {}})
        with tls.cursor() as cur:
            self.assertNotEqual(status(cur, "Ssl_cipher"), "")
            self.assertIn(status(cur, "Ssl_version"), ("TLSv1.2", "TLSv1.3"))
        tls.close()

    def test_processlist(self):
        a = self.connect(db="s")
        b = self.connect()
        with b.cursor() as cur:
            cur.execute("SHOW PROCESSLIST")
            rows = {r[0]: r for r in cur.fetchall()}
            self.assertEqual([d[0] for d in cur.description],
                             ["Id", "User", "Host", "db", "Command", "Time", "State", "Info"])
        self.assertIn(a.thread_id(), rows)
        row = rows[a.thread_id()]
        self.assertEqual((row[1], row[3], row[4], row[7]), ("root", "s", "Sleep", None))
        self.assertTrue(row[2].startswith("127.0.0.1:"), row[2])
        me = rows[b.thread_id()]
        self.assertEqual((me[4], me[7]), ("Query", "SHOW PROCESSLIST"))
        a.close()
        b.close()

    def running_query(self, conn, sql, out):
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
                out.append(("rows", cur.fetchall()))
        except pymysql.MySQLError as e:
            out.append(("error", e.args[0]))

    def wait_for_query(self, cur, thread_id):
        deadline = time.time() + 30
        while time.time() < deadline:
            cur.execute("SHOW FULL PROCESSLIST")
            for r in cur.fetchall():
                if r[0] == thread_id and r[4] == "Query":
                    return
            time.sleep(0.05)
        self.fail("query never showed up in the process list")

    def test_kill_query_stops_a_running_statement(self):
        victim = self.connect()
        killer = self.connect()
        out = []
        huge = "SELECT COUNT(*) FROM s.big a, s.big b, s.big c"
        t = threading.Thread(target=self.running_query, args=(victim, huge, out))
        t.start()
        with killer.cursor() as cur:
            self.wait_for_query(cur, victim.thread_id())
            started = time.time()
            cur.execute("KILL QUERY %d" % victim.thread_id())
        t.join(30)
        self.assertFalse(t.is_alive())
        # The cross join would run for many minutes; a loaded machine may
        # delay the kill by seconds, not by that.
        self.assertLess(time.time() - started, 20)
        self.assertEqual(out, [("error", 1317)])
        # The connection survives and runs the next statement.
        with victim.cursor() as cur:
            cur.execute("SELECT 42")
            self.assertEqual(cur.fetchone(), (42,))
        victim.close()
        killer.close()

    def test_kill_connection_closes_it(self):
        victim = self.connect()
        killer = self.connect()
        out = []
        t = threading.Thread(target=self.running_query,
                             args=(victim, "SELECT COUNT(*) FROM s.big a, s.big b, s.big c", out))
        t.start()
        with killer.cursor() as cur:
            self.wait_for_query(cur, victim.thread_id())
            cur.execute("KILL %d" % victim.thread_id())
        t.join(20)
        self.assertFalse(t.is_alive())
        self.assertEqual(len(out), 1)
        self.assertEqual(out[0][0], "error")
        with self.assertRaises(pymysql.MySQLError):
            with victim.cursor() as cur:
                cur.execute("SELECT 1")
        with killer.cursor() as cur:
            # The thread leaves the list once its statement has stopped.
            deadline = time.time() + 30
            while True:
                cur.execute("SHOW PROCESSLIST")
                ids = [r[0] for r in cur.fetchall()]
                if victim.thread_id() not in ids or time.time() > deadline:
                    break
                time.sleep(0.05)
            self.assertNotIn(victim.thread_id(), ids)
            self.assertSqlError(cur, "KILL 999999", 1094)
        killer.close()

    def test_kill_needs_ownership_or_super(self):
        root = self.connect()
        with root.cursor() as cur:
            cur.execute("CREATE USER kim IDENTIFIED BY 'k'")
        kim = pymysql.connect(host="127.0.0.1", port=self.node.port, user="kim", password="k")
        kim2 = pymysql.connect(host="127.0.0.1", port=self.node.port, user="kim", password="k")
        with kim.cursor() as cur:
            self.assertSqlError(cur, "KILL %d" % root.thread_id(), 1095)
            # Without PROCESS a user sees only their own threads.
            cur.execute("SHOW PROCESSLIST")
            self.assertEqual(sorted(r[0] for r in cur.fetchall()),
                             sorted([kim.thread_id(), kim2.thread_id()]))
            cur.execute("KILL QUERY %d" % kim2.thread_id())
            cur.execute("KILL CONNECTION %d" % kim2.thread_id())
        with root.cursor() as cur:
            cur.execute("SELECT 1")  # root's connection was not touched
        kim.close()
        root.close()

    def test_com_process_kill(self):
        victim = self.connect()
        killer = self.connect()
        killer.kill(victim.thread_id())  # PyMySQL sends COM_PROCESS_KILL
        with self.assertRaises(pymysql.MySQLError):
            with victim.cursor() as cur:
                cur.execute("SELECT 1")
        with self.assertRaises(pymysql.MySQLError) as ctx:
            killer.kill(999999)
        self.assertEqual(ctx.exception.args[0], 1094)
        killer.close()

    def test_wait_timeout_closes_idle_connections(self):
        conn = self.connect()
        with conn.cursor() as cur:
            cur.execute("SET SESSION wait_timeout = 1")
        idle_since = time.time()
        # The server closes it after a second of silence: watch for that from
        # another connection (a statement on this one would reset the clock).
        watcher = self.connect()
        with watcher.cursor() as cur:
            deadline = time.time() + 30
            while True:
                cur.execute("SHOW PROCESSLIST")
                if conn.thread_id() not in [r[0] for r in cur.fetchall()] or time.time() > deadline:
                    break
                time.sleep(0.1)
        watcher.close()
        # Not before the timeout (less the OK's trip to this thread, which a
        # loaded machine can stretch to a good part of a second).
        self.assertGreaterEqual(time.time() - idle_since, 0.5)
        with self.assertRaises(pymysql.MySQLError):
            with conn.cursor() as cur:
                cur.execute("SELECT 1")
        busy = self.connect()
        with busy.cursor() as cur:
            # Silences of about 1 s (2 s of slack for a loaded machine) add
            # up to more than the timeout without closing the connection.
            cur.execute("SET SESSION wait_timeout = 3")
            for _ in range(5):
                time.sleep(1)
                cur.execute("SELECT 1")  # activity keeps it open
        busy.close()


class StatementThreadsTest(NodeTestCase):
    """Statements blocked on row locks hold only their own connections'
    threads: with 24 waiters, other sessions are still answered at once
    (a thread per connection, connection.h)."""

    def test_lock_waiters_do_not_starve_other_sessions(self):
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE lw")
        cur.execute("CREATE TABLE lw.t (id INT PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO lw.t VALUES (1, 0), (2, 0)")
        holder = self.connect()
        hc = holder.cursor()
        hc.execute("BEGIN")
        hc.execute("SELECT v FROM lw.t WHERE id = 1 FOR UPDATE")
        waiters = 24  # more than a small pool of statement threads would have
        results = []
        lock = threading.Lock()

        def wait_for_lock():
            c = self.connect()
            try:
                with c.cursor() as wc:
                    wc.execute("SET innodb_lock_wait_timeout = 30")
                    wc.execute("UPDATE lw.t SET v = v + 1 WHERE id = 1")
                with lock:
                    results.append("ok")
            except Exception as e:  # reported below
                with lock:
                    results.append(e)
            finally:
                c.close()

        threads = [threading.Thread(target=wait_for_lock) for _ in range(waiters)]
        for t in threads:
            t.start()
        # Every waiter is inside its UPDATE.
        deadline = time.time() + 20
        while time.time() < deadline:
            cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'UPDATE lw.t%'")
            if cur.fetchone()[0] == waiters:
                break
            time.sleep(0.1)
        cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'UPDATE lw.t%'")
        self.assertEqual(cur.fetchone()[0], waiters)
        # Other sessions, new and old, are answered at once; row 2 is free.
        started = time.time()
        other = self.connect()
        with other.cursor() as oc:
            oc.execute("SELECT COUNT(*) FROM lw.t")
            self.assertEqual(oc.fetchone(), (2,))
            oc.execute("UPDATE lw.t SET v = 5 WHERE id = 2")
        other.close()
        cur.execute("SELECT 1")
        # Starved, these would wait for the waiters' 30 s lock wait timeout;
        # answered, they take milliseconds (seconds on a loaded machine).
        self.assertLess(time.time() - started, 15.0)
        # Each connection has a thread of its own (src/server/connection.h).
        self.assertGreaterEqual(int(status(cur, "Threads_connected", "GLOBAL")), waiters + 2)
        hc.execute("COMMIT")
        for t in threads:
            t.join(60)
        self.assertEqual(results, ["ok"] * waiters)
        cur.execute("SELECT v FROM lw.t ORDER BY id")
        self.assertEqual(cur.fetchall(), ((waiters,), (5,)))
        holder.close()
        conn.close()


class MaxConnectionsTest(NodeTestCase):
    extra_args = ("--max-connections=3",)

    def test_connection_past_the_limit_gets_1040(self):
        conns = [self.connect() for _ in range(3)]
        with self.assertRaises(pymysql.MySQLError) as ctx:
            self.connect()
        self.assertEqual(ctx.exception.args[0], 1040)
        # In place of the greeting: ERR 1040 without a SQLSTATE marker (the
        # client's capabilities are not known yet), then the server closes.
        with socket.create_connection(("127.0.0.1", self.node.port), timeout=10) as raw:
            data = b""
            while True:
                chunk = raw.recv(4096)
                if not chunk:
                    break
                data += chunk
        self.assertEqual(data[4], 0xFF, data)
        self.assertEqual(struct.unpack("<H", data[5:7])[0], 1040)
        self.assertEqual(data[7:], b"Too many connections")
        # The connections in use are unaffected; a closed one frees a place.
        with conns[0].cursor() as c:
            c.execute("SELECT 1")
            self.assertEqual(c.fetchone(), (1,))
        conns.pop().close()
        deadline = time.time() + 30
        while True:
            try:
                conns.append(self.connect())
                break
            except pymysql.MySQLError as e:
                if e.args[0] != 1040 or time.time() > deadline:
                    raise
                time.sleep(0.05)
        with conns[-1].cursor() as c:
            c.execute("SHOW GLOBAL STATUS LIKE 'Max_used_connections'")
            self.assertEqual(c.fetchone()[1], "3")
        for c in conns:
            c.close()


class UserVariablesTest(NodeTestCase):
    """User variables, ROW_COUNT(), FOUND_ROWS() and LAST_INSERT_ID() as
    MySQL defines them."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        conn = pymysql.connect(host="127.0.0.1", port=cls.node.port, user="root", autocommit=True)
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE uv")
            cur.execute("CREATE TABLE uv.t (id INT PRIMARY KEY, n INT)")
            cur.execute("INSERT INTO uv.t VALUES " + ",".join("(%d, %d)" % (i, i % 7)
                                                                for i in range(1, 101)))
        conn.close()

    def test_set_and_read_user_variables(self):
        import decimal
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("SET @a = 1, @b := 'x', @c = 1.50, @d = NULL, @e = 2.5E0")
        cur.execute("SELECT @a, @b, @c, @d, @e, @never_set")
        self.assertEqual(cur.fetchone(), (1, "x", decimal.Decimal("1.50"), None, 2.5, None))
        types = [d[1] for d in cur.description]
        self.assertEqual(types[0], pymysql.constants.FIELD_TYPE.LONGLONG)
        self.assertEqual(types[2], pymysql.constants.FIELD_TYPE.NEWDECIMAL)
        self.assertEqual(types[4], pymysql.constants.FIELD_TYPE.DOUBLE)
        # Names ignore case; a variable is an expression like any other.
        cur.execute("SET @A = @a + 1")
        cur.execute("SELECT @a, @A * 10, CONCAT(@b, @b)")
        self.assertEqual(cur.fetchone(), (2, 20, "xx"))
        # Values from queries, and in WHERE.
        cur.execute("SET @m = (SELECT MAX(n) FROM uv.t), @cnt = (SELECT COUNT(*) FROM uv.t)")
        cur.execute("SELECT @m, @cnt")
        self.assertEqual(cur.fetchone(), (6, 100))
        cur.execute("SELECT COUNT(*) FROM uv.t WHERE n = @m")
        self.assertEqual(cur.fetchone(), (14,))
        # A failing SET sets nothing.
        self.assertSqlError(cur, "SET @a = 100, @z = (SELECT nosuch FROM uv.t)", 1054)
        cur.execute("SELECT @a, @z")
        self.assertEqual(cur.fetchone(), (2, None))
        # Private to the session.
        other = self.connect()
        with other.cursor() as oc:
            oc.execute("SELECT @a")
            self.assertEqual(oc.fetchone(), (None,))
        other.close()
        conn.close()

    def test_assignment_inside_queries(self):
        # Answers as MariaDB 10.11 gives them.
        conn = self.connect()
        cur = conn.cursor()
        # One SET computes every value first: @b gets the old @a.
        cur.execute("SET @a = 5")
        cur.execute("SET @a = 1, @b = @a")
        cur.execute("SELECT @a, @b")
        self.assertEqual(cur.fetchone(), (1, 5))
        # := in a query assigns per row; later reads see the new value.
        cur.execute("SELECT @x := 3, @x + 1")
        self.assertEqual(cur.fetchone(), (3, 4))
        self.assertEqual(cur.description[0][0], "@x := 3")
        cur.execute("SELECT @u := 2 + 3 * 4")
        self.assertEqual(cur.fetchone(), (14,))
        cur.execute("SET @c := 0")
        cur.execute("SELECT @c := @c + 1 AS n FROM uv.t WHERE id <= 5")
        self.assertEqual(sorted(r[0] for r in cur.fetchall()), [1, 2, 3, 4, 5])
        cur.execute("SELECT @c")
        self.assertEqual(cur.fetchone(), (5,))
        cur.execute("SET @c := 0")
        cur.execute("SELECT SUM(@c := @c + 1) FROM uv.t WHERE id <= 4")
        self.assertEqual(int(cur.fetchone()[0]), 10)
        cur.execute("SELECT @x := 'abc', CONCAT(@x, 'd')")
        self.assertEqual(cur.fetchone(), ("abc", "abcd"))
        cur.execute("SET @n := 5")
        cur.execute("SELECT @n := NULL")
        self.assertEqual(cur.fetchone(), (None,))
        cur.execute("SELECT @n IS NULL")
        self.assertEqual(cur.fetchone(), (1,))
        # Inside SET, as part of a value.
        cur.execute("SET @s = (@t := 7) + 1")
        cur.execute("SELECT @s, @t")
        self.assertEqual(cur.fetchone(), (8, 7))
        conn.close()

    def test_row_count(self):
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("CREATE TABLE uv.rc (id INT PRIMARY KEY, v INT)")
        cur.execute("SELECT ROW_COUNT()")
        self.assertEqual(cur.fetchone(), (0,))  # DDL affects no rows
        cur.execute("INSERT INTO uv.rc VALUES (1, 0), (2, 0), (3, 0)")
        cur.execute("SELECT ROW_COUNT()")
        self.assertEqual(cur.fetchone(), (3,))
        cur.execute("SELECT ROW_COUNT()")
        self.assertEqual(cur.fetchone(), (-1,))  # the previous statement was a SELECT
        cur.execute("UPDATE uv.rc SET v = 1 WHERE id <= 2")
        cur.execute("SELECT ROW_COUNT()")
        self.assertEqual(cur.fetchone(), (2,))
        cur.execute("DELETE FROM uv.rc")
        cur.execute("SELECT ROW_COUNT()")
        self.assertEqual(cur.fetchone(), (3,))
        self.assertSqlError(cur, "INSERT INTO uv.nosuch VALUES (1)", 1146)
        cur.execute("SELECT ROW_COUNT()")
        self.assertEqual(cur.fetchone(), (-1,))
        conn.close()

    def test_found_rows(self):
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("SELECT SQL_CALC_FOUND_ROWS id FROM uv.t WHERE n = 3 ORDER BY id LIMIT 2, 3")
        self.assertEqual(cur.fetchall(), ((17,), (24,), (31,)))
        cur.execute("SELECT FOUND_ROWS()")
        self.assertEqual(cur.fetchone(), (14,))
        # Without SQL_CALC_FOUND_ROWS: the rows the last SELECT returned.
        cur.execute("SELECT id FROM uv.t ORDER BY id LIMIT 4")
        cur.fetchall()
        cur.execute("SELECT FOUND_ROWS()")
        self.assertEqual(cur.fetchone(), (4,))
        cur.execute("SELECT FOUND_ROWS()")
        self.assertEqual(cur.fetchone(), (1,))  # the previous SELECT returned one row
        cur.execute("SELECT SQL_CALC_FOUND_ROWS DISTINCT n FROM uv.t ORDER BY n LIMIT 1")
        self.assertEqual(cur.fetchall(), ((0,),))
        cur.execute("SELECT FOUND_ROWS()")
        self.assertEqual(cur.fetchone(), (7,))
        conn.close()

    def test_last_insert_id(self):
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("SELECT LAST_INSERT_ID()")
        self.assertEqual(cur.fetchone(), (0,))
        cur.execute("SELECT LAST_INSERT_ID(41 + 1)")
        self.assertEqual(cur.fetchone(), (42,))
        cur.execute("SELECT LAST_INSERT_ID()")
        self.assertEqual(cur.fetchone(), (42,))
        # The OK packet of the statement carries it as its insert id.
        cur.execute("SET @x = LAST_INSERT_ID(7)")
        self.assertEqual(cur.lastrowid, 7)
        cur.execute("SELECT LAST_INSERT_ID(), @x")
        self.assertEqual(cur.fetchone(), (7, 7))
        # An INSERT into a table without AUTO_INCREMENT keeps it.
        cur.execute("INSERT INTO uv.t VALUES (1000, 0)")
        cur.execute("SELECT LAST_INSERT_ID()")
        self.assertEqual(cur.fetchone(), (7,))
        cur.execute("DELETE FROM uv.t WHERE id = 1000")
        # Per connection.
        other = self.connect()
        with other.cursor() as oc:
            oc.execute("SELECT LAST_INSERT_ID()")
            self.assertEqual(oc.fetchone(), (0,))
        other.close()
        conn.close()


class WalBufferWaitTest(NodeTestCase):
    """Async WAL with a 4 KiB buffer: each 3 KB row's record fills most of it,
    so concurrent writers find it full and wait for the flusher; SHOW STATUS
    adds up their waits. (The flusher is woken as soon as one record is in,
    so a lone writer rarely waits; four writers in parallel do.)"""
    extra_args = ("--wal-sync=async", "--wal-buffer-kb=4", "--wal-flush-interval-ms=300")

    def test_writers_waiting_for_the_buffer_are_counted(self):
        conn = self.connect()
        cur = conn.cursor()
        self.assertEqual(status(cur, "Shale_wal_buffer_wait_us", "GLOBAL"), "0")
        cur.execute("CREATE DATABASE w")
        cur.execute("CREATE TABLE w.t (id INT PRIMARY KEY, v VARCHAR(3000))")
        errors = []

        def writer(k):
            try:
                c = self.connect()
                with c.cursor() as wc:
                    for i in range(50):
                        wc.execute("INSERT INTO w.t VALUES (%s, %s)", (k * 1000 + i, "x" * 3000))
                c.close()
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertGreater(int(status(cur, "Shale_wal_buffer_wait_us", "GLOBAL")), 0)
        cur.execute("SELECT COUNT(*) FROM w.t")
        self.assertEqual(cur.fetchall(), ((200,),))
        conn.close()


if __name__ == "__main__":
    main()
