#!/usr/bin/python3
"""A sqllogictest runner over the MySQL protocol (PyMySQL).

    slt.py [--host H] [--port P] [--user U] [--password W] FILE.test ...
    slt.py --complete --port P FILE.test ...      # rewrite expected results

File format (SQLite's sqllogictest, as in ../shared/sqllogictest). Records
are separated by blank lines; lines starting with '#' are comments.

    statement ok                  the SQL must succeed
    statement error               the SQL must fail (any error)
    statement error 1062          ... with this MySQL error number (our extension)
    query <types> [nosort|rowsort|valuesort] [label]
    <sql, one or more lines>
    ----
    <expected values, one per line>  or  <N> values hashing to <md5>
    hash-threshold N              results with more than N values are compared
                                  by the md5 of "value\\n" for every value (0: never)
    skipif <db> / onlyif <db>     conditions on the next record; this runner
                                  is the database named by --engine (mysql)
    halt                          stop reading the file

Types: one letter per result column. I prints an integer, R a number with
three decimals, T text. NULL prints as NULL, the empty string as (empty),
control characters in text as '@'. rowsort sorts rows, valuesort sorts all
values, nosort keeps the server's order.

Each file runs in a fresh database (slt_<file name>) created before its
first record and dropped after its last, on one autocommit connection.

--complete runs the records and rewrites the file with what the server
answered: the expected values of every query and the error number of every
statement that failed ('statement ok' that fails becomes 'statement error N'
and is reported). tests/sql/ files get their expectations this way from
MariaDB (scripts/mariadb-reference.sh), so they hold MySQL's answers;
--complete against Shale itself is refused unless --force.

Output: one line per failing record (file:line, SQL, expected, got), then
"N passed, N failed[, N skipped]". Exit status 1 if any record failed.
"""
import argparse
import hashlib
import os
import re
import sys
import time
from decimal import Decimal

import pymysql
import pymysql.constants.FIELD_TYPE
import pymysql.converters

SORT_MODES = ("nosort", "rowsort", "valuesort")
CONNECTION_LOST = (2006, 2013, 2055)


class Record:
    """One statement, query or control line of a test file."""

    def __init__(self, kind, line):
        self.kind = kind          # statement | query | hash-threshold | halt
        self.line = line          # 1-based line of the directive
        self.conditions = []      # [("skipif"|"onlyif", db)]
        self.sql = ""
        self.expect_error = False
        self.error_code = None    # int or None (any error)
        self.types = ""
        self.sort = "nosort"
        self.label = None
        self.expected = None      # list of values, or ("hash", count, md5)
        self.threshold = 0
        # Line indexes (0-based) for --complete: the directive line, and the
        # slice of the file holding "----" and the results.
        self.head_index = line - 1
        self.result_start = None
        self.result_end = None


def parse(text):
    """Parses a test file into a list of Records. Raises ValueError on bad syntax."""
    lines = text.split("\n")
    records = []
    i = 0
    n = len(lines)
    conditions = []
    while i < n:
        raw = lines[i]
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        words = stripped.split()
        head = words[0]
        if head in ("skipif", "onlyif"):
            if len(words) < 2:
                raise ValueError("line %d: %s needs a database name" % (i + 1, head))
            conditions.append((head, words[1]))
            i += 1
            continue
        if head == "halt":
            rec = Record("halt", i + 1)
            i += 1
        elif head == "hash-threshold":
            rec = Record("hash-threshold", i + 1)
            try:
                rec.threshold = int(words[1])
            except (IndexError, ValueError):
                raise ValueError("line %d: hash-threshold needs a number" % (i + 1))
            i += 1
        elif head == "statement":
            rec = Record("statement", i + 1)
            if len(words) < 2 or words[1] not in ("ok", "error"):
                raise ValueError("line %d: expected 'statement ok' or 'statement error'" % (i + 1))
            rec.expect_error = words[1] == "error"
            if rec.expect_error and len(words) > 2:
                try:
                    rec.error_code = int(words[2])
                except ValueError:
                    raise ValueError("line %d: the error code must be a MySQL error number" % (i + 1))
            i += 1
            sql = []
            while i < n and lines[i].strip():
                sql.append(lines[i])
                i += 1
            rec.sql = "\n".join(sql)
        elif head == "query":
            rec = Record("query", i + 1)
            if len(words) < 2 or not re.fullmatch(r"[ITR]+", words[1]):
                raise ValueError("line %d: query needs column types made of I, T, R" % (i + 1))
            rec.types = words[1]
            if len(words) > 2:
                if words[2] not in SORT_MODES:
                    raise ValueError("line %d: unknown sort mode %r" % (i + 1, words[2]))
                rec.sort = words[2]
            if len(words) > 3:
                rec.label = words[3]
            i += 1
            sql = []
            while i < n and lines[i].strip() and lines[i].rstrip() != "----":
                sql.append(lines[i])
                i += 1
            rec.sql = "\n".join(sql)
            rec.result_start = i
            values = []
            if i < n and lines[i].rstrip() == "----":
                i += 1
                while i < n and lines[i].strip():
                    values.append(lines[i].rstrip("\r"))
                    i += 1
            rec.result_end = i
            m = re.fullmatch(r"(\d+) values hashing to ([0-9a-f]{32})", values[0].strip()) \
                if len(values) == 1 else None
            rec.expected = ("hash", int(m.group(1)), m.group(2)) if m else values
        else:
            raise ValueError("line %d: unknown record %r" % (i + 1, head))
        if not rec.sql and rec.kind in ("statement", "query"):
            raise ValueError("line %d: record without SQL" % rec.line)
        rec.conditions = conditions
        conditions = []
        records.append(rec)
    return records


