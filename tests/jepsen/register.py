"""register: single-row registers read, written and compare-and-set by
autocommit statements; checked for linearizability per key by porcupine
(checker/, a Go program).

Table `jepsen.reg (id INT PRIMARY KEY, v INT NOT NULL) REPLICAS=2`, one row
per key, set to 0 before the clients start (recorded as a write of 0 that
ended before anything else began). Operations (history.py's format):

- read:  SELECT id, v FROM reg WHERE id = k    value: v read (null: no row);
         an answer with another id or several rows is recorded as
         "wrong_rows" (and fails the run)
- write: UPDATE reg SET v = x WHERE id = k      value: x (unique in the run)
- cas:   UPDATE reg SET v = x WHERE id = k AND v = o   value: [o, x]
  ok iff one row was affected; none affected is `fail` with error
  [0, "cas-mismatch"] -- a definite answer ("v was not o"), which the
  checker uses. PyMySQL does not set CLIENT_FOUND_ROWS, so "affected" is
  "changed"; x is new, never o, so changed and matched agree anyway.
  o is the last value this process saw for k (read, written or swapped in).

A write that matches no row is recorded as `fail` with [0, "no-row"] and
makes the run invalid (the row is never deleted).
"""
import itertools
import threading

import porcupine


class Register:
    name = "register"

    def __init__(self, args):
        self.keys = list(range(1, args.keys + 1))
        self.values = itertools.count(1)
        self.values_lock = threading.Lock()

    def setup(self, cluster, history, run_sql):
        run_sql(cluster.nodes[0], "CREATE DATABASE IF NOT EXISTS jepsen")
        run_sql(cluster.nodes[0], "CREATE TABLE IF NOT EXISTS jepsen.reg (id INT PRIMARY KEY, v INT NOT NULL) REPLICAS=2")
        import time
        start = time.monotonic_ns()
        run_sql(cluster.nodes[0], "INSERT IGNORE INTO jepsen.reg VALUES " + ",".join("(%d, 0)" % k for k in self.keys))
        # Every node answers for the table before the clients start.
        for node in cluster.nodes:
            rows = run_sql(node, "SELECT id, v FROM jepsen.reg ORDER BY id")
            if [tuple(r) for r in rows] != [(k, 0) for k in self.keys]:
                raise RuntimeError("%s: initial rows %r" % (node.name, rows))
        end = time.monotonic_ns()
        for k in self.keys:
            history.add({"process": -1, "node": cluster.nodes[0].name, "type": "ok", "f": "write", "key": k,
                         "value": 0, "start": start, "end": end})

    def next_value(self):
        with self.values_lock:
            return next(self.values)

    def generate(self, worker):
        rng = worker.rng
        k = rng.choice(self.keys)
        r = rng.random()
        if r < 0.5:
            return {"f": "read", "key": k, "value": None}
        if r < 0.75:
            return {"f": "write", "key": k, "value": self.next_value()}
        old = worker.seen.get(k, 0)
        return {"f": "cas", "key": k, "value": [old, self.next_value()]}

    def invoke(self, conn, op, worker):
        cur = conn.cursor()
        k = op["key"]
        if op["f"] == "read":
            cur.execute("SELECT id, v FROM jepsen.reg WHERE id = %d" % k)
            rows = cur.fetchall()
            if len(rows) > 1 or (rows and int(rows[0][0]) != k):
                # A point read answered with other rows: recorded, and the
                # check fails on it (the value is not a register's).
                return {"type": "ok", "value": None, "wrong_rows": [[int(a), int(b)] for a, b in rows]}
            v = rows[0][1] if rows else None
            if v is not None:
                worker.seen[k] = int(v)
            return {"type": "ok", "value": None if v is None else int(v)}
        if op["f"] == "write":
            n = cur.execute("UPDATE jepsen.reg SET v = %d WHERE id = %d" % (op["value"], k))
            if n == 1:
                worker.seen[k] = op["value"]
                return {"type": "ok"}
            return {"type": "fail", "error": [0, "no-row"], "affected": n}
        old, new = op["value"]
        n = cur.execute("UPDATE jepsen.reg SET v = %d WHERE id = %d AND v = %d" % (new, k, old))
        if n == 1:
            worker.seen[k] = new
            return {"type": "ok"}
        if n == 0:
            return {"type": "fail", "error": [0, "cas-mismatch"]}
        return {"type": "info", "error": [0, "cas affected %d rows" % n]}

    def final_ops(self, cluster):
        """After the faults are healed: every key read through every node."""
        return [(node, {"f": "read", "key": k, "value": None}) for node in cluster.nodes for k in self.keys]

    def check(self, ops, out_dir, args):
        wit = witnesses(ops)
        missed = [op for op in ops if op.get("f") == "write" and op.get("error") == [0, "no-row"]]
        wrong_rows = [op for op in ops if op.get("wrong_rows") is not None]
        # porcupine does not see such reads (porcupine.check leaves them out).
        if wrong_rows:
            lines = ["point reads answered with other rows: %d" % len(wrong_rows)]
            lines += ["    #%d p%s %s: SELECT ... WHERE id = %s returned (id, v) %s" %
                      (op["index"], op["process"], op.get("node"), op["key"], op["wrong_rows"])
                      for op in wrong_rows[:5]]
        verdict = porcupine.check(ops, out_dir, cache_dir=args.cache_dir, timeout_s=args.checker_timeout)
        if missed:
            verdict["valid"] = False
            verdict["writes_matching_no_row"] = [op["index"] for op in missed[:20]]
        if wrong_rows:
            verdict["valid"] = False
            verdict["reads_with_wrong_rows"] = [op["index"] for op in wrong_rows[:20]]
            verdict["report"] = verdict.get("report", "") + "\n".join(lines) + "\n"
        counts = {}
        for op in ops:
            if op.get("process") not in ("nemesis", -1):
                key = "%s %s" % (op["f"], op["type"])
                counts[key] = counts.get(key, 0) + 1
        verdict["op_counts"] = counts
        verdict["witnesses"] = {k: v[:10] for k, v in wit.items()}
        verdict["witness_counts"] = {k: len(v) for k, v in wit.items()}
        lines = [verdict.get("report", "")]
        for kind, found in wit.items():
            if found:
                lines.append("%s: %d (shown: the first 3)" % (kind, len(found)))
                for w in found[:3]:
                    lines.extend("    " + x for x in w["ops"])
                    lines.append("")
        verdict["report"] = "\n".join(lines)
        return verdict


