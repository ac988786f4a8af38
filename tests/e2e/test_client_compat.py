#!/usr/bin/python3
"""End-to-end: what drivers and dump tools send on connect or in their
files, against a real shaled (issue 24, "Protocol and parser"):

  - CLIENT_FOUND_ROWS (MySQL Connector/J sets it by default; ORMs' optimistic
    locking reads the count): an UPDATE's affected rows are the rows it
    matched, ROW_COUNT() too; INSERT ... ON DUPLICATE KEY UPDATE counts an
    unchanged duplicate 1 (0 without the flag);
  - `SET autocommit=1, NAMES utf8mb4` (MariaDB Connector/J's first
    statement): NAMES inside a SET list;
  - versioned comments, as mysqldump and mariadb-dump write them:
    /*!NNNNN ... */ is SQL when NNNNN <= 80035, a comment otherwise;
    MariaDB's /*M!NNNNNN ... */ is a comment;
  - whitespace between a function's name and its parenthesis (`AVG ( x )`,
    Connector/J's `IF (EXTRA LIKE ...)`), except for the functions MySQL
    parses specially (COUNT, SUM, CAST, ...: 1064, as in MySQL).

Run by ctest (tests/CMakeLists.txt) as:
    python3 tests/e2e/test_client_compat.py --shaled build/src/shaled
"""
import os
import subprocess
import sys

import pymysql
from pymysql.constants import CLIENT

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402
from test_clients import VENV_PYTHON, missing_client  # noqa: E402

# Server-side prepared statements (COM_STMT_EXECUTE) with and without
# CLIENT_FOUND_ROWS, through mysql-connector-python's prepared cursor.
PREPARED = """
import sys
import mysql.connector
from mysql.connector.constants import ClientFlag
port = int(sys.argv[1])
for flag in (ClientFlag.FOUND_ROWS, -ClientFlag.FOUND_ROWS):
    c = mysql.connector.connect(host="127.0.0.1", port=port, user="root", password="", autocommit=True,
                                client_flags=[flag], use_pure=True)
    cur = c.cursor(prepared=True)
    cur.execute("UPDATE compat.p SET v = ? WHERE a = ?", (1, 1))
    print(cur.rowcount)
    c.close()
"""


