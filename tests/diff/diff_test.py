#!/usr/bin/python3
"""Differential test: the same randomized queries on Shale and on MariaDB.

    diff_test.py --shaled build/src/shaled [--queries 300] [--seed 1]
                 [--mariadb-port P]      # a MariaDB already running (root, no password)
                 [--show N]              # print the first N generated queries and exit
                 [--verbose]             # also print queries both servers reject

Starts a shaled (tests/e2e/shaled_fixture.py) and, unless --mariadb-port is
given, a private MariaDB from Debian (scripts/mariadb-private.sh, in
$SHALE_MARIADB_DIR or a temporary directory). Loads the same small tables
into both — NULLs and duplicate values in every non-key column, a secondary
index — then runs --queries queries from a generator seeded with --seed:
filters with NULLs (comparisons, IS [NOT] NULL, IN lists holding NULL,
BETWEEN, <=>, NOT, AND/OR/XOR), arithmetic, inner/left/cross joins,
GROUP BY [WITH ROLLUP] with aggregates (COUNT(DISTINCT a, b),
GROUP_CONCAT(... ORDER BY ...) too) and HAVING, DISTINCT, scalar/IN/EXISTS/correlated
subqueries, derived tables (also as WITH common table expressions), string
matching ([NOT] LIKE with ESCAPE, [NOT] REGEXP/RLIKE), UNION [ALL], and ORDER BY over a total order
with LIMIT/OFFSET; subqueries in HAVING (correlated with the group too),
correlated subqueries in a grouped select list, in inner joins' ON and in
LEFT JOINs' ON (over the right table); and, one
statement in 25, a write on both — UPDATE, multi-table UPDATE/DELETE
(joins and LEFT JOIN anti-joins) — after which every table is compared
row by row. Results
are compared as multisets unless the query orders them totally; numbers
compare exactly by value (2.5 = 2.5000), FLOAT/DOUBLE result columns
rounded to 6 decimals. A query both servers reject with the same error
number is fine; one only one rejects (or with another number) is a
mismatch.

What the generator avoids (Shale differences that are documented rather
than bugs; docs/sql-compatibility.md): strings with upper-case letters or
trailing spaces (collations arrive with the string types work), and ORDER
BY without a total order (MySQL leaves ties in any order).

Exit status 1 on any mismatch; each is printed with both answers.
The bounded run (300 queries, seed 1) is ctest's diff_short; a long run:
    tests/diff/diff_test.py --shaled build/src/shaled --queries 20000 --seed 7
"""
import argparse
import decimal
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import pymysql

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from shaled_fixture import ShaledProcess, free_port  # noqa: E402

DB = "difftest"

# ---- data ---------------------------------------------------------------------

TABLES = {
    # name: (columns [(name, type, kind)], primary key column)
    "t1": ([("a", "INT NOT NULL", "int"), ("b", "INT", "int"), ("c", "VARCHAR(10)", "str"),
            ("d", "DECIMAL(6,2)", "dec"), ("e", "DOUBLE", "dbl")], "a"),
    "t2": ([("x", "INT NOT NULL", "int"), ("y", "INT", "int"), ("z", "VARCHAR(10)", "str"),
            ("w", "BIGINT", "int")], "x"),
    "t3": ([("p", "INT NOT NULL", "int"), ("q", "INT", "int"), ("r", "VARCHAR(10)", "str")], "p"),
}
INDEXES = ["CREATE INDEX t1_b ON t1 (b)", "CREATE INDEX t2_yz ON t2 (y, z)"]
WORDS = ["a", "b", "c", "ab", "ba", "abc", "x", "xy", "zz", ""]


def gen_value(rng, kind):
    if rng.random() < 0.2:
        return None
    if kind == "int":
        return rng.randint(-3, 8)
    if kind == "str":
        return rng.choice(WORDS)
    if kind == "dec":
        return decimal.Decimal(rng.randint(-500, 900)) / 100
    return rng.choice([0.5, 1.25, -2.0, 3.0, 1e3, 0.0])


