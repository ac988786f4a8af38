"""The query path of issue 6: a point select touches only the node of its
key's slice, a filtered aggregate moves only partial rows, a filter moves
only the rows that pass, and the rows a statement moves between nodes are
shown (EXPLAIN ANALYZE, Shale_rows_sent_between_nodes). docs/cluster.md
"Query path: what moves between nodes".

Three nodes, a REPLICAS=2 table whose slices every node ranks some of.
Through every node, a point select by primary key moves no row when the
node ranks the key's slice and exactly one when another does (both
happen on every node), and returns the right row; the node's status
counter grows by the rows the statement moved.

The statements of the docs table (a filtered COUNT, a grouped aggregate
with COUNT/SUM/MIN/MAX/AVG, a join) answer what Python computes from the
same rows, the same through every node and with shale_pushdown off, and
the aggregates move at most (remote slices x groups) rows, against
thousands before push-down (and with it off). A join on the hash join's
inner side moves its filtered side's rows only; a join whose inner side is
read by its primary key (b.id = a.v) is a batched lookup: the keys of the
filtered outer rows go to the slices holding them, one request per slice,
and only the matching inner rows come back, so it moves at most about
(outer rows x 3: the outer rows, their keys, the matches) instead of the
whole inner table (docs/cluster.md). Joins on a secondary index's leading
column and on a prefix of a composite primary key are batched too: the
outer keys go to the index's (or table's) slices, which answer the
entries under them, and an index's rows come in a second batched hop
unless the index covers the columns read; the test checks their answers
against Python's and shale_pushdown = 0, and bounds their rows moved by
(outer rows x 2 + matches x 3, or x 1 covering or on a key prefix).
"""
import argparse
from collections import Counter
from decimal import Decimal, ROUND_HALF_UP
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_fixture import ThreeNodeTestCase, close_quietly, status_counter, wait_for_table  # noqa: E402

ROWS_MOVED = "Shale_rows_sent_between_nodes"


def moved_by(plan):
    return int(plan.split("rows sent between nodes: ")[1].split(",")[0])