class ClientCompatTest(NodeTestCase):
    def counts(self, found_rows):
        conn = pymysql.connect(host="127.0.0.1", port=self.node.port, user="root", password="", autocommit=True,
                               client_flag=CLIENT.FOUND_ROWS if found_rows else 0)
        cur = conn.cursor()
        cur.execute("CREATE DATABASE IF NOT EXISTS compat")
        cur.execute("DROP TABLE IF EXISTS compat.f")
        cur.execute("CREATE TABLE compat.f (a INT PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO compat.f VALUES (1, 1), (2, 2)")
        out = {}
        out["unchanged"] = cur.execute("UPDATE compat.f SET v = 1 WHERE a = 1")
        cur.execute("SELECT ROW_COUNT()")
        out["row_count"] = cur.fetchone()[0]
        out["two_unchanged"] = cur.execute("UPDATE compat.f SET v = v WHERE a IN (1, 2)")
        out["one_changed"] = cur.execute("UPDATE compat.f SET v = 2 WHERE a IN (1, 2)")
        out["odku_unchanged"] = cur.execute("INSERT INTO compat.f VALUES (1, 1) ON DUPLICATE KEY UPDATE v = 2")
        out["odku_changed"] = cur.execute("INSERT INTO compat.f VALUES (1, 1) ON DUPLICATE KEY UPDATE v = 5")
        out["odku_inserted"] = cur.execute("INSERT INTO compat.f VALUES (3, 3) ON DUPLICATE KEY UPDATE v = 5")
        out["multi_match_none"] = cur.execute("UPDATE compat.f SET v = 9 WHERE a = 99")
        conn.close()
        return out

    def test_found_rows_counts_matched_rows(self):
        self.assertEqual(self.counts(found_rows=False), {
            "unchanged": 0, "row_count": 0, "two_unchanged": 0, "one_changed": 1, "odku_unchanged": 0,
            "odku_changed": 2, "odku_inserted": 1, "multi_match_none": 0})
        self.assertEqual(self.counts(found_rows=True), {
            "unchanged": 1, "row_count": 1, "two_unchanged": 2, "one_changed": 2, "odku_unchanged": 1,
            "odku_changed": 2, "odku_inserted": 1, "multi_match_none": 0})

    def test_found_rows_through_prepared_statements(self):
        if not os.access(VENV_PYTHON, os.X_OK):
            missing_client(self, "no virtualenv at .venv")
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE IF NOT EXISTS compat")
        cur.execute("DROP TABLE IF EXISTS compat.p")
        cur.execute("CREATE TABLE compat.p (a INT PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO compat.p VALUES (1, 1)")
        conn.close()
        run = subprocess.run([VENV_PYTHON, "-c", PREPARED, str(self.node.port)], capture_output=True, text=True,
                             timeout=120)
        if "No module named 'mysql'" in run.stderr:
            missing_client(self, "mysql-connector-python is not in .venv")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.split(), ["1", "0"], "rows matched with CLIENT_FOUND_ROWS, changed without")

    def query(self, sql):
        conn = self.connect()
        cur = conn.cursor()
        cur.execute(sql)
        rows = cur.fetchall() if cur.description else None
        conn.close()
        return rows

    def test_names_inside_a_set_list(self):
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("SET NAMES latin1")
        cur.execute("set autocommit=1, NAMES utf8mb4")
        cur.execute("SELECT @@character_set_client, @@character_set_results, @@autocommit")
        self.assertEqual(cur.fetchone(), ("utf8mb4", "utf8mb4", 1))
        cur.execute("SET @a = 5, CHARACTER SET utf8mb4, @@session.sql_mode = ''")
        cur.execute("SELECT @a, @@sql_mode")
        self.assertEqual(cur.fetchone(), (5, ""))
        with self.assertRaises(pymysql.err.ProgrammingError) as e:
            cur.execute("SET autocommit = 1, NAMES")
        self.assertEqual(e.exception.args[0], 1064)
        conn.close()

    def test_versioned_comments(self):
        self.assertEqual(self.query("SELECT 1 /*!40100 + 1 */"), ((2,),))
        self.assertEqual(self.query("SELECT 1 /*!80035 + 1 */"), ((2,),))
        self.assertEqual(self.query("SELECT 1 /*!80036 + 1 */"), ((1,),))
        self.assertEqual(self.query("SELECT 1 /*!90000 + 1 */"), ((1,),))
        self.assertEqual(self.query("SELECT 1 /*! + 2 */"), ((3,),))
        self.assertEqual(self.query("SELECT 1 /*M!100100 + 1 */"), ((1,),))
        self.assertEqual(self.query("SELECT '/*!40100 x */'"), (("/*!40100 x */",),))
        conn = self.connect()
        cur = conn.cursor()
        # The first lines of a mysqldump / mariadb-dump file.
        for line in ["/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */",
                     "/*!40101 SET NAMES utf8mb4 */",
                     "/*!40103 SET @OLD_TIME_ZONE=@@TIME_ZONE */",
                     "/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */",
                     "/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */",
                     "/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */"]:
            cur.execute(line)
        # Only a comment, as MySQL answers it (a MariaDB-only line of a
        # mariadb-dump file is one).
        with self.assertRaises(pymysql.err.MySQLError) as e:
            cur.execute("/*M!100616 SET @OLD_NOTE_VERBOSITY=@@NOTE_VERBOSITY, NOTE_VERBOSITY=0 */")
        self.assertEqual(e.exception.args[0], 1065)
        cur.execute("SELECT @@sql_mode, @OLD_CHARACTER_SET_CLIENT, @@unique_checks, @@foreign_key_checks")
        self.assertEqual(cur.fetchone(), ("NO_AUTO_VALUE_ON_ZERO", "utf8mb4", 0, 0))
        cur.execute("/*!40014 SET UNIQUE_CHECKS=@OLD_UNIQUE_CHECKS */")
        cur.execute("SELECT @@unique_checks")
        self.assertEqual(cur.fetchone(), (1,))
        cur.execute("/*!40101 SET SQL_MODE=@OLD_SQL_MODE */")
        with self.assertRaises(pymysql.err.ProgrammingError) as e:
            cur.execute("SELECT 1 /*!40100 + */")
        self.assertEqual(e.exception.args[0], 1064)
        conn.close()

    def test_whitespace_before_a_functions_parenthesis(self):
        self.assertEqual(self.query("SELECT AVG ( 2 ), IF (1 LIKE 1, 'y', 'n'), COALESCE (NULL, 4), "
                                    "CONCAT ('a', 'b')"),
                         ((2, "y", 4, "ab"),))
        for sql in ["SELECT COUNT (*)", "SELECT SUM (1)", "SELECT CAST (1 AS CHAR)"]:
            with self.assertRaises(pymysql.err.ProgrammingError, msg=sql) as e:
                self.query(sql)
            self.assertEqual(e.exception.args[0], 1064, sql)


if __name__ == "__main__":
    main()