def applies(rec, engine):
    for kind, db in rec.conditions:
        if kind == "skipif" and db == engine:
            return False
        if kind == "onlyif" and db != engine:
            return False
    return True


_INT_PREFIX = re.compile(r"\s*[-+]?\d+")
_NUM_PREFIX = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


# Dates and times are compared as the text the server sends ('2024-01-31
# 10:00:00.500', '-26:00:00'), not as Python objects, so fractions and
# signs print as MySQL prints them.
_TEXT_TEMPORALS = dict(pymysql.converters.conversions)
for _t in (pymysql.constants.FIELD_TYPE.DATE, pymysql.constants.FIELD_TYPE.DATETIME,
           pymysql.constants.FIELD_TYPE.TIMESTAMP, pymysql.constants.FIELD_TYPE.TIME,
           pymysql.constants.FIELD_TYPE.NEWDATE):
    _TEXT_TEMPORALS[_t] = str


def format_value(value, kind):
    """Renders one result value by the sqllogictest convention for type kind."""
    if value is None:
        return "NULL"
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", errors="replace")
    if kind == "I":
        if isinstance(value, bool):
            return str(int(value))
        if isinstance(value, int):
            return str(value)
        if isinstance(value, (float, Decimal)):
            return str(int(value))  # toward zero, as a C cast
        m = _INT_PREFIX.match(str(value))
        return str(int(m.group(0))) if m else "0"
    if kind == "R":
        if isinstance(value, (int, float, Decimal)):
            return "%.3f" % float(value)
        m = _NUM_PREFIX.match(str(value))
        return "%.3f" % (float(m.group(0)) if m else 0.0)
    text = str(value)
    if text == "":
        return "(empty)"
    return "".join("@" if (c < " " or c == "\x7f") else c for c in text)


def result_values(rows, types):
    """Formats rows (tuples) into the flat list of values, in row order."""
    return [[format_value(v, types[c]) for c, v in enumerate(row)] for row in rows]


def sort_values(rows, mode):
    if mode == "rowsort":
        rows = sorted(rows)
    flat = [v for row in rows for v in row]
    if mode == "valuesort":
        flat.sort()
    return flat


