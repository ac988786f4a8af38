"""Checks shaled with mysql-connector-python (Oracle's driver), both its pure
Python protocol and its C extension: text queries, server-side prepared
statements (cursor(prepared=True): COM_STMT_PREPARE/EXECUTE), TLS,
multi-statements, values near max_allowed_packet, user variables and
ROW_COUNT()/FOUND_ROWS().

Run by tests/e2e/test_clients.py with the interpreter of the repo's
virtualenv (.venv, made by scripts/install-deps.sh; Debian 12 does not
package the connector):
    .venv/bin/python tests/clients/python/connector_client.py --port N
Prints one line per failed check, then "ok" (exit 0) or exits 1.
"""
import argparse
import datetime
import decimal
import sys

import mysql.connector
from mysql.connector import FieldType

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, flush=True)


def text(v):
    return v.decode() if isinstance(v, (bytes, bytearray)) else v


def dec_param(pure, digits):
    """A DECIMAL parameter: a Decimal for the pure connector, its text for the
    C extension. mysql-connector-python 9.1.0's C extension writes past a heap
    block when it binds a Decimal after other parameters
    (MySQLPrepStmt_execute, mysql_capi.c:3413, seen with valgrind against
    MariaDB 10.11 as well as shaled); the client then aborts at random with
    "malloc(): unaligned tcache chunk detected". The server converts the text
    to DECIMAL exactly as MySQL does, so the stored value is the same."""
    return decimal.Decimal(digits) if pure else digits


def connect(port, pure, **kw):
    return mysql.connector.connect(host="127.0.0.1", port=port, user="root", password="",
                                   use_pure=pure, autocommit=True, **kw)


