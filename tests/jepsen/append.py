"""append: Elle-style list-append transactions, checked by elle.py.

Table `jepsen.app (k INT PRIMARY KEY, v TEXT NOT NULL) REPLICAS=2`; v is a
comma-separated list of integers. Every key's row exists (v = '') before any
transaction uses it: setup inserts enough of them (batches of 500), so a
transaction never meets a missing row. --keys keys are active at a time; a
key that got --max-writes-per-key appends is retired for the next unused
one (short lists keep reads cheap and the version orders many).

An operation is one transaction of 1-4 micro-ops, value [[f, k, v], ...]:
`["r", k, null]` (filled with the list read) or `["append", k, x]` (x unique
in the run). Isolation is REPEATABLE READ, the default, and:

- a transaction with no append (read-only) reads with plain SELECTs
  (`BEGIN; SELECT v FROM app WHERE k = ..; ...; COMMIT`; a single read is an
  autocommit SELECT): one snapshot;
- a transaction with an append reads with `SELECT ... FOR UPDATE` and
  appends with `INSERT INTO app VALUES (k, 'x') ON DUPLICATE KEY UPDATE
  v = CONCAT(v, ',x')`: both lock the row until COMMIT.

Why: Shale follows InnoDB, where a write (and a locking read) reads the
newest committed row, not the transaction's snapshot. A transaction that
read a key with a plain SELECT and then appended to it would append after
rows it did not see -- a G-single that InnoDB's REPEATABLE READ allows and
snapshot isolation does not. With locking reads in every writing
transaction the writers are two-phase locked (serializable among
themselves) and the readers read snapshots, so the history must be
serializable; snapshots are cluster-wide and taken from the leader, so an
acknowledged commit must be in every snapshot taken after it (real time).
elle.py fails every anomaly except G2 / G2-realtime, which snapshot
isolation allows in general (they are listed).
--plain-reads makes writing transactions read with plain SELECTs too: then
G-single is what InnoDB semantics allow, and it is listed, not failed.

Reads ask for k too: a point read answered with another key's row is
recorded ("wrong_rows") and fails the run (`wrong-row`).

Any error before COMMIT is a `fail` (writes are buffered until COMMIT); at
COMMIT see history.classify.
"""
import itertools
import threading

import elle
from history import run_txn_statement


def parse(v):
    if v is None:
        return None
    return [int(x) for x in str(v).split(",") if x != ""]


def wrong(rows, k):
    """A point read answered with more than one row or another key's."""
    return len(rows) > 1 or (len(rows) == 1 and int(rows[0][0]) != k)


def rows_of(rows):
    return [[int(a), str(b)[:200]] for a, b in rows]


