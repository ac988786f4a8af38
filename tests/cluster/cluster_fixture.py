"""Starts several real shaled processes on loopback as one cluster.

Node 1 bootstraps; the others start with --join <node 1's cluster port>.
Every node gets a free MySQL port and a free cluster (rpc) port; a restarted
node keeps its data directory and cluster port (its address is part of the
cluster's membership), so it can rejoin by itself.
"""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from shaled_fixture import ShaledProcess, free_port  # noqa: E402

# Short timeouts keep the tests quick; the defaults are in docs/cluster.md.
TIMING = ["--election-timeout-ms", "500", "--heartbeat-interval-ms", "50", "--node-timeout-ms", "2000"]


class ClusterNode(ShaledProcess):
    def __init__(self, binary, index, join=None):
        self.index = index
        self.rpc_port = free_port()
        self.join_args = ["--join", join] if join else []
        super().__init__(binary, ["--node-name", "node%d" % index, "--rpc-port", str(self.rpc_port),
                                  "--ssl", "OFF"] + TIMING + self.join_args)
        self.started_once = False

    def _start_once(self, timeout):
        super()._start_once(timeout)
        self.started_once = True

    def move_ports(self, error):
        """A failed bind of the cluster port moves it too, but only before
        the node first ran: after that its address is part of the cluster's
        membership, so a restart must come back on the same port."""
        if "127.0.0.1:%d" % self.rpc_port in error and not self.started_once:
            i = self.extra_args.index("--rpc-port")
            self.rpc_port = free_port()
            self.extra_args[i + 1] = str(self.rpc_port)
        super().move_ports(error)

    @property
    def rpc_address(self):
        return "127.0.0.1:%d" % self.rpc_port

    def forget_join(self):
        """Restart without --join: the node must find its cluster by itself."""
        for a in self.join_args:
            self.extra_args.remove(a)
        self.join_args = []

    def connect(self):
        import pymysql
        return pymysql.connect(host="127.0.0.1", port=self.port, user="root", password="",
                               autocommit=True, connect_timeout=5, read_timeout=10)

    def query(self, sql):
        conn = self.connect()
        try:
            cur = conn.cursor()
            cur.execute(sql)
            return cur.fetchall()
        finally:
            conn.close()

    def nodes(self):
        """system.nodes as {name: (state, epoch, is_leader)}."""
        rows = self.query("SELECT name, state, epoch, is_leader FROM system.nodes")
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def running(self):
        return self.proc is not None and self.proc.poll() is None


def start_cluster(binary, n):
    first = ClusterNode(binary, 1)
    first.start()
    nodes = [first]
    for i in range(2, n + 1):
        node = ClusterNode(binary, i, join=first.rpc_address)
        node.start()
        nodes.append(node)
    return nodes


def wait_until(what, predicate, timeout, interval=0.2):
    """Polls predicate() every `interval` s until it returns a true value;
    returns it. Errors raised by predicate count as "not yet" (nodes may be
    restarting). Raises AssertionError after `timeout` s."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            value = predicate()
            if value:
                return value
            last = value
        except Exception as e:  # noqa: BLE001 - a node answering an error is "not yet"
            last = e
        time.sleep(interval)
    raise AssertionError("timed out after %.0f s waiting for %s (last: %r)" % (timeout, what, last))


def query_when_ready(node, sql, timeout=30):
    """The answer to `sql` on `node`, retrying while the node answers with an
    error (it may still be coming back: restarting, catching up with the
    leader); a wrong answer is the caller's to check, never retried."""
    deadline = time.time() + timeout
    while True:
        try:
            return node.query(sql)
        except Exception as e:  # noqa: BLE001 - a node answering an error is "not yet"
            if time.time() > deadline:
                raise AssertionError("node%d still fails %r after %.0f s: %r" % (node.index, sql, timeout, e))
        time.sleep(0.2)


def members_agree(nodes, names):
    """Every node in `nodes` shows exactly `names` as members, with one leader."""
    for node in nodes:
        view = node.nodes()
        if set(view) != set(names) or sum(1 for row in view.values() if row[2]) != 1:
            return False
    return True


def close_quietly(conn):
    """Closes a client connection that may already be broken (its node
    killed); returns None so callers can write `conn = close_quietly(conn)`."""
    if conn is not None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 -- a dead peer may fail the close any way
            pass
    return None


class ThreeNodeTestCase(unittest.TestCase):
    """A test case with a fresh cluster of NODES nodes (`self.nodes`, three
    unless a subclass says otherwise) per test, all members agreeing before
    it starts; `SHALED` is the binary (set on this class, subclasses inherit
    it). A failed test prints each node's log tail; the nodes are stopped
    and their directories removed after every test."""
    SHALED = None
    NODES = 3
    ALL3 = {"node1", "node2", "node3"}

    def setUp(self):
        self.nodes = start_cluster(self.SHALED, self.NODES)
        names = {"node%d" % (i + 1) for i in range(self.NODES)}
        wait_until("%d members on every node" % self.NODES, lambda: members_agree(self.nodes, names), 60)

    def tearDown(self):
        result = getattr(getattr(self, "_outcome", None), "result", None)
        failed = result is not None and any(t is self for t, _ in result.errors + result.failures)
        if failed:
            for n in self.nodes:
                print("--- node%d log tail\n%s" % (n.index, n.log()[-3000:]))
        for node in self.nodes:
            node.cleanup(keep_log_as="%s-node%d.log" % (self.id(), node.index) if failed else None)


def status_counter(node, name):
    """SHOW GLOBAL STATUS value `name` of `node` as an int (None if absent)."""
    rows = node.query("SHOW GLOBAL STATUS LIKE '%s'" % name)
    return int(rows[0][1]) if rows else None


def fully_protected(node):
    """system.protection says every slice has all its replicas."""
    return node.query("SELECT status FROM system.protection")[0][0] == "fully protected"


def wait_for_table(nodes, table, timeout=15):
    """Waits until every node in `nodes` can read `table` (db.name). Nodes
    catch up with the leader's metadata before answering 1146, so this
    normally returns at once; it stays as a guard with a clear message."""
    for node in nodes:
        wait_until("node%d sees %s" % (node.index, table),
                   lambda: node.query("SELECT COUNT(*) FROM %s" % table), timeout)