def run(port, pure):
    tag = "pure" if pure else "cext"
    db = "mcp_" + tag
    conn = connect(port, pure, ssl_disabled=True)
    try:
        cur = conn.cursor()
        # -- text protocol --
        cur.execute("DROP DATABASE IF EXISTS " + db)
        cur.execute("CREATE DATABASE " + db)
        cur.execute("CREATE TABLE %s.t (id BIGINT PRIMARY KEY, n INT, s VARCHAR(40), "
                    "d DECIMAL(10,2))" % db)
        cur.execute("INSERT INTO %s.t VALUES (1, -5, 'one', 1.50), (2, NULL, NULL, NULL), "
                    "(3, 7, 'three', -2.25)" % db)
        check(cur.rowcount == 3, "%s: insert rowcount %r" % (tag, cur.rowcount))
        cur.execute("SELECT id, n, s, d FROM %s.t ORDER BY id" % db)
        rows = [tuple(text(v) for v in r) for r in cur.fetchall()]
        check(rows == [(1, -5, "one", decimal.Decimal("1.50")), (2, None, None, None),
                       (3, 7, "three", decimal.Decimal("-2.25"))], "%s: text rows %r" % (tag, rows))
        types = [d[1] for d in cur.description]
        check(types == [FieldType.LONGLONG, FieldType.LONG, FieldType.VAR_STRING,
                        FieldType.NEWDECIMAL], "%s: text column types %r" % (tag, types))

        # -- server-side prepared statements --
        pc = conn.cursor(prepared=True)
        ins = "INSERT INTO %s.t (id, n, s, d) VALUES (?, ?, ?, ?)" % db
        pc.execute(ins, (10, -1, "it's \\ ten", dec_param(pure, "10.25")))
        pc.execute(ins, (11, None, None, None))
        pc.execute(ins, (2**40, 2.0, b"bytes", 3))
        check(pc.rowcount == 1, "%s: prepared insert rowcount %r" % (tag, pc.rowcount))
        pc.execute("SELECT id, n, s, d FROM %s.t WHERE id >= ? ORDER BY id" % db, (10,))
        names = [d[0] for d in pc.description]
        check(names == ["id", "n", "s", "d"], "%s: prepared column names %r" % (tag, names))
        rows = [tuple(text(v) for v in r) for r in pc.fetchall()]
        check(rows == [(10, -1, "it's \\ ten", decimal.Decimal("10.25")), (11, None, None, None),
                       (2**40, 2, "bytes", decimal.Decimal("3.00"))],
              "%s: prepared rows %r" % (tag, rows))
        # The same statement again, with other parameters.
        pc.execute("SELECT id, n, s, d FROM %s.t WHERE id >= ? ORDER BY id" % db, (11,))
        check(len(pc.fetchall()) == 2, "%s: re-executed statement" % tag)
        pc.execute("SELECT ?, ?", (datetime.datetime(2024, 1, 31, 10, 20, 30),
                                   datetime.date(2023, 12, 1)))
        got = [text(v) for v in pc.fetchall()[0]]
        check(got == ["2024-01-31 10:20:30", "2023-12-01"], "%s: date parameters %r" % (tag, got))
        # The C extension's prepared cursor drops the error number (it
        # raises InterfaceError(str(err)), errno -1, whatever the server
        # says), so there the message is checked.
        try:
            pc.execute("SELECT nosuch FROM %s.t WHERE id = ?" % db, (1,))
            check(False, "%s: unknown column accepted" % tag)
        except mysql.connector.Error as e:
            check(e.errno == 1054 if pure else "Unknown column 'nosuch'" in e.msg,
                  "%s: unknown column error %r" % (tag, e))
        try:
            pc.execute(ins, (1, 1, "dup", 1))
            check(False, "%s: duplicate key accepted" % tag)
        except mysql.connector.Error as e:
            check(e.errno == 1062 if pure else "Duplicate entry '1'" in e.msg,
                  "%s: duplicate key error %r" % (tag, e))
        pc.close()

        # -- user variables, ROW_COUNT(), FOUND_ROWS(), LAST_INSERT_ID() --
        cur.execute("SET @a = 41, @s = 'x'")
        cur.execute("SELECT @a + 1, @s, @unset")
        got = tuple(text(v) for v in cur.fetchone())
        check(got == (42, "x", None), "%s: user variables %r" % (tag, got))
        cur.execute("UPDATE %s.t SET n = 0 WHERE id < 4" % db)
        cur.execute("SELECT ROW_COUNT()")
        check(cur.fetchone()[0] == 3, "%s: ROW_COUNT after UPDATE" % tag)
        cur.execute("SELECT SQL_CALC_FOUND_ROWS id FROM %s.t ORDER BY id LIMIT 2" % db)
        check(len(cur.fetchall()) == 2, "%s: SQL_CALC_FOUND_ROWS rows" % tag)
        cur.execute("SELECT FOUND_ROWS()")
        check(cur.fetchone()[0] == 6, "%s: FOUND_ROWS" % tag)
        cur.execute("SELECT LAST_INSERT_ID(77)")
        cur.fetchall()
        cur.execute("SELECT LAST_INSERT_ID()")
        check(cur.fetchone()[0] == 77, "%s: LAST_INSERT_ID" % tag)
        pc = conn.cursor(prepared=True)
        pc.execute("SET @p = ?", (5,))
        pc.execute("SELECT @p * ?", (3,))
        check(pc.fetchone()[0] == 15, "%s: user variable through a prepared statement" % tag)
        pc.close()

        # -- every column type through prepared statements (binary both ways) --
        cur.execute("CREATE TABLE %s.types (id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, "
                    "si SMALLINT, mi MEDIUMINT, bu BIGINT UNSIGNED, f FLOAT, d DOUBLE, "
                    "de DECIMAL(12,3), c CHAR(5), vc VARCHAR(20), vb VARBINARY(10), tx TEXT, "
                    "bl BLOB, e ENUM('a','b'), j JSON, dt DATE, dtt DATETIME(3), ts TIMESTAMP, "
                    "tm TIME, y YEAR)" % db)
        # BIGINT UNSIGNED holds values up to 2^63-1 in Shale for now.
        values = (1, -128, 255, -32768, -8388608, 2**63 - 1, 1.5, -2.25,
                  dec_param(pure, "123456789.125"), "abc", "\u00fcn\u00ef", b"\x00\x01\xff",
                  "long text", b"blob\x00data", "b", '{"k": [1, 2]}', datetime.date(2024, 2, 29),
                  datetime.datetime(2024, 1, 31, 10, 20, 30, 123000),
                  # TIME as text and positive: the C extension sends every
                  # timedelta parameter as 00:00:00, and the pure connector
                  # reads a negative binary TIME as positive (both so with
                  # MariaDB too).
                  datetime.datetime(2024, 1, 31, 10, 20, 30), "12:34:56", 2024)
        pc = conn.cursor(prepared=True)
        pc.execute("INSERT INTO %s.types VALUES (%s)" % (db, ", ".join(["?"] * len(values))), values)
        pc.execute("INSERT INTO %s.types (id) VALUES (?)" % db, (2,))
        pc.execute("SELECT * FROM %s.types WHERE id = ?" % db, (1,))
        got = tuple(pc.fetchone())
        norm = tuple(bytes(v) if isinstance(v, bytearray) else v for v in got)
        want = (values[:8] + (decimal.Decimal("123456789.125"),) + values[9:19]
                + (datetime.timedelta(hours=12, minutes=34, seconds=56),) + values[20:])
        for name, g, w in zip(pc.column_names, norm, want):
            if isinstance(w, str) and isinstance(g, bytes):
                g = g.decode()
            if isinstance(w, bytes) and isinstance(g, str):
                g = g.encode()
            if name == "j" and isinstance(g, (bytes, str)):
                g = text(g)
            if name == "y" and pure:
                # The pure connector reads a binary YEAR (int<2>) as a
                # length-encoded string (it does so with MySQL and MariaDB
                # too): 2024 = E8 07 comes back as b'\x07'.
                continue
            check(g == w, "%s: prepared %s: got %r, want %r" % (tag, name, g, w))
        pc.execute("SELECT * FROM %s.types WHERE id = ?" % db, (2,))
        got = tuple(pc.fetchone())
        check(got[1:] == (None,) * (len(values) - 1), "%s: prepared NULLs %r" % (tag, got))
        pc.close()

        # -- what the connector itself reads and sets on a connection --
        check(conn.get_server_info().startswith("8.0"), "%s: server info" % tag)
        check(conn.autocommit is True, "%s: autocommit property" % tag)
        conn.database = db  # USE
        check(conn.database == db, "%s: database property" % tag)
        check(isinstance(conn.time_zone, str) and conn.time_zone, "%s: time_zone" % tag)
        check(isinstance(conn.sql_mode, str), "%s: sql_mode" % tag)
        conn.time_zone = "+00:00"
        check(conn.time_zone == "+00:00", "%s: time_zone set" % tag)
        conn.ping(reconnect=False)
        check("Uptime" in str(conn.cmd_statistics()), "%s: statistics" % tag)
        # reset_session: COM_RESET_CONNECTION, then the variables given.
        conn.reset_session(user_variables={"after_reset": 9},
                           session_variables={"wait_timeout": 77})
        cur = conn.cursor()
        cur.execute("SELECT @after_reset, @a, @@session.wait_timeout")
        got = tuple(cur.fetchone())
        check(got == (9, None, 77), "%s: reset_session %r" % (tag, got))

        # -- multi-statements --
        results = []
        for r in cur.execute("SELECT 1; SELECT 2, 3; SET @m = 4", multi=True):
            results.append(r.fetchall() if r.with_rows else r.rowcount)
        check(results == [[(1,)], [(2, 3)], 0], "%s: multi-statement results %r" % (tag, results))
        cur.close()
    finally:
        conn.close()

    # -- values near max_allowed_packet (the server's is 4 MiB here) --
    conn = connect(port, pure, ssl_disabled=True)
    try:
        cur = conn.cursor()
        cur.execute("SELECT @@max_allowed_packet")
        limit = cur.fetchone()[0]
        check(limit == 4 * 1024 * 1024, "%s: max_allowed_packet %r" % (tag, limit))
        big = "y" * (limit - 1024)
        cur.execute("SELECT LENGTH(%s)", (big,))
        check(cur.fetchone()[0] == len(big), "%s: large text parameter" % tag)
        pc = conn.cursor(prepared=True)
        pc.execute("SELECT LENGTH(?), ?", (big, "z"))
        got = pc.fetchone()
        check(got[0] == len(big) and text(got[1]) == "z", "%s: large prepared parameter" % tag)
        pc.execute("SELECT ?", (big,))
        got = text(pc.fetchone()[0])
        check(got == big, "%s: large value round trip (%d bytes)" % (tag, len(got or "")))
        pc.close()
        # A VARCHAR column as wide as a row allows, filled and read back.
        cur.execute("CREATE TABLE %s.wide (id INT PRIMARY KEY, v VARCHAR(16000))" % db)
        wide = "w" * 16000
        cur.execute("INSERT INTO %s.wide VALUES (1, %%s)" % db, (wide,))
        cur.execute("SELECT v FROM %s.wide" % db)
        check(text(cur.fetchone()[0]) == wide, "%s: wide VARCHAR value" % tag)
        # LONGBLOBs just under max_allowed_packet: stored through a prepared
        # statement (binary parameter) and read back through both protocols.
        cur.execute("CREATE TABLE %s.blobs (id INT PRIMARY KEY, b LONGBLOB)" % db)
        blob = bytes(range(256)) * ((limit - 4096) // 256)
        pc = conn.cursor(prepared=True)
        pc.execute("INSERT INTO %s.blobs VALUES (?, ?)" % db, (1, blob))
        pc.execute("SELECT b, LENGTH(b) FROM %s.blobs WHERE id = ?" % db, (1,))
        got = pc.fetchone()
        check(bytes(got[0]) == blob and got[1] == len(blob),
              "%s: LONGBLOB through the binary protocol (%d bytes)" % (tag, len(got[0] or b"")))
        pc.close()
        cur.execute("SELECT b FROM %s.blobs WHERE id = 1" % db)
        got = cur.fetchone()[0]
        check(bytes(got) == blob, "%s: LONGBLOB through the text protocol" % tag)
        # Over the limit: the server refuses the packet (1153) and closes.
        try:
            cur.execute("SELECT LENGTH(%s)", ("x" * (limit + 1024),))
            cur.fetchall()
            check(False, "%s: packet over max_allowed_packet accepted" % tag)
        except mysql.connector.Error as e:
            check(e.errno in (1153, 2013, 2055), "%s: oversized packet errno %r" % (tag, e.errno))
    finally:
        conn.close()

    # -- TLS --
    conn = connect(port, pure, ssl_disabled=False, ssl_verify_cert=False)
    try:
        cur = conn.cursor()
        cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        cipher = text(cur.fetchone()[1])
        check(bool(cipher), "%s: no TLS cipher" % tag)
        pc = conn.cursor(prepared=True)
        pc.execute("SELECT s FROM %s.t WHERE id = ?" % db, (10,))
        check(text(pc.fetchone()[0]) == "it's \\ ten", "%s: prepared over TLS" % tag)
        pc.close()
        cur.execute("DROP DATABASE " + db)
    finally:
        conn.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    for pure in (True, False):
        try:
            run(args.port, pure)
        except Exception as e:  # a crash of the client is a failed check too
            check(False, "%s: %s: %s" % ("pure" if pure else "cext", type(e).__name__, e))
    if failures:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
