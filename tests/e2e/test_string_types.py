#!/usr/bin/python3
"""End-to-end tests of the string and binary column types and collations
against a real shaled, for what the MariaDB-generated tests/sql files cannot
check:
  - column metadata on the wire (type code, charset/collation id, length in
    bytes, BLOB/BINARY/ENUM flags) in text and binary (prepared statement)
    results, read with the raw protocol client of test_protocol.py;
  - binary values through prepared-statement parameters and binary rows;
  - MySQL 8 behaviour that MariaDB does not share: 1170 for a TEXT/BLOB key
    without a prefix length, 1101 for a literal BLOB/TEXT default, 3140 for
    invalid JSON text (each leaving the table unchanged).
Run by ctest (tests/CMakeLists.txt) as:
    python3 tests/e2e/test_string_types.py --shaled build/src/shaled
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402
from test_protocol import (RawClient, Reader, T_BLOB, T_LONG, T_STRING,  # noqa: E402
                           T_VAR_STRING, lenenc_str)

T_JSON = 245
BLOB_FLAG, BINARY_FLAG, ENUM_FLAG = 16, 128, 256
UTF8MB4_GENERAL_CI, UTF8MB4_BIN, BINARY = 45, 46, 63


class StringClient(RawClient):
    """RawClient whose binary rows keep string columns as bytes."""

    @staticmethod
    def decode_binary_row(p, cols):
        r = Reader(p)
        assert r.int(1) == 0
        bitmap = r.take((len(cols) + 7 + 2) // 8)
        out = []
        for i, c in enumerate(cols):
            bit = i + 2
            if bitmap[bit // 8] >> (bit % 8) & 1:
                out.append(None)
            elif c["type"] == T_LONG:
                out.append(struct.unpack("<i", r.take(4))[0])
            else:
                out.append(r.lenenc_str())
        assert r.pos == len(p), "bytes left over in a binary row"
        return out

    @staticmethod
    def decode_text_row(p):
        r = Reader(p)
        out = []
        while r.pos < len(p):
            if p[r.pos] == 0xFB:
                r.pos += 1
                out.append(None)
            else:
                out.append(r.lenenc_str())
        return out


# column: (definition, wire type, charset, length, flags that must be set)
COLUMNS = [
    ("c", "CHAR(10)", T_STRING, UTF8MB4_GENERAL_CI, 40, 0),
    ("v", "VARCHAR(10)", T_VAR_STRING, UTF8MB4_GENERAL_CI, 40, 0),
    ("vb", "VARCHAR(5) COLLATE utf8mb4_bin", T_VAR_STRING, UTF8MB4_BIN, 20, 0),
    ("tt", "TINYTEXT", T_BLOB, UTF8MB4_GENERAL_CI, 255 * 4, BLOB_FLAG),
    ("t", "TEXT", T_BLOB, UTF8MB4_GENERAL_CI, 65535 * 4, BLOB_FLAG),
    ("mt", "MEDIUMTEXT", T_BLOB, UTF8MB4_GENERAL_CI, 16777215 * 4, BLOB_FLAG),
    ("lt", "LONGTEXT", T_BLOB, UTF8MB4_GENERAL_CI, 4294967295, BLOB_FLAG),
    ("b", "BINARY(4)", T_STRING, BINARY, 4, BINARY_FLAG),
    ("vbin", "VARBINARY(8)", T_VAR_STRING, BINARY, 8, BINARY_FLAG),
    ("bl", "BLOB", T_BLOB, BINARY, 65535, BLOB_FLAG | BINARY_FLAG),
    ("tb", "TINYBLOB", T_BLOB, BINARY, 255, BLOB_FLAG | BINARY_FLAG),
    ("e", "ENUM('a','bb')", T_STRING, UTF8MB4_GENERAL_CI, 8, ENUM_FLAG),
    ("j", "JSON", T_JSON, BINARY, 4294967295, BLOB_FLAG | BINARY_FLAG),
]
VALUES = {"c": b"ab", "v": b"ab ", "vb": b"Ab", "tt": b"tiny", "t": b"text", "mt": b"medium",
          "lt": b"long", "b": b"ab\0\0", "vbin": b"a\0b", "bl": b"\x00\x01'\\", "tb": b"t",
          "e": b"bb", "j": b'{"k": [1, 2]}'}


class StringTypesTest(NodeTestCase):
    def client(self, db):
        c = StringClient(self.node.port, db=db)
        self.addCleanup(c.close)
        return c

    def fresh(self, name):
        conn, cur = self.fresh_db(name)
        self.addCleanup(conn.close)
        return name, conn, cur

    def make_table(self, db):
        c = self.client(db)
        defs = ", ".join("%s %s" % (name, d) for name, d, *_ in COLUMNS)
        c.query("CREATE TABLE m (id INT PRIMARY KEY, %s)" % defs)
        # Every value through a prepared statement: strings as STRING and
        # BLOB parameters, bytes that need quoting (NUL, quote, backslash).
        names = [name for name, *_ in COLUMNS]
        stmt, _, nparams = c.prepare("INSERT INTO m (id, %s) VALUES (?%s)" %
                                     (", ".join(names), ", ?" * len(names)))
        self.assertEqual(nparams, len(names) + 1)
        params = [(T_LONG, struct.pack("<i", 1))]
        for name in names:
            params.append((T_BLOB if name in ("bl", "vbin") else T_STRING, lenenc_str(VALUES[name])))
        self.assertEqual(c.execute(stmt, params)[0], "ok")
        return c

    def check_columns(self, cols):
        self.assertEqual([c["name"] for c in cols], ["id"] + [name for name, *_ in COLUMNS])
        for col, (name, _, wire_type, charset, length, flags) in zip(cols[1:], COLUMNS):
            with self.subTest(column=name):
                self.assertEqual(col["type"], wire_type)
                self.assertEqual(col["charset"], charset)
                self.assertEqual(col["length"], length)
                self.assertEqual(col["flags"] & flags, flags)
                if charset != BINARY:
                    self.assertEqual(col["flags"] & BINARY_FLAG, 0)

    def check_row(self, row):
        expected = [VALUES[name] for name, *_ in COLUMNS]
        self.assertEqual(row[1:], expected)

    def test_text_protocol_metadata_and_values(self):
        c = self.make_table(self.fresh("st_text")[0])
        kind, cols, rows = c.query("SELECT * FROM m")
        self.assertEqual(kind, "rows")
        self.check_columns(cols)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0][0], b"1")
        self.check_row(rows[0])

    def test_binary_protocol_metadata_and_values(self):
        c = self.make_table(self.fresh("st_binary")[0])
        # (The column count of COM_STMT_PREPARE's answer is not checked
        # here: the metadata sent at prepare time is the protocol work's.)
        stmt, _, _ = c.prepare("SELECT * FROM m WHERE id = ?")
        kind, cols, rows = c.execute(stmt, [(T_LONG, struct.pack("<i", 1))])
        self.assertEqual(kind, "rows")
        self.check_columns(cols)
        self.assertEqual(rows[0][0], 1)
        self.check_row(rows[0])
        # A BLOB parameter compared with a BLOB column: bytewise.
        stmt, _, _ = c.prepare("SELECT id FROM m WHERE bl = ? AND b = ?")
        _, _, rows = c.execute(stmt, [(T_BLOB, lenenc_str(VALUES["bl"])), (T_STRING, lenenc_str(b"ab"))])
        self.assertEqual(rows, [])  # BINARY(4) holds ab\0\0, not ab
        _, _, rows = c.execute(stmt, [(T_BLOB, lenenc_str(VALUES["bl"])), (T_STRING, lenenc_str(b"ab\0\0"))])
        self.assertEqual(rows, [[1]])

    def test_mysql_only_errors_change_nothing(self):
        _, _, cur = self.fresh("st_errors")
        self.assertSqlError(cur, "CREATE TABLE k1 (t TEXT, KEY (t))", 1170)
        self.assertSqlError(cur, "CREATE TABLE k2 (b BLOB UNIQUE)", 1170)
        self.assertSqlError(cur, "CREATE TABLE k3 (j JSON PRIMARY KEY)", 1170)
        self.assertSqlError(cur, "CREATE TABLE d1 (t TEXT DEFAULT 'x')", 1101)
        self.assertSqlError(cur, "CREATE TABLE d2 (b BLOB NOT NULL DEFAULT '')", 1101)
        cur.execute("SHOW TABLES")
        self.assertEqual(cur.fetchall(), ())
        cur.execute("CREATE TABLE ok1 (t TEXT DEFAULT NULL, KEY (t(20)))")
        cur.execute("CREATE TABLE j (id INT PRIMARY KEY, doc JSON)")
        cur.execute("INSERT INTO j VALUES (1, '{\"a\": [1, 2.5, \"x\"]}')")
        self.assertSqlError(cur, "INSERT INTO j VALUES (2, '{\"a\": }')", 3140)
        self.assertSqlError(cur, "INSERT INTO j VALUES (2, '[1, 2')", 3140)
        self.assertSqlError(cur, "INSERT INTO j VALUES (2, 'not json')", 3140)
        self.assertSqlError(cur, "UPDATE j SET doc = '{' WHERE id = 1", 3140)
        cur.execute("SELECT id, doc FROM j")
        self.assertEqual(cur.fetchall(), ((1, '{"a": [1, 2.5, "x"]}'),))
        self.assertSqlError(cur, "INSERT INTO j VALUES (3, '')", 3140)
        cur.execute("SELECT COUNT(*) FROM j")
        self.assertEqual(cur.fetchall(), ((1,),))

    def test_collation_survives_restart(self):
        db = "st_restart"
        conn, cur = self.fresh_db(db)
        cur.execute("CREATE TABLE r (name VARCHAR(20) COLLATE utf8mb4_bin PRIMARY KEY, ci CHAR(5), "
                    "e ENUM('lo', 'hi'), UNIQUE KEY (ci))")
        cur.execute("INSERT INTO r VALUES ('a', 'x', 'hi'), ('A', 'y', 'lo')")
        conn.close()
        self.node.stop()
        self.node.start()
        conn = self.connect(db)
        cur = conn.cursor()
        cur.execute("SELECT name FROM r WHERE name = 'A'")
        self.assertEqual(cur.fetchall(), (("A",),))
        self.assertSqlError(cur, "INSERT INTO r VALUES ('b', 'X', 'lo')", 1062)
        cur.execute("SELECT name FROM r ORDER BY e")
        self.assertEqual(cur.fetchall(), (("A",), ("a",)))
        cur.execute("SHOW CREATE TABLE r")
        create = cur.fetchall()[0][1]
        self.assertIn("`name` varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL", create)
        self.assertIn("`e` enum('lo','hi')", create)


if __name__ == "__main__":
    main()