class QueryPathTest(ThreeNodeTestCase):
    def rows_moved(self, node, cur, cur_off, sql):
        """EXPLAIN ANALYZE of sql through cur (its rows moved must be what
        the node's status counter grew by) and through cur_off (pushdown
        off): the first's text and both counts, printed."""
        before = status_counter(node, ROWS_MOVED)
        cur.execute("EXPLAIN ANALYZE " + sql)
        analyzed = "\n".join(str(r[0]) for r in cur.fetchall())
        moved = moved_by(analyzed)
        self.assertEqual(status_counter(node, ROWS_MOVED) - before, moved, analyzed)
        cur_off.execute("EXPLAIN ANALYZE " + sql)
        moved_off = moved_by("\n".join(str(r[0]) for r in cur_off.fetchall()))
        print("node%d: %s: %d rows moved (%d with shale_pushdown = 0)" % (node.index, sql, moved, moved_off))
        return analyzed, moved, moved_off

    def test_point_select_touches_only_its_slice(self):
        n1 = self.nodes[0]
        n1.query("CREATE DATABASE qp")
        n1.query("CREATE TABLE qp.t (id BIGINT PRIMARY KEY, v VARCHAR(16)) REPLICAS=2")
        wait_for_table(self.nodes, "qp.t")
        n1.query("INSERT INTO qp.t VALUES " + ", ".join("(%d, 'v%d')" % (i, i) for i in range(1, 201)))
        rankers = {r[0] for r in n1.query("SELECT ranking_replica FROM system.slices WHERE db = 'qp'")}
        self.assertEqual(rankers, self.ALL3)  # every node ranks some slice, not all of them
        for node in self.nodes:
            seen = set()
            for i in range(1, 41):
                before = status_counter(node, ROWS_MOVED)
                rows = node.query("EXPLAIN ANALYZE SELECT v FROM qp.t WHERE id = %d" % i)
                plan = "\n".join(str(r[0]) for r in rows)
                self.assertIn("actual rows=1", plan)
                moved = moved_by(plan)
                self.assertIn(moved, (0, 1), plan)
                seen.add(moved)
                # The counter counts the same rows (both ends of a row count
                # once each on their own node; this node's end is one).
                self.assertEqual(status_counter(node, ROWS_MOVED) - before, moved, plan)
                self.assertEqual(node.query("SELECT v FROM qp.t WHERE id = %d" % i), (("v%d" % i,),))
            self.assertEqual(seen, {0, 1}, "node%d" % node.index)

    def test_aggregates_and_filters_move_only_what_they_need(self):
        n1 = self.nodes[0]
        n1.query("CREATE DATABASE qp")
        n1.query("CREATE TABLE qp.t (id BIGINT PRIMARY KEY, g INT, v INT, d DECIMAL(10,2)) SLICES=4 REPLICAS=2")
        wait_for_table(self.nodes, "qp.t")
        # 6,000 rows (the table of docs/cluster.md): every v in 0..999 six
        # times, g in 0..6, d exact to the cent (and NULL for every 11th).
        rows = []
        for i in range(1, 6001):
            d = None if i % 11 == 0 else Decimal(i % 1000) / 100 - 3
            rows.append((i, i % 7, (i * 7919) % 1000, d))
        for start in range(0, len(rows), 1000):
            n1.query("INSERT INTO qp.t VALUES " + ", ".join(
                "(%d, %d, %d, %s)" % (i, g, v, "NULL" if d is None else str(d))
                for i, g, v, d in rows[start:start + 1000]))
        slices = n1.query("SELECT ranking_replica FROM system.slices WHERE db = 'qp' AND table_name = 't' "
                          "AND representation = 'PRIMARY'")
        self.assertEqual(len(slices), 4)

        # The references, from the rows above.
        count = sum(1 for r in rows if r[2] < 100)
        groups = {}
        for i, g, v, d in rows:
            if v < 500:
                groups.setdefault(g, []).append((v, d))
        grouped = sorted(
            (g, len(vs), sum(v for v, _ in vs), min(v for v, _ in vs), max(v for v, _ in vs),
             (Decimal(sum(v for v, _ in vs)) / len(vs)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP),
             sum((d for _, d in vs if d is not None), Decimal(0)))
            for g, vs in groups.items())
        v_counts = Counter(r[2] for r in rows)
        joined = sum(v_counts[a[0]] for a in rows if a[1] == 1)
        ids = {r[0] for r in rows}
        outer_g1 = sum(1 for a in rows if a[1] == 1)
        looked_up = sum(1 for a in rows if a[1] == 1 and a[2] in ids)
        statements = [
            ("SELECT COUNT(*) FROM qp.t WHERE v < 100", ((count,),), 1),
            ("SELECT g, COUNT(*), SUM(v), MIN(v), MAX(v), AVG(v), SUM(d) FROM qp.t WHERE v < 500 GROUP BY g "
             "ORDER BY g", tuple(grouped), len(grouped)),
            ("SELECT COUNT(*) FROM qp.t a JOIN qp.t b ON a.id = b.v WHERE a.g = 1", ((joined,),), None),
            ("SELECT COUNT(*) FROM qp.t a JOIN qp.t b ON b.id = a.v WHERE a.g = 1", ((looked_up,),), "lookup"),
        ]
        self.assertEqual(len(grouped), 7)

        for node in self.nodes:
            remote = sum(1 for (r,) in slices if r != "node%d" % node.index)
            self.assertTrue(0 < remote < 4, slices)
            conn = node.connect()
            off = node.connect()
            try:
                cur = conn.cursor()
                cur_off = off.cursor()
                cur_off.execute("SET shale_pushdown = 0")
                for sql, expected, groups_out in statements:
                    cur.execute(sql)
                    self.assertEqual(tuple(cur.fetchall()), expected, "%s through node%d" % (sql, node.index))
                    cur_off.execute(sql)
                    self.assertEqual(tuple(cur_off.fetchall()), expected, "%s (pushdown off)" % sql)
                    cur.execute("EXPLAIN " + sql)
                    plan = "\n".join(str(r[0]) for r in cur.fetchall())
                    analyzed, moved, moved_off = self.rows_moved(node, cur, cur_off, sql)
                    if groups_out == "lookup":
                        self.assertIn("pushed: batched lookup", plan)
                        cur_off.execute("EXPLAIN " + sql)
                        self.assertNotIn("batched lookup", "\n".join(str(r[0]) for r in cur_off.fetchall()))
                        # The outer rows of remote slices, their keys sent
                        # and the inner rows found: each at most outer_g1.
                        self.assertLessEqual(moved, 3 * outer_g1, analyzed)
                        self.assertGreater(moved_off, 4000, "pushdown off moves the inner table")
                    elif groups_out is not None:
                        self.assertIn("pushed: filter, partial aggregate", plan)
                        # One partial row per group and remote slice, at most.
                        self.assertLessEqual(moved, remote * groups_out, analyzed)
                        self.assertGreater(moved_off, 1000, "pushdown off moves the rows")
                    else:
                        # The join: the filter on a is pushed; b's rows still travel.
                        self.assertIn("pushed: filter", plan)
                        self.assertLess(moved, moved_off, analyzed)
                # A filter alone moves only the rows that pass.
                cur.execute("EXPLAIN ANALYZE SELECT id FROM qp.t WHERE v = 7")
                analyzed = "\n".join(str(r[0]) for r in cur.fetchall())
                self.assertLessEqual(moved_by(analyzed), 6, analyzed)
                cur.execute("SELECT id FROM qp.t WHERE v = 7 ORDER BY id")
                self.assertEqual([r[0] for r in cur.fetchall()], sorted(i for i, _, v, _ in rows if v == 7))
            finally:
                close_quietly(conn)
                close_quietly(off)

    def test_index_and_key_prefix_joins_are_batched_lookups(self):
        n1 = self.nodes[0]
        n1.query("CREATE DATABASE qp")
        # r: 6,000 rows, three per k in 0..1999 (an index, not the key); c:
        # a composite key (a, b), distributed on a, three rows per a; o: the
        # outer side, k NULL for every 50th row, 400 of its 2,500 values
        # matching nothing.
        n1.query("CREATE TABLE qp.r (id BIGINT PRIMARY KEY, k INT, w INT, KEY rk (k)) SLICES=4 REPLICAS=2")
        n1.query("CREATE TABLE qp.c (a INT, b INT, x INT, PRIMARY KEY (a, b)) SLICES=4 REPLICAS=2")
        n1.query("CREATE TABLE qp.o (id BIGINT PRIMARY KEY, g INT, k INT) SLICES=4 REPLICAS=2")
        for t in ("qp.r", "qp.c", "qp.o"):
            wait_for_table(self.nodes, t)
        r_rows = [(i, (i * 7919) % 2000, i % 100) for i in range(1, 6001)]
        c_rows = [(a, b, (a * b) % 11) for a in range(0, 2000) for b in range(3)]
        o_rows = [(i, i % 20, None if i % 50 == 0 else (i * 13) % 2500) for i in range(1, 2001)]
        for table, rows in (("qp.r", r_rows), ("qp.c", c_rows), ("qp.o", o_rows)):
            for start in range(0, len(rows), 1000):
                n1.query("INSERT INTO %s VALUES " % table + ", ".join(
                    "(%s)" % ", ".join("NULL" if v is None else str(v) for v in row)
                    for row in rows[start:start + 1000]))
        outer = [o for o in o_rows if o[1] == 1]
        by_k = {}
        for i, k, w in r_rows:
            by_k.setdefault(k, []).append((i, w))
        pairs = sorted((o[0], i) for o in outer if o[2] is not None for i, _ in by_k.get(o[2], []))
        index_matches = len(pairs)
        index_count = ((index_matches, sum(w for o in outer if o[2] is not None for _, w in by_k.get(o[2], []))),)
        c_by_a = {}
        for a, b, x in c_rows:
            c_by_a.setdefault(a, []).append(x)
        prefix_matches = sum(len(c_by_a.get(o[2], [])) for o in outer if o[2] is not None)
        prefix_count = ((prefix_matches, sum(sum(c_by_a.get(o[2], [])) for o in outer if o[2] is not None)),)
        self.assertGreater(index_matches, 100)
        # (statement, answer, EXPLAIN mark, rows moved per match at most:
        # an entry, its primary key sent and its row; a covering index or a
        # key prefix sends only the entry or row)
        statements = [
            ("SELECT COUNT(*), SUM(r.w) FROM qp.o o JOIN qp.r r ON r.k = o.k WHERE o.g = 1",
             index_count, "pushed: batched lookup (index rk)]", 3 * index_matches),
            ("SELECT o.id, r.id FROM qp.o o JOIN qp.r r ON r.k = o.k WHERE o.g = 1 ORDER BY o.id, r.id",
             tuple(pairs), "pushed: batched lookup (index rk, covering)]", index_matches),
            ("SELECT COUNT(*), SUM(c.x) FROM qp.o o JOIN qp.c c ON c.a = o.k WHERE o.g = 1",
             prefix_count, "pushed: batched lookup (key prefix)]", prefix_matches),
        ]
        for node in self.nodes:
            conn = node.connect()
            off = node.connect()
            try:
                cur = conn.cursor()
                cur_off = off.cursor()
                cur_off.execute("SET shale_pushdown = 0")
                for sql, expected, mark, per_matches in statements:
                    cur.execute(sql)
                    got = tuple(tuple(int(v) for v in r) for r in cur.fetchall())
                    self.assertEqual(got, expected, "%s through node%d" % (sql, node.index))
                    cur_off.execute(sql)
                    got = tuple(tuple(int(v) for v in r) for r in cur_off.fetchall())
                    self.assertEqual(got, expected, "%s (pushdown off)" % sql)
                    cur.execute("EXPLAIN " + sql)
                    self.assertIn(mark, "\n".join(str(r[0]) for r in cur.fetchall()))
                    cur_off.execute("EXPLAIN " + sql)
                    self.assertNotIn("batched lookup", "\n".join(str(r[0]) for r in cur_off.fetchall()))
                    analyzed, moved, moved_off = self.rows_moved(node, cur, cur_off, sql)
                    # The outer rows of remote slices and their keys (each
                    # at most len(outer)), then what the matches send.
                    self.assertLessEqual(moved, 2 * len(outer) + per_matches, analyzed)
                    self.assertGreater(moved_off, 4000, "pushdown off moves the inner table")
            finally:
                close_quietly(conn)
                close_quietly(off)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--shaled", required=True)
    args, rest = parser.parse_known_args()
    ThreeNodeTestCase.SHALED = os.path.abspath(args.shaled)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