class Append:
    name = "append"

    def __init__(self, args):
        self.active_count = args.keys
        self.max_writes = args.max_writes_per_key
        # Rows made at setup: enough for a fast run of this duration.
        self.total_keys = max(200, int(args.duration * 60 / self.max_writes) + self.active_count + 50)
        self.plain_reads = args.plain_reads
        self.lock = threading.Lock()
        self.active = list(range(1, self.active_count + 1))
        self.next_key = self.active_count + 1
        self.writes = {}
        self.values = itertools.count(1)

    def setup(self, cluster, history, run_sql):
        n1 = cluster.nodes[0]
        run_sql(n1, "CREATE DATABASE IF NOT EXISTS jepsen")
        run_sql(n1, "CREATE TABLE IF NOT EXISTS jepsen.app (k INT PRIMARY KEY, v TEXT NOT NULL) REPLICAS=2")
        for lo in range(1, self.total_keys + 1, 500):
            hi = min(self.total_keys, lo + 499)
            run_sql(n1, "INSERT IGNORE INTO jepsen.app VALUES " + ",".join("(%d, '')" % k for k in range(lo, hi + 1)))
        for node in cluster.nodes:
            n = run_sql(node, "SELECT COUNT(*) FROM jepsen.app WHERE v = ''")[0][0]
            if n != self.total_keys:
                raise RuntimeError("%s: %d empty rows, expected %d" % (node.name, n, self.total_keys))

    def generate(self, worker):
        rng = worker.rng
        ops = []
        with self.lock:
            for _ in range(rng.randint(1, 4)):
                k = rng.choice(self.active)
                if rng.random() < 0.5:
                    ops.append(["r", k, None])
                    continue
                ops.append(["append", k, next(self.values)])
                self.writes[k] = self.writes.get(k, 0) + 1
                if self.writes[k] >= self.max_writes and self.next_key <= self.total_keys:
                    self.active[self.active.index(k)] = self.next_key
                    self.next_key += 1
        return {"f": "txn", "value": ops}

    def invoke(self, conn, op, worker):
        cur = conn.cursor()
        mops = op["value"]
        writes = any(f == "append" for f, _, _ in mops)
        out = []
        if not writes and len(mops) == 1:
            k = mops[0][1]
            cur.execute("SELECT k, v FROM jepsen.app WHERE k = %d" % k)
            rows = cur.fetchall()
            if wrong(rows, k):
                return {"type": "ok", "value": [["r", k, None]], "wrong_rows": [[k, rows_of(rows)]]}
            return {"type": "ok", "value": [["r", k, parse(rows[0][1]) if rows else None]]}
        lock = " FOR UPDATE" if writes and not self.plain_reads else ""
        run_txn_statement(cur, "BEGIN")
        wrong_rows = []
        for f, k, v in mops:
            if f == "r":
                rows = run_txn_statement(cur, "SELECT k, v FROM jepsen.app WHERE k = %d%s" % (k, lock))
                if wrong(rows, k):
                    wrong_rows.append([k, rows_of(rows)])
                    out.append(["r", k, None])
                    continue
                out.append(["r", k, parse(rows[0][1]) if rows else None])
            else:
                run_txn_statement(cur, "INSERT INTO jepsen.app (k, v) VALUES (%d, '%d') "
                                       "ON DUPLICATE KEY UPDATE v = CONCAT(v, ',%d')" % (k, v, v))
                out.append(["append", k, v])
        cur.execute("COMMIT")
        if wrong_rows:
            return {"type": "ok", "value": out, "wrong_rows": wrong_rows}
        return {"type": "ok", "value": out}

    def final_ops(self, cluster):
        """After the faults are healed: every key used, read through every
        node in one read-only transaction."""
        with self.lock:
            used = list(range(1, self.next_key))
        return [(node, {"f": "txn", "value": [["r", k, None] for k in used], "final": True})
                for node in cluster.nodes]

    def check(self, ops, out_dir, args):
        wrong_rows = [op for op in ops if op.get("wrong_rows")]
        if wrong_rows:
            # The reads answered with another key's row are not evidence of
            # the key's list: elle.py does not see them; they fail here.
            cleaned = []
            for op in ops:
                if op.get("wrong_rows"):
                    keys = {k for k, _ in op["wrong_rows"]}
                    op = dict(op, value=[m for m in op["value"] if not (m[0] == "r" and m[1] in keys and m[2] is None)])
                cleaned.append(op)
            ops = cleaned
        verdict = elle.check(ops)
        if wrong_rows:
            verdict["counts"]["wrong-row"] = len(wrong_rows)
            verdict["anomalies"]["wrong-row"] = [{"txn": op["index"], "node": op.get("node"),
                                                  "asked_and_got": op["wrong_rows"]} for op in wrong_rows[:8]]
            verdict["valid"] = False
            verdict["report"] = verdict["report"].replace("  no anomalies\n", "")
            verdict["report"] += "  wrong-row: %d (FAILURE: a point read answered with another key's row)\n" % \
                len(wrong_rows)
            for op in wrong_rows[:3]:
                verdict["report"] += "    #%d p%s %s: key, rows (k, v) %s\n" % (op["index"], op["process"],
                                                                             op.get("node"), op["wrong_rows"])
        if args.plain_reads:
            # InnoDB semantics: a plain read then a write of the same key is
            # allowed to be a G-single.
            for name in ("G-single", "G-single-realtime"):
                if name in verdict["counts"]:
                    verdict["allowed"].append(name)
            verdict["valid"] = not [k for k in verdict["counts"] if k not in verdict["allowed"]]
        return verdict