def gen_rows(rng, table, count):
    cols, pk = TABLES[table]
    keys = rng.sample(range(-5, 60), count)
    out = []
    for k in keys:
        out.append(tuple(k if name == pk else gen_value(rng, kind) for name, _, kind in cols))
    return out


def sql_literal(v):
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v + "'"
    return str(v)


def setup_statements(seed):
    rng = random.Random(seed * 7919 + 1)
    stmts = []
    for name, (cols, pk) in TABLES.items():
        defs = ", ".join("%s %s" % (c, t) for c, t, _ in cols)
        stmts.append("CREATE TABLE %s (%s, PRIMARY KEY (%s))" % (name, defs, pk))
        rows = gen_rows(rng, name, {"t1": 30, "t2": 25, "t3": 8}[name])
        stmts.append("INSERT INTO %s VALUES %s" % (
            name, ", ".join("(" + ", ".join(sql_literal(v) for v in r) + ")" for r in rows)))
    stmts.extend(INDEXES)
    return stmts

# ---- queries ------------------------------------------------------------------


class Gen:
    """Generates one query at a time from a seeded random source."""

    def __init__(self, rng):
        self.rng = rng

    def pick(self, seq):
        return self.rng.choice(seq)

    def const(self, kind):
        if kind == "str":
            return "'" + self.pick(WORDS) + "'"
        if kind == "dec":
            return self.pick(["0", "1.5", "-2.25", "3", "7.10"])
        if kind == "dbl":
            return self.pick(["0.5", "3", "1000"])
        return str(self.rng.randint(-3, 8))

    def scalar(self, cols):
        """(sql, kind) of a scalar expression over `cols` [(qualified name, kind)]."""
        name, kind = self.pick(cols)
        r = self.rng.random()
        if kind in ("int", "dec") and r < 0.2:
            op = self.pick(["+", "-", "*"])
            return "(%s %s %s)" % (name, op, self.const("int")), kind
        if kind == "int" and r < 0.25:
            # Division by zero is NULL (with a warning) in both.
            op = self.pick(["/", "DIV", "%"])
            return "(%s %s %s)" % (name, op, self.const("int")), "dec" if op == "/" else "int"
        if kind == "int" and r < 0.3:
            fn = self.pick(["COALESCE", "IFNULL", "NULLIF"])
            return "%s(%s, %s)" % (fn, name, self.const("int")), kind
        if r < 0.35:
            return "CASE WHEN %s THEN %s ELSE %s END" % (
                self.predicate(cols, 2), name, self.const(kind)), kind
        if r < 0.38:
            return "IF(%s IS NULL, %s, %s)" % (name, self.const(kind), name), kind
        return name, kind

    def predicate(self, cols, depth=0):
        r = self.rng.random()
        if depth < 2 and r < 0.25:
            op = self.pick(["AND", "OR", "AND", "OR", "XOR"])
            return "(%s %s %s)" % (self.predicate(cols, depth + 1), op, self.predicate(cols, depth + 1))
        if depth < 2 and r < 0.3:
            return "NOT %s" % self.predicate(cols, depth + 1)
        expr, kind = self.scalar(cols)
        if kind == "str" and self.rng.random() < 0.3:
            return self.string_match(expr)
        r = self.rng.random()
        if r < 0.45:
            return "%s %s %s" % (expr, self.pick(["=", "<>", "<", "<=", ">", ">="]), self.const(kind))
        if r < 0.55:
            return "%s IS %sNULL" % (expr, self.pick(["", "NOT "]))
        if r < 0.68:
            items = [self.const(kind) for _ in range(self.rng.randint(1, 4))]
            if self.rng.random() < 0.3:
                items.append("NULL")
            return "%s %sIN (%s)" % (expr, self.pick(["", "NOT "]), ", ".join(items))
        if r < 0.76:
            lo, hi = sorted([self.const(kind), self.const(kind)], key=lambda s: s)
            return "%s BETWEEN %s AND %s" % (expr, lo, hi)
        if r < 0.82:
            return "%s <=> %s" % (expr, self.pick([self.const(kind), "NULL"]))
        # Compare two columns of the same kind.
        same = [c for c, k in cols if k == kind] or [self.const(kind)]
        return "%s %s %s" % (expr, self.pick(["=", "<", ">="]), self.pick(same))

    def string_match(self, expr):
        """[NOT] LIKE (with ESCAPE too) or [NOT] REGEXP/RLIKE on a string."""
        neg = self.pick(["", "", "NOT "])
        if self.rng.random() < 0.5:
            pattern = self.pick(["a%", "%b", "_b%", "%", "a_", "%!%%' ESCAPE '!", "a!_%' ESCAPE '!",
                                 "x|%' ESCAPE '|", "%c"])
            return "%s %sLIKE '%s'" % (expr, neg, pattern)
        pattern = self.pick(["^a", "b$", "a|x", "^[a-c]+$", "(ab)+", "^.?$", "", "z{2}", "^[^a]"])
        return "%s %s%s '%s'" % (expr, neg, self.pick(["REGEXP", "RLIKE"]), pattern)

    def columns_of(self, table, alias):
        return [(alias + "." + c, kind) for c, _, kind in TABLES[table][0]]

    def pk_of(self, table, alias):
        return alias + "." + TABLES[table][1]

    def from_clause(self):
        """(sql, cols, total order key list) of a FROM clause of one or two tables."""
        r = self.rng.random()
        if r < 0.45:
            t = self.pick(list(TABLES))
            return "%s AS s" % t, self.columns_of(t, "s"), [self.pk_of(t, "s")]
        t1, t2 = self.rng.sample(list(TABLES), 2)
        c1, c2 = self.columns_of(t1, "l"), self.columns_of(t2, "r")
        ints1 = [c for c, k in c1 if k == "int"]
        ints2 = [c for c, k in c2 if k == "int"]
        kind = self.pick(["JOIN", "JOIN", "LEFT JOIN", "CROSS JOIN"])
        if kind == "CROSS JOIN":
            sql = "%s AS l CROSS JOIN %s AS r" % (t1, t2)
        else:
            on = "%s = %s" % (self.pick(ints1), self.pick(ints2))
            if self.rng.random() < 0.3:
                on += " AND " + self.predicate(c2)
            if kind == "JOIN" and self.rng.random() < 0.15:
                on += " AND " + self.subquery_predicate(c1 + c2)
            elif kind == "LEFT JOIN" and self.rng.random() < 0.15:
                # Over the right table only (correlated with it, or not).
                on += " AND " + self.subquery_predicate(c2)
            sql = "%s AS l %s %s AS r ON %s" % (t1, kind, t2, on)
        return sql, c1 + c2, [self.pk_of(t1, "l"), self.pk_of(t2, "r")]

    def subquery_predicate(self, cols):
        t = self.pick(list(TABLES))
        inner = self.columns_of(t, "i")
        ints = [c for c, k in inner if k == "int"]
        outer_ints = [c for c, k in cols if k == "int"]
        r = self.rng.random()
        where = " WHERE " + self.predicate(inner) if self.rng.random() < 0.6 else ""
        if r < 0.35:
            return "%s %sIN (SELECT %s FROM %s AS i%s)" % (
                self.pick(outer_ints), self.pick(["", "NOT "]), self.pick(ints), t, where)
        if r < 0.7:
            corr = "%s = %s" % (self.pick(ints), self.pick(outer_ints))
            return "%sEXISTS (SELECT 1 FROM %s AS i WHERE %s%s)" % (
                self.pick(["", "NOT "]), t, corr, " AND " + self.predicate(inner) if where else "")
        if r < 0.85:
            agg = self.pick(["MAX", "MIN", "COUNT", "SUM"])
            return "%s %s (SELECT %s(%s) FROM %s AS i%s)" % (
                self.pick(outer_ints), self.pick(["=", "<", ">="]), agg, self.pick(ints), t, where)
        return "%s %s %s (SELECT %s FROM %s AS i%s)" % (
            self.pick(outer_ints), self.pick(["=", "<", ">=", "<>"]), self.pick(["ANY", "ALL"]),
            self.pick(ints), t, where)

    def select(self):
        kind = self.rng.random()
        if kind < 0.3:
            return self.aggregate()
        if kind < 0.38:
            return self.union()
        from_sql, cols, order_keys = self.from_clause()
        items = []
        for _ in range(self.rng.randint(1, 3)):
            items.append(self.scalar(cols)[0])
        if self.rng.random() < 0.15:
            t = self.pick(list(TABLES))
            inner = self.columns_of(t, "i")
            ints = [c for c, k in inner if k == "int"]
            items.append("(SELECT MAX(%s) FROM %s AS i WHERE %s = %s)" % (
                self.pick(ints), t, self.pick(ints), self.pick([c for c, k in cols if k == "int"])))
        where = ""
        if self.rng.random() < 0.8:
            preds = [self.predicate(cols)]
            if self.rng.random() < 0.3:
                preds.append(self.subquery_predicate(cols))
            where = " WHERE " + " AND ".join(preds)
        distinct = "DISTINCT " if self.rng.random() < 0.15 else ""
        sql = "SELECT %s%s FROM %s%s" % (distinct, ", ".join(items), from_sql, where)
        ordered = False
        if not distinct and self.rng.random() < 0.35:
            # A total order: some columns, then every table's primary key.
            keys = [self.scalar(cols)[0] + self.pick(["", " DESC"]) for _ in range(self.rng.randint(0, 2))]
            keys += [k + self.pick(["", " DESC"]) for k in order_keys]
            sql += " ORDER BY " + ", ".join(keys)
            # The ordered rows must be distinguishable: select the keys too.
            sql = sql.replace("SELECT ", "SELECT %s, " % ", ".join(order_keys), 1)
            ordered = True
            if self.rng.random() < 0.7:
                sql += " LIMIT %d" % self.rng.randint(0, 12)
                if self.rng.random() < 0.3:
                    sql += " OFFSET %d" % self.rng.randint(0, 5)
        return sql, ordered

    def aggregate(self):
        from_sql, cols, _ = self.from_clause()
        group_cols = [c for c, k in cols if k in ("int", "str")]
        groups = self.rng.sample(group_cols, self.rng.randint(0, min(2, len(group_cols))))
        aggs = []
        for _ in range(self.rng.randint(1, 3)):
            name, kind = self.pick(cols)
            fn = self.pick(["COUNT", "COUNT", "SUM", "MIN", "MAX", "AVG", "COUNT DISTINCT",
                            "COUNT DISTINCT2", "GROUP_CONCAT"])
            if fn in ("SUM", "AVG") and kind == "str":
                fn = "COUNT"
            if fn == "COUNT DISTINCT":
                aggs.append("COUNT(DISTINCT %s)" % name)
            elif fn == "COUNT DISTINCT2":
                aggs.append("COUNT(DISTINCT %s, %s)" % (name, self.pick(cols)[0]))
            elif fn == "GROUP_CONCAT":
                # Ordered by the value itself: equal values give equal text.
                aggs.append("GROUP_CONCAT(%s%s ORDER BY %s%s SEPARATOR '|')" % (
                    self.pick(["", "DISTINCT "]), name, name, self.pick(["", " DESC"])))
            else:
                aggs.append("%s(%s)" % (fn, name))
        if self.rng.random() < 0.3:
            aggs.append("COUNT(*)")
        where = " WHERE " + self.predicate(cols) if self.rng.random() < 0.6 else ""
        int_groups = [g for g in groups if dict(cols)[g] == "int"]
        if int_groups and self.rng.random() < 0.15:
            # A correlated subquery in the select list, run per group.
            t = self.pick(list(TABLES))
            inner = [c for c, k in self.columns_of(t, "h") if k == "int"]
            aggs.append("(SELECT COUNT(*) FROM %s AS h WHERE %s = %s)" % (t, self.pick(inner), self.pick(int_groups)))
        sql = "SELECT %s FROM %s%s" % (", ".join(groups + aggs), from_sql, where)
        ordered = False
        if groups:
            sql += " GROUP BY " + ", ".join(groups)
            r = self.rng.random()
            if r < 0.3:
                sql += " HAVING %s %s %d" % (self.pick(["COUNT(*)", "MAX(%s)" % self.pick(
                    [c for c, k in cols if k == "int"])]), self.pick([">", "<=", "="]), self.rng.randint(0, 4))
            elif r < 0.4:
                t = self.pick(list(TABLES))
                sql += " HAVING COUNT(*) %s (SELECT COUNT(*) FROM %s AS h WHERE %s)" % (
                    self.pick([">", "<="]), t, self.predicate(self.columns_of(t, "h")))
            elif r < 0.5 and int_groups:
                # Correlated with the group's value.
                t = self.pick(list(TABLES))
                inner = [c for c, k in self.columns_of(t, "h") if k == "int"]
                sql += " HAVING %s %s (SELECT %s FROM %s AS h WHERE %s = %s)" % (
                    self.pick(["COUNT(*)", "MIN(%s)" % self.pick(int_groups)]), self.pick([">", "<=", "="]),
                    self.pick(["COUNT(*)", "MAX(%s)" % self.pick(inner)]), t, self.pick(inner),
                    self.pick(int_groups))
            if self.rng.random() < 0.12 and "DISTINCT" not in sql and "(SELECT" not in sql:
                # Super-aggregate rows too (compared as a multiset). Not with
                # COUNT(DISTINCT) (MariaDB sums the groups' distinct counts
                # in super-aggregate rows) nor subqueries (MariaDB runs them
                # with the last group's values): documented differences.
                sql = sql.replace(" GROUP BY " + ", ".join(groups),
                                  " GROUP BY " + ", ".join(groups) + " WITH ROLLUP", 1)
            elif self.rng.random() < 0.3:
                # The group columns are a total order of the groups.
                sql += " ORDER BY " + ", ".join(g + self.pick(["", " DESC"]) for g in groups)
                ordered = True
                if self.rng.random() < 0.6:
                    sql += " LIMIT %d" % self.rng.randint(0, 6)
        return sql, ordered

    def union(self):
        t1, t2 = self.pick(list(TABLES)), self.pick(list(TABLES))
        c1 = [c for c, k in self.columns_of(t1, "s") if k == "int"]
        c2 = [c for c, k in self.columns_of(t2, "s") if k == "int"]
        a = "SELECT %s FROM %s AS s WHERE %s" % (self.pick(c1), t1, self.predicate(self.columns_of(t1, "s")))
        b = "SELECT %s FROM %s AS s WHERE %s" % (self.pick(c2), t2, self.predicate(self.columns_of(t2, "s")))
        return "%s UNION %s%s" % (a, self.pick(["", "ALL "]), b), False

    def derived(self):
        inner, _ = self.aggregate()
        if self.rng.random() < 0.5:
            # The same derived table as a common table expression.
            return "WITH dt AS (%s) SELECT * FROM dt" % inner, False
        return "SELECT * FROM (%s) AS dt" % inner, False

    def assignment_value(self, cols, kind):
        same = [c for c, k in cols if k == kind]
        r = self.rng.random()
        if same and kind in ("int", "dec") and r < 0.5:
            return "(%s %s %s)" % (self.pick(same), self.pick(["+", "-"]), self.rng.randint(1, 3))
        if same and r < 0.7:
            return "COALESCE(%s, %s)" % (self.pick(same), self.const(kind))
        return self.pick([self.const(kind), "NULL"])

    def write(self):
        """An UPDATE or DELETE, single- or multi-table. Assignments read only
        the target table, so a row that joins several rows gets the same
        value whichever match MySQL applies."""
        t = self.pick(list(TABLES))
        cols, pk = TABLES[t]
        target = [(c, kind) for c, _, kind in cols if c != pk]
        col, kind = self.pick(target)
        r = self.rng.random()
        if r < 0.35:
            own = self.columns_of(t, t)
            return "UPDATE %s SET %s = %s WHERE %s" % (
                t, col, self.assignment_value([(c.split(".")[1], k) for c, k in own], kind), self.predicate(own))
        other = self.pick([o for o in TABLES if o != t])
        c1, c2 = self.columns_of(t, "l"), self.columns_of(other, "r")
        on = "%s = %s" % (self.pick([c for c, k in c1 if k == "int"]), self.pick([c for c, k in c2 if k == "int"]))
        join = self.pick(["JOIN", "JOIN", "LEFT JOIN"])
        where = self.predicate(c1 + c2)
        if r < 0.85:
            return "UPDATE %s AS l %s %s AS r ON %s SET l.%s = %s WHERE %s" % (
                t, join, other, on, col, self.assignment_value(c1, kind), where)
        if r < 0.93:
            return "DELETE l FROM %s AS l %s %s AS r ON %s WHERE %s" % (t, join, other, on, where)
        return "DELETE FROM l USING %s AS l JOIN %s AS r ON %s WHERE %s" % (t, other, on, where)

    def query(self):
        if self.rng.random() < 0.08:
            return self.derived()
        return self.select()