def md5_of(values):
    h = hashlib.md5()
    for v in values:
        h.update(v.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def one_line(text, limit=300):
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def describe(values):
    if isinstance(values, tuple):
        return "%d values hashing to %s" % (values[1], values[2])
    return one_line("[" + ", ".join(values) + "]")


class Counts:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def add(self, other):
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped

    def summary(self):
        s = "%d passed, %d failed" % (self.passed, self.failed)
        if self.skipped:
            s += ", %d skipped" % self.skipped
        return s


class Runner:
    """Runs test files over one connection."""

    def __init__(self, host, port, user, password, engine="mysql", timeout=30,
                 complete=False, out=sys.stdout, quiet=False):
        self.params = dict(host=host, port=port, user=user, password=password,
                           autocommit=True, charset="utf8mb4", conv=_TEXT_TEMPORALS,
                           read_timeout=timeout, write_timeout=timeout, connect_timeout=10)
        self.engine = engine
        self.complete = complete
        self.out = out
        self.quiet = quiet
        self.conn = None
        self.database = None
        self.errors = {}  # failure reason -> count, for summaries
        # Called with the runner before each record that runs; run_suite.py
        # uses it to restart the server between records.
        self.before_record = None
        # Called when the server neither answers nor accepts a new
        # connection; run_corpus.py restarts it there and the file goes on.
        self.recover = None

    # -- connection ---------------------------------------------------------

    def connect(self, database=""):
        """(Re)connects and selects database: by default the file's, None for none."""
        self.close()
        self.conn = pymysql.connect(**self.params)
        if database == "":
            database = self.database
        if database:
            self.conn.select_db(database)

    def current_database(self):
        """The session's current database (after USE), or None."""
        with self.conn.cursor() as cur:
            cur.execute("SELECT DATABASE()")
            return cur.fetchone()[0]

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # the connection may already be gone
                pass
            self.conn = None

    def execute(self, sql):
        """Runs sql; returns (rows or None, column count, error (code, message) or None).

        A lost connection (timeout, crash) is error code None, which no
        record accepts; the runner reconnects for the next record.
        """
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql)
                rows = cur.fetchall() if cur.description else None
                ncols = len(cur.description) if cur.description else 0
                return rows, ncols, None
        except pymysql.MySQLError as e:
            code = e.args[0] if e.args and isinstance(e.args[0], int) else 0
            msg = e.args[1] if len(e.args) > 1 else str(e)
            if code in CONNECTION_LOST or isinstance(e, pymysql.err.InterfaceError) or code == 0:
                # Timed out or the server went away: reconnect for the next record.
                try:
                    self.connect()
                except pymysql.MySQLError as e2:
                    if self.recover is None:
                        raise ServerGone("%s; reconnect failed: %s" % (msg, e2))
                    self.recover()
                    try:
                        self.connect()
                    except pymysql.MySQLError as e3:
                        raise ServerGone("%s; reconnect after recovery failed: %s" % (msg, e3))
                return None, 0, (None, "connection lost (timeout or crash): %s" % msg)
            return None, 0, (code, msg)

    # -- files --------------------------------------------------------------

    def run_file(self, path):
        counts = Counts()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            records = parse(text)
        except ValueError as e:
            self.report("%s:%s" % (path, e))
            counts.failed += 1
            return counts
        stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
        db = ("slt_" + stem)[:64]
        rewrites = []  # (start, end, new lines)
        try:
            self.database = None
            self.connect()
            for sql in ("DROP DATABASE IF EXISTS `%s`" % db, "CREATE DATABASE `%s`" % db):
                _, _, err = self.execute(sql)
                if err:
                    raise ServerGone("%s: %s" % (sql, err[1]))
            self.database = db
            self.conn.select_db(db)
            threshold = 0
            for rec in records:
                if not applies(rec, self.engine):
                    if rec.kind in ("statement", "query"):
                        counts.skipped += 1
                    continue
                if rec.kind == "halt":
                    break
                if rec.kind == "hash-threshold":
                    threshold = rec.threshold
                    continue
                if self.before_record is not None:
                    self.before_record(self, rec)
                ok, rewrite = self.run_record(path, rec, threshold)
                if ok:
                    counts.passed += 1
                else:
                    counts.failed += 1
                if rewrite:
                    rewrites.append(rewrite)
            self.execute("DROP DATABASE IF EXISTS `%s`" % db)
        except (ServerGone, pymysql.MySQLError) as e:
            self.report("%s: server gone: %s" % (path, e))
            counts.failed += 1
            self.count_reason("server gone")
            return counts
        finally:
            self.database = None
        if self.complete and rewrites:
            lines = text.split("\n")
            for start, end, new in sorted(rewrites, reverse=True):
                lines[start:end] = new
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(lines))
        return counts

    def run_record(self, path, rec, threshold):
        """Returns (passed, rewrite-or-None)."""
        where = "%s:%d" % (path, rec.line)
        sql = rec.sql
        t0 = time.time()
        rows, ncols, err = self.execute(sql)
        if err is not None and err[0] is None:
            return self.fail(where, sql, "an answer", err[1], "connection lost")
        if rec.kind == "statement":
            if self.complete:
                head = "statement ok" if err is None else "statement error %d" % err[0]
                changed_code = (err is not None and rec.error_code is not None
                                and err[0] != rec.error_code)
                if (err is None) == rec.expect_error or changed_code:
                    self.report("%s: %s -- changed to '%s'%s" % (
                        where, one_line(sql), head, "" if err is None else " (%s)" % one_line(err[1], 120)))
                return True, (rec.head_index, rec.head_index + 1, [head])
            if err is None and rec.expect_error:
                return self.fail(where, sql, "error %s" % (rec.error_code or "(any)"), "ok", "error expected")
            if err is not None and not rec.expect_error:
                return self.fail(where, sql, "ok", "error %d: %s" % err, "error %d" % err[0])
            if err is not None and rec.error_code is not None and err[0] != rec.error_code:
                return self.fail(where, sql, "error %d" % rec.error_code, "error %d: %s" % err,
                                 "error %d" % err[0])
            return True, None
        # query
        if err is not None:
            return self.fail(where, sql, describe(rec.expected), "error %d: %s" % err,
                             "error %d" % err[0])
        if rows is None or ncols != len(rec.types):
            return self.fail(where, sql, "%d columns" % len(rec.types), "%d columns" % ncols,
                             "column count")
        got = sort_values(result_values(rows, rec.types), rec.sort)
        if self.complete:
            if threshold and len(got) > threshold:
                body = ["%d values hashing to %s" % (len(got), md5_of(got))]
            else:
                body = got
            return True, (rec.result_start, rec.result_end, ["----"] + body)
        exp = rec.expected
        if isinstance(exp, tuple):
            same = exp[1] == len(got) and exp[2] == md5_of(got)
            got_desc = "%d values hashing to %s" % (len(got), md5_of(got))
        else:
            same = exp == got
            got_desc = describe(got)
        if not same:
            return self.fail(where, sql, describe(exp), got_desc, "wrong result")
        if time.time() - t0 > 5:
            self.report("%s: slow (%.1fs): %s" % (where, time.time() - t0, one_line(sql)))
        return True, None

    def fail(self, where, sql, expected, got, reason):
        self.count_reason(reason)
        self.report("%s: %s -- expected %s, got %s" % (where, one_line(sql), expected, one_line(got)))
        return False, None

    def count_reason(self, reason):
        self.errors[reason] = self.errors.get(reason, 0) + 1

    def report(self, line):
        if not self.quiet:
            print(line, file=self.out, flush=True)


