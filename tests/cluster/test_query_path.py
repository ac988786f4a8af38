"""The query path of issue 6: a point select touches only the node of its
key's slice, and the rows a statement moves between nodes are shown
(EXPLAIN ANALYZE, Shale_rows_sent_between_nodes). docs/cluster.md "Query
path: what moves between nodes".

Three nodes, a REPLICAS=2 table whose slices every node ranks some of.
Through every node, a point select by primary key moves no row when the
node ranks the key's slice and exactly one when another node does (both
happen on every node), and returns the right row; the node's status
counter grows by the rows the statement moved.

Not tested here because it is not built: a filtered aggregate moves every
row of the slices ranked elsewhere, not one partial row per slice, and a
join brings both inputs to the node running it (docs/cluster.md gives the
measured counts).
"""
import argparse
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_fixture import ThreeNodeTestCase, status_counter, wait_for_table  # noqa: E402

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


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--shaled", required=True)
    args, rest = parser.parse_known_args()
    ThreeNodeTestCase.SHALED = os.path.abspath(args.shaled)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