# ---- comparison ---------------------------------------------------------------


def normalize(v, tolerance):
    if v is None:
        return ("null",)
    if isinstance(v, float):
        return ("num", round(v, 6)) if tolerance else ("num", v)
    if isinstance(v, (int, decimal.Decimal)):
        d = decimal.Decimal(v)
        if tolerance:
            return ("num", round(float(d), 6))
        return ("num", d.normalize() if d == d.to_integral() else d)
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    return ("str", str(v))


def same_rows(a, b, ordered, float_cols):
    def norm(rows):
        return [tuple(normalize(v, i in float_cols) for i, v in enumerate(r)) for r in rows]
    na, nb = norm(a), norm(b)
    if not ordered:
        na, nb = sorted(na, key=repr), sorted(nb, key=repr)
    return na == nb


def run(conn, sql):
    """("ok", rows, float column positions) or ("error", code, message)."""
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            rows = cur.fetchall()
            floats = {i for i, d in enumerate(cur.description or ()) if d[1] in (4, 5)}  # FLOAT, DOUBLE
            return ("ok", rows, floats)
    except pymysql.MySQLError as e:
        return ("error", e.args[0], str(e))

# ---- servers ------------------------------------------------------------------


def start_mariadb():
    """(process, port, directory to remove or None)."""
    base = os.environ.get("SHALE_MARIADB_DIR")
    tmp = None
    if not base:
        tmp = tempfile.mkdtemp(prefix="shale-diff-mariadb-")
        base = tmp
    port = free_port()
    proc = subprocess.Popen([os.path.join(REPO, "scripts", "mariadb-private.sh"), "serve", base, str(port),
                             "--innodb-buffer-pool-size=32M"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            pymysql.connect(host="127.0.0.1", port=port, user="root").close()
            return proc, port, tmp
        except pymysql.MySQLError:
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError("MariaDB did not start (log in %s/mariadbd.log)" % base)


def connect(port):
    return pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True)


def prepare(conn, seed):
    with conn.cursor() as cur:
        cur.execute("DROP DATABASE IF EXISTS " + DB)
        cur.execute("CREATE DATABASE " + DB)
    conn.select_db(DB)
    for stmt in setup_statements(seed):
        with conn.cursor() as cur:
            cur.execute(stmt)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shaled")
    ap.add_argument("--shale-port", type=int, help="a shaled already running (instead of --shaled)")
    ap.add_argument("--mariadb-port", type=int)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--show", type=int, default=0)
    ap.add_argument("--verbose", action="store_true", help="also print the queries both servers reject")
    args = ap.parse_args()

    gen = Gen(random.Random(args.seed))
    if args.show:
        for _ in range(args.show):
            print(gen.query()[0] + ";")
        return 0

    shaled = None
    mariadb = None
    tmp = None
    try:
        if args.shale_port:
            shale_port = args.shale_port
        else:
            shaled = ShaledProcess(os.path.abspath(args.shaled))
            shaled.start()
            shale_port = shaled.port
        if args.mariadb_port:
            maria_port = args.mariadb_port
        else:
            mariadb, maria_port, tmp = start_mariadb()
        shale, maria = connect(shale_port), connect(maria_port)
        with maria.cursor() as cur:
            # MySQL's default (Shale's fixed limit); MariaDB's is 1 MiB.
            cur.execute("SET SESSION group_concat_max_len = 1024")
        prepare(shale, args.seed)
        prepare(maria, args.seed)

        mismatches = 0
        both_failed = 0
        nonempty = 0
        writes = 0
        for n in range(args.queries):
            if gen.rng.random() < 0.04:
                # A write on both, then every table compared.
                sql = gen.write()
                a, b = run(shale, sql), run(maria, sql)
                ok = (a[0] == b[0] == "ok") or (a[0] == b[0] == "error" and a[1] == b[1])
                for t, (_, pk) in TABLES.items():
                    dump = "SELECT * FROM %s ORDER BY %s" % (t, pk)
                    da, db = run(shale, dump), run(maria, dump)
                    ok = ok and da[0] == db[0] == "ok" and same_rows(da[1], db[1], True, da[2] | db[2])
                writes += 1
                if not ok:
                    mismatches += 1
                    print("MISMATCH #%d (write %d, seed %d):\n  %s\n  shale:   %s\n  mariadb: %s" % (
                        mismatches, n, args.seed, sql, a[1:] if a[0] == "error" else "ok",
                        b[1:] if b[0] == "error" else "ok"))
                    # Continue from the same data on both.
                    prepare(shale, args.seed)
                    prepare(maria, args.seed)
                continue
            sql, ordered = gen.query()
            a, b = run(shale, sql), run(maria, sql)
            if a[0] == "error" and b[0] == "error" and a[1] == b[1]:
                both_failed += 1
                if args.verbose:
                    print("both rejected (shale %d, mariadb %d): %s" % (a[1], b[1], sql))
                continue
            if a[0] == b[0] == "ok" and same_rows(a[1], b[1], ordered, a[2] | b[2]):
                nonempty += 1 if a[1] else 0
                continue
            mismatches += 1
            print("MISMATCH #%d (query %d, seed %d):\n  %s\n  shale:   %s\n  mariadb: %s" % (
                mismatches, n, args.seed, sql, a[1] if a[0] == "ok" else a[1:],
                b[1] if b[0] == "ok" else b[1:]))
        print("%d statements (%d writes, %d queries with rows), %d mismatches, %d rejected by both (seed %d)" % (
            args.queries, writes, nonempty, mismatches, both_failed, args.seed))
        return 1 if mismatches else 0
    finally:
        if shaled:
            shaled.cleanup()
        if mariadb:
            mariadb.terminate()
            try:
                mariadb.wait(timeout=30)
            except subprocess.TimeoutExpired:
                mariadb.kill()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
