"""system.nodes on a single node (docs/cluster.md): a one-node cluster shows
itself as the leader; the table works as a query input; unknown system
tables are 1146; the no-quorum gate lets a node with a quorum serve
everything (the multi-node behaviour is in tests/cluster/)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402


class SystemNodesTest(NodeTestCase):
    extra_args = ("--node-name", "solo")

    def test_one_row_leader(self):
        cur = self.connect().cursor()
        cur.execute("SELECT node_id, name, address, sql_address, state, epoch, is_leader, last_heartbeat_ms "
                    "FROM system.nodes")
        rows = cur.fetchall()
        self.assertEqual(len(rows), 1)
        node_id, name, address, sql_address, state, epoch, is_leader, hb = rows[0]
        self.assertRegex(node_id, r"^[0-9a-f]{32}$")
        self.assertEqual(name, "solo")
        self.assertEqual(sql_address, "127.0.0.1:%d" % self.node.port)
        self.assertRegex(address, r"^127\.0\.0\.1:\d+$")
        self.assertEqual((state, epoch, is_leader, hb), ("online", 1, 1, 0))
        self.assertEqual([d[0] for d in cur.description],
                         ["node_id", "name", "address", "sql_address", "state", "epoch", "is_leader",
                          "last_heartbeat_ms"])

    def test_query_input(self):
        cur = self.connect().cursor()
        cur.execute("SELECT COUNT(*) FROM system.nodes WHERE is_leader = 1")
        self.assertEqual(cur.fetchall(), ((1,),))
        cur.execute("SELECT n.name FROM system.nodes AS n ORDER BY n.name")
        self.assertEqual(cur.fetchall(), (("solo",),))
        cur.execute("SELECT name FROM system.nodes WHERE state = 'unreachable'")
        self.assertEqual(cur.fetchall(), ())

    def test_unknown_system_table(self):
        cur = self.connect().cursor()
        self.assertSqlError(cur, "SELECT * FROM system.no_such_table", 1146)

    def test_epoch_survives_restart(self):
        cur = self.connect().cursor()
        cur.execute("SELECT node_id, epoch FROM system.nodes")
        before = cur.fetchall()
        self.node.stop()
        self.node.start()
        cur = self.connect().cursor()
        cur.execute("SELECT node_id, epoch, is_leader FROM system.nodes")
        after = cur.fetchall()
        self.assertEqual(after, ((before[0][0], before[0][1], 1),))
        # Still serves data statements after the restart (it leads again).
        conn, cur = self.fresh_db("sysnodes")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO t VALUES (1)")
        cur.execute("SELECT COUNT(*) FROM t")
        self.assertEqual(cur.fetchall(), ((1,),))


if __name__ == "__main__":
    main()
