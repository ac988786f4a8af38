#!/usr/bin/python3
"""Numeric types over the wire, against a real shaled: the column
definitions MySQL sends for TINYINT..BIGINT [UNSIGNED], DECIMAL(p,s),
DOUBLE, FLOAT and for computed DECIMAL/DOUBLE results (type code, length,
decimals, UNSIGNED/BINARY flags, charset 63), their text-protocol values,
their binary-protocol (prepared statement) encodings, and DOUBLE/DECIMAL
parameters bound through COM_STMT_EXECUTE. Expected figures are MariaDB's
for the same statements."""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402
from test_protocol import (RawClient, T_DOUBLE, T_FLOAT, T_INT24, T_LONG, T_LONGLONG,  # noqa: E402
                           T_NEWDECIMAL, T_SHORT, T_TINY, T_VAR_STRING)
from test_protocol import COLUMN_UNSIGNED_FLAG as UNSIGNED_FLAG  # noqa: E402

BINARY_FLAG, NUM_FLAG = 128, 32768


class NumericTypesTest(NodeTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = RawClient(cls.node.port)
        for sql in ("CREATE DATABASE n",
                    "CREATE TABLE n.t (id INT PRIMARY KEY, ti TINYINT, su SMALLINT UNSIGNED, "
                    "mi MEDIUMINT, iu INT UNSIGNED, bi BIGINT, de DECIMAL(10,3) NOT NULL, "
                    "db DOUBLE, fl FLOAT)",
                    "INSERT INTO n.t VALUES (1, -5, 65535, -8388608, 4000000000, -9000000000, "
                    "1.2345, 0.1, 1.5), (2, NULL, NULL, NULL, NULL, NULL, -7.25, NULL, NULL)"):
            kind = c.query(sql)
            assert kind[0] == "ok", kind
        c.close()

    def columns(self, sql):
        c = RawClient(self.node.port, db="n")
        try:
            _, cols, rows = c.query(sql)
        finally:
            c.close()
        return cols, rows

    def test_column_definitions_as_mysql_sends_them(self):
        cols, _ = self.columns("SELECT ti, su, mi, iu, bi, de, db, fl FROM t")
        got = [(c["type"], c["length"], c["decimals"], bool(c["flags"] & UNSIGNED_FLAG),
                c["charset"]) for c in cols]
        self.assertEqual(got, [
            (T_TINY, 4, 0, False, 63), (T_SHORT, 5, 0, True, 63), (T_INT24, 9, 0, False, 63),
            (T_LONG, 10, 0, True, 63), (T_LONGLONG, 20, 0, False, 63),
            (T_NEWDECIMAL, 12, 3, False, 63), (T_DOUBLE, 22, 31, False, 63),
            (T_FLOAT, 12, 31, False, 63)])
        for c in cols:
            self.assertTrue(c["flags"] & NUM_FLAG, c)
            self.assertTrue(c["flags"] & BINARY_FLAG, c)
        # de is NOT NULL.
        self.assertTrue(cols[5]["flags"] & 1)

    def test_computed_results_carry_mysql_precision_and_scale(self):
        cols, rows = self.columns("SELECT 1/3, 5.0/3, 1.5*2.25, de*2, de/3, SUM(de), AVG(ti), 1e0/3 "
                                  "FROM t WHERE id = 1")
        got = [(c["type"], c["length"], c["decimals"]) for c in cols]
        self.assertEqual(got, [(T_NEWDECIMAL, 7, 4), (T_NEWDECIMAL, 8, 5), (T_NEWDECIMAL, 7, 3),
                               (T_NEWDECIMAL, 13, 3), (T_NEWDECIMAL, 16, 7),
                               (T_NEWDECIMAL, 34, 3), (T_NEWDECIMAL, 9, 4),
                               (T_DOUBLE, 23, 31)])
        self.assertEqual(rows, [["0.3333", "1.66667", "3.375", "2.470", "0.4116667", "1.235",
                                 "-5.0000", "0.3333333333333333"]])

    def test_text_values(self):
        _, rows = self.columns("SELECT id, ti, su, mi, iu, bi, de, db, fl FROM t ORDER BY id")
        self.assertEqual(rows, [
            ["1", "-5", "65535", "-8388608", "4000000000", "-9000000000", "1.235", "0.1", "1.5"],
            ["2", None, None, None, None, None, "-7.250", None, None]])

    def test_binary_protocol_encodes_every_numeric_type(self):
        c = RawClient(self.node.port, db="n")
        try:
            stmt, ncols, nparams = c.prepare(
                "SELECT id, ti, su, mi, iu, bi, de, db, fl FROM t ORDER BY id")
            self.assertEqual(nparams, 0)  # (result columns are described at execute)
            _, cols, rows = c.execute(stmt, [])
        finally:
            c.close()
        self.assertEqual(rows[0], [1, -5, 65535, -8388608, 4000000000, -9000000000, "1.235", 0.1, 1.5])
        self.assertEqual(rows[1], [2, None, None, None, None, None, "-7.250", None, None])

    def test_double_and_decimal_parameters(self):
        c = RawClient(self.node.port, db="n")
        try:
            stmt, _, nparams = c.prepare("SELECT ? + 1, ? * 2")
            self.assertEqual(nparams, 2)
            # A DOUBLE parameter stays DOUBLE; a NEWDECIMAL one is exact.
            params = [(T_DOUBLE, struct.pack("<d", 0.5)),
                      (T_NEWDECIMAL, b"\x051.255")]
            _, cols, rows = c.execute(stmt, params)
        finally:
            c.close()
        self.assertEqual([col["type"] for col in cols], [T_DOUBLE, T_NEWDECIMAL])
        self.assertEqual(rows, [[1.5, "2.510"]])

    def test_division_by_zero_warns(self):
        conn = self.connect("n")
        cur = conn.cursor()
        cur.execute("SELECT 1/0, 5 DIV 0, 5 % 0")
        self.assertEqual(cur.fetchall(), ((None, None, None),))
        cur.execute("SHOW WARNINGS")
        self.assertEqual([w[1] for w in cur.fetchall()], [1365, 1365, 1365])
        conn.close()


if __name__ == "__main__":
    main()