class ServerGone(Exception):
    pass


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help=".test files")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=3306)
    ap.add_argument("--user", default="root")
    ap.add_argument("--password", default="")
    ap.add_argument("--engine", default="mysql", help="name matched by skipif/onlyif (default mysql)")
    ap.add_argument("--timeout", type=float, default=30, help="seconds per record")
    ap.add_argument("--complete", action="store_true",
                    help="rewrite the files' expected results from the server's answers")
    ap.add_argument("--force", action="store_true",
                    help="allow --complete against Shale itself (normally refused)")
    args = ap.parse_args(argv)
    if args.complete and not args.force:
        # Expectations must be MySQL's: refuse to record Shale's own answers.
        try:
            conn = pymysql.connect(host=args.host, port=args.port, user=args.user,
                                   password=args.password, connect_timeout=10)
            version = conn.get_server_info()
            conn.close()
        except pymysql.MySQLError as e:
            print("cannot connect: %s" % e, file=sys.stderr)
            return 1
        if "shale" in version.lower():
            print("refusing --complete against %s: expected results come from MariaDB "
                  "(scripts/mariadb-reference.sh); --force overrides" % version, file=sys.stderr)
            return 1
    runner = Runner(args.host, args.port, args.user, args.password, engine=args.engine,
                    timeout=args.timeout, complete=args.complete)
    total = Counts()
    try:
        for path in args.files:
            counts = runner.run_file(path)
            if len(args.files) > 1:
                print("%s: %s" % (path, counts.summary()), flush=True)
            total.add(counts)
    finally:
        runner.close()
    print(total.summary())
    return 1 if total.failed else 0


if __name__ == "__main__":
    sys.exit(main())
