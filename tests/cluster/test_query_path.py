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
whole inner table (docs/cluster.md).
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
                    before = status_counter(node, ROWS_MOVED)
                    cur.execute("EXPLAIN ANALYZE " + sql)
                    analyzed = "\n".join(str(r[0]) for r in cur.fetchall())
                    moved = moved_by(analyzed)
                    self.assertEqual(status_counter(node, ROWS_MOVED) - before, moved, analyzed)
                    cur_off.execute("EXPLAIN ANALYZE " + sql)
                    moved_off = moved_by("\n".join(str(r[0]) for r in cur_off.fetchall()))
                    print("node%d: %s: %d rows moved (%d with shale_pushdown = 0)" % (node.index, sql, moved,
                                                                                     moved_off))
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--shaled", required=True)
    args, rest = parser.parse_known_args()
    ThreeNodeTestCase.SHALED = os.path.abspath(args.shaled)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
