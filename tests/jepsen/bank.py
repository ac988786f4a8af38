"""bank: transfers between accounts in multi-statement transactions, and
snapshot reads of every balance; the total never changes and no balance goes
negative.

Table `jepsen.bank (id INT PRIMARY KEY, balance INT NOT NULL) REPLICAS=2`,
--accounts rows (default 8) of 100 each. Operations:

- transfer, value {"from": a, "to": b, "amount": x}:
    BEGIN; SELECT balance ... WHERE id = a FOR UPDATE;
    SELECT balance ... WHERE id = b FOR UPDATE;
    UPDATE ... SET balance = <a's balance - x> WHERE id = a;
    UPDATE ... SET balance = <b's balance + x> WHERE id = b; COMMIT
  The new balances are computed by the client from what it locked (not
  `balance - x`), so a lock that does not protect its row shows up as a
  wrong total. A transfer that would make a negative is rolled back
  (`fail`, error [0, "insufficient"]). Any error before COMMIT is sent is a
  `fail` (writes are buffered until COMMIT, nothing was written); at COMMIT
  see history.classify.
- read, value [[id, balance], ...]: one of
    all -- `SELECT id, balance FROM bank` (autocommit: one snapshot),
    txn -- BEGIN; one SELECT per account in random order; COMMIT
           (REPEATABLE READ: one snapshot for all of them).
  f is "read"; "mode" says which.

Checker: every ok read (and the final reads through every node after the
faults are healed) holds every account exactly once, sums to the total,
and has no negative balance. Reads ask for the id too; a transfer whose
locking read of an account got no row or another row is rolled back,
recorded with "wrong_rows" and fails the run.
"""
from history import run_txn_statement


class Bank:
    name = "bank"

    def __init__(self, args):
        self.accounts = list(range(1, args.accounts + 1))
        self.initial = 100
        self.total = self.initial * len(self.accounts)

    def setup(self, cluster, history, run_sql):
        run_sql(cluster.nodes[0], "CREATE DATABASE IF NOT EXISTS jepsen")
        run_sql(cluster.nodes[0],
                "CREATE TABLE IF NOT EXISTS jepsen.bank (id INT PRIMARY KEY, balance INT NOT NULL) REPLICAS=2")
        run_sql(cluster.nodes[0], "INSERT IGNORE INTO jepsen.bank VALUES " +
                ",".join("(%d, %d)" % (a, self.initial) for a in self.accounts))
        for node in cluster.nodes:
            rows = run_sql(node, "SELECT id, balance FROM jepsen.bank ORDER BY id")
            if [tuple(r) for r in rows] != [(a, self.initial) for a in self.accounts]:
                raise RuntimeError("%s: initial rows %r" % (node.name, rows))

    def generate(self, worker):
        rng = worker.rng
        if rng.random() < 0.6:
            a, b = rng.sample(self.accounts, 2)
            return {"f": "transfer", "value": {"from": a, "to": b, "amount": rng.randint(1, 5)}}
        return {"f": "read", "mode": rng.choice(["all", "txn"]), "value": None}

    def invoke(self, conn, op, worker):
        cur = conn.cursor()
        if op["f"] == "read" and op["mode"] == "all":
            cur.execute("SELECT id, balance FROM jepsen.bank")
            return {"type": "ok", "value": sorted([int(r[0]), int(r[1])] for r in cur.fetchall())}
        if op["f"] == "read":
            order = list(self.accounts)
            worker.rng.shuffle(order)
            values = []
            run_txn_statement(cur, "BEGIN")
            for a in order:
                rows = run_txn_statement(cur, "SELECT id, balance FROM jepsen.bank WHERE id = %d" % a)
                # Another key's row shows as that account twice (and one
                # missing): the check fails on it.
                values.extend([int(r[0]), int(r[1])] for r in rows)
            cur.execute("COMMIT")
            return {"type": "ok", "value": sorted(values)}
        t = op["value"]
        a, b, x = t["from"], t["to"], t["amount"]
        run_txn_statement(cur, "BEGIN")
        ra = run_txn_statement(cur, "SELECT id, balance FROM jepsen.bank WHERE id = %d FOR UPDATE" % a)
        rb = run_txn_statement(cur, "SELECT id, balance FROM jepsen.bank WHERE id = %d FOR UPDATE" % b)
        if [int(r[0]) for r in ra] != [a] or [int(r[0]) for r in rb] != [b]:
            # A locking point read without its row, or with another: no
            # transfer (rolled back), and the check fails on it.
            run_txn_statement(cur, "ROLLBACK")
            return {"type": "fail", "error": [0, "wrong-rows"],
                    "wrong_rows": [[a, [list(map(int, r)) for r in ra]], [b, [list(map(int, r)) for r in rb]]]}
        ba, bb = int(ra[0][1]), int(rb[0][1])
        if ba < x:
            run_txn_statement(cur, "ROLLBACK")
            return {"type": "fail", "error": [0, "insufficient"], "read": [ba, bb]}
        run_txn_statement(cur, "UPDATE jepsen.bank SET balance = %d WHERE id = %d" % (ba - x, a))
        run_txn_statement(cur, "UPDATE jepsen.bank SET balance = %d WHERE id = %d" % (bb + x, b))
        cur.execute("COMMIT")
        return {"type": "ok", "read": [ba, bb]}

    def final_ops(self, cluster):
        return [(node, {"f": "read", "mode": mode, "value": None, "final": True})
                for node in cluster.nodes for mode in ("all", "txn")]

    def check(self, ops, out_dir, args):
        bad = []
        reads = 0
        counts = {}
        for op in ops:
            if op.get("process") in ("nemesis", -1):
                continue
            key = "%s %s" % (op["f"], op["type"])
            counts[key] = counts.get(key, 0) + 1
            if op["f"] != "read" or op["type"] != "ok":
                continue
            reads += 1
            balances = op["value"]
            ids = [a for a, _ in balances]
            problems = []
            if sorted(ids) != self.accounts:
                problems.append("accounts %s" % ids)
            s = sum(v for _, v in balances)
            if s != self.total:
                problems.append("total %d (expected %d)" % (s, self.total))
            neg = [[a, v] for a, v in balances if v < 0]
            if neg:
                problems.append("negative %s" % neg)
            if problems:
                bad.append({"index": op["index"], "process": op["process"], "node": op.get("node"),
                            "mode": op.get("mode"), "final": op.get("final", False), "problems": problems,
                            "value": balances})
        wrong_rows = [op for op in ops if op.get("wrong_rows")]
        verdict = {"valid": not bad and not wrong_rows and reads > 0, "reads": reads, "bad_reads": len(bad),
                   "first_bad": bad[:10], "op_counts": counts,
                   "locking_reads_with_wrong_rows": [[op["index"], op["wrong_rows"]] for op in wrong_rows[:10]]}
        if reads == 0:
            verdict["why"] = "no read succeeded"
        lines = ["bank: %d ok reads, %d wrong" % (reads, len(bad))]
        for b in bad[:10]:
            lines.append("  #%d process %s on %s (%s%s): %s" % (b["index"], b["process"], b["node"], b["mode"],
                                                               ", final" if b["final"] else "", "; ".join(b["problems"])))
        if wrong_rows:
            lines.append("  locking point reads answered without their row or with another: %d" % len(wrong_rows))
            for op in wrong_rows[:5]:
                lines.append("    #%d p%s %s: [id asked, rows (id, balance)] %s" % (
                    op["index"], op["process"], op.get("node"), op["wrong_rows"]))
        verdict["report"] = "\n".join(lines) + "\n"
        return verdict