def witnesses(ops):
    """Small proofs of non-linearizability that a person can read, searched
    directly (porcupine's verdict is the authority; these only explain it).
    Values are unique, so the op that set a value is known:

    stale-read: A set v; B set w, B began after A returned; R began after B
      returned and read v.
    stale-after-cas: A set v; a cas from v began after A returned and found
      v changed (0 rows); R began after that cas returned and read v.
    """
    rops = [op for op in ops if op.get("process") != "nemesis" and op.get("f") in ("read", "write", "cas")]
    if not rops:
        return {}
    base = min(op["start"] for op in rops if op["process"] != -1) if any(op["process"] != -1 for op in rops) else 0

    def fmt(op):
        return "#%d p%s %s [%.4f, %.4f] %s key %s %s %s%s" % (
            op["index"], op["process"], op.get("node"), (op["start"] - base) / 1e9, (op["end"] - base) / 1e9,
            op["f"], op["key"], op["value"], op["type"],
            " (0 rows)" if op.get("error") == [0, "cas-mismatch"] else "")

    setter = {}
    setters_by_key = {}
    for op in rops:
        if op["type"] == "ok" and op["f"] in ("write", "cas"):
            v = op["value"] if op["f"] == "write" else op["value"][1]
            setter[(op["key"], v)] = op
            setters_by_key.setdefault(op["key"], []).append(op)
    reads = {}
    for op in rops:
        if op["f"] == "read" and op["type"] == "ok":
            reads.setdefault((op["key"], op["value"]), []).append(op)
    out = {"stale-read": [], "stale-after-cas": []}
    for (k, v), rs in reads.items():
        a = setter.get((k, v))
        if a is None:
            continue
        later = sorted((b for b in setters_by_key.get(k, ()) if b["start"] > a["end"]), key=lambda b: b["end"])
        if later:
            b = later[0]
            for r in rs:
                if r["start"] > b["end"]:
                    out["stale-read"].append({"ops": ["A " + fmt(a), "B " + fmt(b), "R " + fmt(r)]})
                    break
    for c in rops:
        if c["f"] != "cas" or c.get("error") != [0, "cas-mismatch"]:
            continue
        k, v = c["key"], c["value"][0]
        a = setter.get((k, v))
        if a is None or a["end"] >= c["start"]:
            continue
        for r in reads.get((k, v), ()):
            if r["start"] > c["end"]:
                out["stale-after-cas"].append({"ops": ["A " + fmt(a), "C " + fmt(c), "R " + fmt(r)]})
                break
    return out
