"""The history of a run and how a client error becomes an outcome.

A history is a JSON-lines file, one completed operation per line:

    {"index": 17, "process": 3, "node": "node1", "type": "ok", "f": "write",
     "key": 2, "value": 41, "start": 81234567890, "end": 81234999999}

- process: the logical client; after an `info` outcome the client goes on
  as a new process (process + number of clients), as in Jepsen, since its
  earlier operation may still be running.
- type: `ok` (happened, with this result), `fail` (certainly did not
  happen), `info` (may or may not have happened, now or later: a checker
  treats its end as +infinity).
- f, key, value: the workload's operation (README.md lists them per
  workload). `error` holds [code, message] of a failed operation.
- start, end: time.monotonic_ns() in the runner when the operation was
  invoked and when its outcome was known.
- process "nemesis" lines record faults (f: kill, start, pause, resume,
  partition, heal) and are ignored by the checkers.
"""
import json
import threading
import time

# Errors after which the server guarantees nothing of the statement or
# transaction was written (docs/transactions.md):
# - 1205 lock wait timeout: the statement is rolled back; at COMMIT in a
#   cluster ("row locks ... are gone") the apply was refused, nothing
#   prepared can be applied;
# - 1213 deadlock: the whole transaction is rolled back;
# - 1047 retryable cluster error: "nothing it wrote was committed (an unknown
#   commit outcome is 1180, never retried)" (src/exec/session_retry.cc);
# - 1412 table definition changed: the commit check refused it.
# 1180 "Got error during COMMIT" is the unknown outcome; a lost connection
# or a timeout is unknown too; anything else is treated as unknown (info):
# it is never wrong to say "may have happened".
DEFINITE_ERRORS = {1205, 1213, 1047, 1412}
UNKNOWN_OUTCOME = 1180


def error_code(exc):
    args = getattr(exc, "args", ())
    if args and isinstance(args[0], int):
        return args[0]
    return None


def classify(exc):
    """(type, [code, message], connection_broken) for an exception raised
    while an operation ran: type is "fail" (certainly not applied) or
    "info" (unknown)."""
    code = error_code(exc)
    msg = str(exc.args[1]) if len(getattr(exc, "args", ())) > 1 else repr(exc)
    if code in DEFINITE_ERRORS:
        return "fail", [code, msg], False
    if code == 0:
        # PyMySQL's InterfaceError(0, ''): the connection was closed already
        # (by an earlier error), so nothing was sent. Reconnect: kept, the
        # client spun on it, millions of operations a minute.
        return "fail", [code, msg], True
    if code is not None and code < 2000:
        # A server error: the connection still works.
        return "info", [code, msg], False
    # 2013 lost connection (also a read timeout), 2006 server gone, socket
    # errors: the statement may have run, the connection is gone.
    return "info", [code, msg], True


class TxnAborted(Exception):
    """A statement of a multi-statement transaction failed before COMMIT was
    sent: writes are buffered until COMMIT, so nothing was written (`fail`),
    whatever the error. `cause` is the original exception."""

    def __init__(self, cause):
        super().__init__(str(cause))
        self.cause = cause


def run_txn_statement(cur, sql):
    """Runs one statement of an open transaction (before COMMIT); on an error
    rolls back (if the connection still works) and raises TxnAborted."""
    try:
        cur.execute(sql)
        return cur.fetchall()
    except Exception as e:  # noqa: BLE001 - pymysql and socket errors alike
        try:
            cur.execute("ROLLBACK")
        except Exception:  # noqa: BLE001 - the connection may be gone
            pass
        raise TxnAborted(e) from e


class History:
    """Appends operations to a JSON-lines file (flushed per line, so a run
    killed half way leaves what it had) and keeps them in memory."""

    def __init__(self, path):
        self.path = path
        self.file = open(path, "w")
        self.lock = threading.Lock()
        self.ops = []

    def add(self, op):
        with self.lock:
            op["index"] = len(self.ops)
            self.ops.append(op)
            self.file.write(json.dumps(op, sort_keys=True) + "\n")
            self.file.flush()
        return op

    def nemesis(self, f, value=None, start=None):
        now = time.monotonic_ns()
        return self.add({"process": "nemesis", "type": "info", "f": f, "value": value,
                         "start": start if start is not None else now, "end": now})

    def close(self):
        with self.lock:
            self.file.close()


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def client_ops(ops):
    return [op for op in ops if op.get("process") != "nemesis"]
