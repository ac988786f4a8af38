#!/usr/bin/python3
"""Date and time types over the wire, against a real shaled: the column
definitions MariaDB sends for DATE, DATETIME(fsp), TIMESTAMP(fsp), TIME(fsp)
and YEAR (type code, length, decimals = fsp, flags, charset 63), their text
values, their binary-protocol encodings (DATE/DATETIME in 0, 4, 7 or 11
bytes, TIME in 0, 8 or 12), DATETIME/TIME parameters bound through
COM_STMT_EXECUTE and stored, and PyMySQL reading them as datetime objects.
Expected figures are MariaDB 10.11's for the same statements."""
import datetime
import os
import struct
import sys

import pymysql

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402
from test_protocol import (RawClient, ServerError, T_DATE, T_DATETIME, T_LONG, T_TIME,  # noqa: E402
                           T_TIMESTAMP, T_YEAR)

BINARY_FLAG, UNSIGNED_FLAG, ZEROFILL_FLAG = 128, 32, 64


class TemporalTypesTest(NodeTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = RawClient(cls.node.port)
        for sql in ("CREATE DATABASE tt",
                    "CREATE TABLE tt.t (id INT PRIMARY KEY, d DATE, dt DATETIME, dt3 DATETIME(3), "
                    "ts TIMESTAMP(6) NULL, tm TIME, tm2 TIME(2), y YEAR)",
                    "SET time_zone = '+00:00'",
                    "INSERT INTO tt.t VALUES "
                    "(1, '2024-01-31', '2024-02-03 04:05:06', '2024-02-03 04:05:06.789', "
                    "'2024-02-03 04:05:06.000007', '-26:03:04', '10:20:30.45', 2024), "
                    "(2, '0000-00-00', '2024-02-03 00:00:00', '2024-02-03', NULL, '00:00:00', "
                    "'838:59:59', 1999), "
                    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"):
            kind = c.query(sql)
            assert kind[0] == "ok", (sql, kind)
        c.close()

    def client(self):
        c = RawClient(self.node.port, db="tt")
        self.addCleanup(c.close)
        return c

    def test_column_definitions_as_mariadb_sends_them(self):
        _, cols, _ = self.client().query("SELECT d, dt, dt3, ts, tm, tm2, y FROM t")
        got = [(c["type"], c["length"], c["decimals"], c["charset"]) for c in cols]
        self.assertEqual(got, [(T_DATE, 10, 0, 63), (T_DATETIME, 19, 0, 63), (T_DATETIME, 23, 3, 63),
                               (T_TIMESTAMP, 26, 6, 63), (T_TIME, 10, 0, 63), (T_TIME, 13, 2, 63),
                               (T_YEAR, 4, 0, 63)])
        for c in cols[:6]:
            self.assertTrue(c["flags"] & BINARY_FLAG, c)
        self.assertTrue(cols[3]["flags"] & UNSIGNED_FLAG)
        self.assertEqual(cols[6]["flags"] & (UNSIGNED_FLAG | ZEROFILL_FLAG), UNSIGNED_FLAG | ZEROFILL_FLAG)

    def test_function_results_are_typed(self):
        _, cols, _ = self.client().query(
            "SELECT NOW(), CURDATE(), CURTIME(2), DATE_ADD(d, INTERVAL 1 DAY), "
            "DATE_ADD(d, INTERVAL 1 HOUR) FROM t WHERE id = 1")
        got = [(c["type"], c["length"], c["decimals"]) for c in cols]
        self.assertEqual(got, [(T_DATETIME, 19, 0), (T_DATE, 10, 0), (T_TIME, 13, 2), (T_DATE, 10, 0),
                               (T_DATETIME, 19, 0)])
        for c in cols:
            self.assertEqual(c["flags"] & 1, 1 if c is not cols[3] and c is not cols[4] else 0)

    def test_text_values(self):
        c = self.client()
        c.query("SET time_zone = '+00:00'")
        _, _, rows = c.query("SELECT d, dt, dt3, ts, tm, tm2, y FROM t WHERE id < 10 ORDER BY id")
        self.assertEqual(rows, [
            ["2024-01-31", "2024-02-03 04:05:06", "2024-02-03 04:05:06.789",
             "2024-02-03 04:05:06.000007", "-26:03:04", "10:20:30.45", "2024"],
            ["0000-00-00", "2024-02-03 00:00:00", "2024-02-03 00:00:00.000", None, "00:00:00",
             "838:59:59.00", "1999"],
            [None] * 7])

    def test_binary_protocol_encodes_dates_and_times(self):
        c = self.client()
        c.query("SET time_zone = '+00:00'")
        stmt, _, _ = c.prepare("SELECT d, dt, dt3, ts, tm, tm2, y FROM t WHERE id < 10 ORDER BY id")
        _, cols, rows = c.execute(stmt, [])
        self.assertEqual([col["type"] for col in cols],
                         [T_DATE, T_DATETIME, T_DATETIME, T_TIMESTAMP, T_TIME, T_TIME, T_YEAR])
        self.assertEqual(rows[0], [
            ("date4", (2024, 1, 31, 0, 0, 0, 0)),
            ("date7", (2024, 2, 3, 4, 5, 6, 0)),
            ("date11", (2024, 2, 3, 4, 5, 6, 789000)),
            ("date11", (2024, 2, 3, 4, 5, 6, 7)),
            ("time8", (1, 1, 2, 3, 4, 0)),
            ("time12", (0, 0, 10, 20, 30, 450000)),
            2024])
        self.assertEqual(rows[1], [
            ("date0", (0, 0, 0, 0, 0, 0, 0)),
            ("date4", (2024, 2, 3, 0, 0, 0, 0)),
            ("date4", (2024, 2, 3, 0, 0, 0, 0)),
            None,
            ("time0", (0, 0, 0, 0, 0, 0)),
            ("time8", (0, 34, 22, 59, 59, 0)),
            1999])
        self.assertEqual(rows[2], [None] * 7)

    def test_datetime_and_time_parameters_are_stored(self):
        c = self.client()
        stmt, _, nparams = c.prepare("INSERT INTO t (id, dt3, tm2, d) VALUES (?, ?, ?, ?)")
        self.assertEqual(nparams, 4)
        dt = (T_DATETIME, bytes([11]) + struct.pack("<HBBBBBI", 2025, 12, 31, 23, 59, 58, 123456))
        tm = (T_TIME, bytes([12]) + struct.pack("<BIBBBI", 1, 2, 3, 4, 5, 670000))
        d = (T_DATE, bytes([4]) + struct.pack("<HBB", 2025, 6, 15))
        kind = c.execute(stmt, [(T_LONG, struct.pack("<i", 10)), dt, tm, d])
        self.assertEqual(kind[0], "ok", kind)
        _, _, rows = c.query("SELECT dt3, tm2, d FROM t WHERE id = 10")
        # DATETIME(3) and TIME(2) keep 3 and 2 fraction digits (truncated).
        self.assertEqual(rows, [["2025-12-31 23:59:58.123", "-51:04:05.67", "2025-06-15"]])
        stmt, _, _ = c.prepare("SELECT id FROM t WHERE dt3 > ? ORDER BY id")
        _, _, rows = c.execute(stmt, [(T_DATETIME, bytes([7]) + struct.pack("<HBBBBB", 2024, 2, 3, 4, 5, 6))])
        self.assertEqual(rows, [[1], [10]])

    def test_bad_value_is_1292_and_changes_nothing(self):
        c = self.client()
        with self.assertRaises(ServerError) as caught:
            c.query("INSERT INTO t (id, d) VALUES (20, '2024-01-01'), (21, '2023-02-29')")
        self.assertEqual(caught.exception.code, 1292)
        _, _, rows = c.query("SELECT COUNT(*) FROM t WHERE id IN (20, 21)")
        self.assertEqual(rows, [["0"]])

    def test_pymysql_reads_python_datetimes(self):
        conn = pymysql.connect(host="127.0.0.1", port=self.node.port, user="root", database="tt")
        self.addCleanup(conn.close)
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            cur.execute("SELECT d, dt3, ts, tm, y FROM t WHERE id = 1")
            row = cur.fetchone()
            self.assertEqual(row, (datetime.date(2024, 1, 31),
                                   datetime.datetime(2024, 2, 3, 4, 5, 6, 789000),
                                   datetime.datetime(2024, 2, 3, 4, 5, 6, 7),
                                   -datetime.timedelta(hours=26, minutes=3, seconds=4), 2024))
            cur.execute("SELECT id FROM t WHERE dt = %s", (datetime.datetime(2024, 2, 3, 4, 5, 6),))
            self.assertEqual(cur.fetchall(), ((1,),))


if __name__ == "__main__":
    main()
