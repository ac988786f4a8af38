#!/usr/bin/python3
"""Self-test of the Jepsen checkers on histories whose verdict is known:
tiny hand-made ones (valid and invalid) for the register checker
(porcupine, checker/), the list-append checker (elle.py) and the bank
checker, and fixtures/register-stale-after-cas.jsonl, the first 0.3 s of a
real three-node run of 2026-11-29 that porcupine must reject (an UPDATE's
locking read saw a write still in flight; a SELECT begun after it returned
did not -- README.md, "Self-test").

    tests/jepsen/test_checkers.py [--cache-dir DIR] [unittest args]

Needs Go for the register checker (built as run.py builds it; porcupine is
fetched from the Go module proxy on the first build): without Go, or
without the proxy, those tests are skipped -- and fail when CI=true.
"""
import argparse
import os
import shutil
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import append  # noqa: E402
import bank  # noqa: E402
import elle  # noqa: E402
import history as historylib  # noqa: E402
import porcupine  # noqa: E402
import register  # noqa: E402

CACHE_DIR = None
MS = 1000 * 1000


def op(index, process, type_, f, key=None, value=None, start=0, end=0, error=None):
    o = {"index": index, "process": process, "node": "node1", "type": type_, "f": f, "value": value,
         "start": start * MS, "end": end * MS}
    if key is not None:
        o["key"] = key
    if error is not None:
        o["error"] = error
    return o


class History:
    """Numbers operations as they are added."""

    def __init__(self):
        self.ops = []

    def add(self, *args, **kw):
        self.ops.append(op(len(self.ops), *args, **kw))
        return self

    def txn(self, process, type_, mops, start, end):
        return self.add(process, type_, "txn", value=mops, start=start, end=end)


class RegisterCheckerTest(unittest.TestCase):
    """porcupine through checker/ (the Go program run.py builds)."""

    @classmethod
    def setUpClass(cls):
        try:
            porcupine.build(CACHE_DIR, log=lambda m: None)
        except porcupine.CheckerUnavailable as e:
            if os.environ.get("CI") == "true":
                raise
            raise unittest.SkipTest("register checker unavailable: %s" % e)
        cls.out = tempfile.mkdtemp(prefix="shale-jepsen-selftest-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def check(self, ops):
        return porcupine.check(ops, self.out, cache_dir=CACHE_DIR, timeout_s=60, log=lambda m: None)

    def base(self):
        return History().add(-1, "ok", "write", 1, 0, start=0, end=1)

    def test_sequential_valid(self):
        h = (self.base()
             .add(0, "ok", "write", 1, 5, start=10, end=20)
             .add(1, "ok", "read", 1, 5, start=30, end=40)
             .add(0, "ok", "cas", 1, [5, 6], start=50, end=60)
             .add(1, "fail", "cas", 1, [5, 7], start=70, end=80, error=[0, "cas-mismatch"])
             .add(1, "ok", "read", 1, 6, start=90, end=100))
        self.assertIs(self.check(h.ops)["valid"], True)

    def test_concurrent_valid(self):
        # The read overlaps the write: either value is fine.
        h = (self.base()
             .add(0, "ok", "write", 1, 5, start=10, end=50)
             .add(1, "ok", "read", 1, 0, start=20, end=30)
             .add(2, "ok", "read", 1, 5, start=25, end=35)
             .add(1, "ok", "read", 1, 5, start=60, end=70))
        self.assertIs(self.check(h.ops)["valid"], True)

    def test_stale_read_invalid(self):
        h = (self.base()
             .add(0, "ok", "write", 1, 5, start=10, end=20)
             .add(1, "ok", "write", 1, 6, start=30, end=40)
             .add(2, "ok", "read", 1, 5, start=50, end=60))
        v = self.check(h.ops)
        self.assertIs(v["valid"], False)
        self.assertEqual([k["result"] for k in v["keys"]], ["illegal"])
        self.assertTrue(os.path.exists(v["keys"][0]["visualization"]))

    def test_failed_cas_then_old_value_invalid(self):
        # The shape of the fixture: a CAS from 5 finds something else, a
        # read begun after it returned reads 5, which nobody wrote again.
        h = (self.base()
             .add(0, "ok", "write", 1, 5, start=10, end=20)
             .add(1, "ok", "write", 1, 6, start=25, end=200)
             .add(0, "fail", "cas", 1, [5, 7], start=30, end=40, error=[0, "cas-mismatch"])
             .add(2, "ok", "read", 1, 5, start=50, end=60))
        self.assertIs(self.check(h.ops)["valid"], False)

    def test_unknown_write_may_or_may_not_happen(self):
        h = (self.base()
             .add(0, "info", "write", 1, 5, start=10, end=20, error=[2013, "lost"])
             .add(1, "ok", "read", 1, 0, start=30, end=40)
             .add(1, "ok", "read", 1, 5, start=50, end=60))
        self.assertIs(self.check(h.ops)["valid"], True)
        # ... but once seen it stays (unique values).
        h.add(1, "ok", "read", 1, 0, start=70, end=80)
        self.assertIs(self.check(h.ops)["valid"], False)

    def test_failed_write_never_happens(self):
        h = (self.base()
             .add(0, "fail", "write", 1, 5, start=10, end=20, error=[1213, "deadlock"])
             .add(1, "ok", "read", 1, 5, start=30, end=40))
        self.assertIs(self.check(h.ops)["valid"], False)

    def test_keys_are_independent(self):
        h = (self.base().add(-1, "ok", "write", 2, 0, start=0, end=1)
             .add(0, "ok", "write", 1, 5, start=10, end=20)
             .add(1, "ok", "read", 2, 0, start=30, end=40))
        v = self.check(h.ops)
        self.assertIs(v["valid"], True)
        self.assertEqual(len(v["keys"]), 2)

    def test_fixture_from_a_real_run_is_invalid(self):
        ops = historylib.load(os.path.join(HERE, "fixtures", "register-stale-after-cas.jsonl"))
        v = self.check(ops)
        self.assertIs(v["valid"], False)
        self.assertIn("illegal", [k["result"] for k in v["keys"]])
        # The witnesses a person reads find the same thing.
        self.assertTrue(register.witnesses(ops)["stale-after-cas"])

    def test_register_workload_check_reports_witnesses(self):
        h = (self.base()
             .add(0, "ok", "write", 1, 5, start=10, end=20)
             .add(1, "ok", "write", 1, 6, start=30, end=40)
             .add(2, "ok", "read", 1, 5, start=50, end=60))
        args = types.SimpleNamespace(keys=1, cache_dir=CACHE_DIR, checker_timeout=60)
        v = register.Register(args).check(h.ops, self.out, args)
        self.assertIs(v["valid"], False)
        self.assertEqual(v["witness_counts"]["stale-read"], 1)


def t(mops):
    return [list(m) for m in mops]


class AppendCheckerTest(unittest.TestCase):
    """elle.py."""

    def check(self, h):
        return elle.check(h.ops)

    def assertAnomaly(self, result, name):
        self.assertIn(name, result["counts"], result["report"])

    def test_kept_failing_history_is_invalid(self):
        # A real run (append under pauses): a snapshot that gave up waiting
        # read below the append its client had just committed.
        ops = historylib.load(os.path.join(HERE, "fixtures", "append-pause-stale-snapshot-after-wait.jsonl"))
        r = elle.check(ops)
        self.assertFalse(r["valid"])
        self.assertAnomaly(r, "stale-read")

    def test_serial_history_is_valid(self):
        h = (History()
             .txn(0, "ok", t([["append", 1, 1], ["r", 1, [1]]]), 0, 10)
             .txn(1, "ok", t([["r", 1, [1]], ["append", 1, 2], ["append", 2, 3]]), 20, 30)
             .txn(0, "ok", t([["r", 1, [1, 2]], ["r", 2, [3]]]), 40, 50)
             .txn(1, "fail", t([["append", 2, 4]]), 60, 70)
             .txn(0, "ok", t([["r", 2, [3]]]), 80, 90))
        r = self.check(h)
        self.assertTrue(r["valid"], r["report"])
        self.assertEqual(r["counts"], {})

    def test_key_only_ever_read_empty(self):
        h = (History()
             .txn(0, "ok", t([["r", 1, []]]), 0, 10)
             .txn(1, "ok", t([["r", 1, []], ["r", 2, [1]]]), 20, 30)
             .txn(2, "ok", t([["append", 2, 1]]), 0, 5))
        r = self.check(h)
        self.assertTrue(r["valid"], r["report"])

    def test_concurrent_snapshot_read_is_valid(self):
        # A read-only transaction overlapping a writer may miss it.
        h = (History()
             .txn(0, "ok", t([["append", 1, 1]]), 0, 100)
             .txn(1, "ok", t([["r", 1, []]]), 10, 20)
             .txn(1, "ok", t([["r", 1, [1]]]), 110, 120))
        r = self.check(h)
        self.assertTrue(r["valid"], r["report"])

    def test_unknown_transaction_seen_is_committed(self):
        h = (History()
             .txn(0, "info", t([["append", 1, 1]]), 0, 10)
             .txn(1, "ok", t([["r", 1, [1]]]), 20, 30))
        r = self.check(h)
        self.assertTrue(r["valid"], r["report"])
        self.assertEqual(r["committed"], 2)

    def test_g0(self):
        h = (History()
             .txn(0, "ok", t([["append", 1, 1], ["append", 2, 2]]), 0, 100)
             .txn(1, "ok", t([["append", 1, 3], ["append", 2, 4]]), 0, 100)
             .txn(2, "ok", t([["r", 1, [1, 3]], ["r", 2, [4, 2]]]), 200, 300))
        r = self.check(h)
        self.assertFalse(r["valid"])
        self.assertAnomaly(r, "G0")

    def test_g1a_aborted_read(self):
        h = (History()
             .txn(0, "fail", t([["append", 1, 1]]), 0, 10)
             .txn(1, "ok", t([["r", 1, [1]]]), 20, 30))
        r = self.check(h)
        self.assertFalse(r["valid"])
        self.assertAnomaly(r, "G1a")

    def test_g1b_intermediate_read(self):
        h = (History()
             .txn(0, "ok", t([["append", 1, 1], ["append", 1, 2]]), 0, 100)
             .txn(1, "ok", t([["r", 1, [1]]]), 10, 20))
        r = self.check(h)
        self.assertFalse(r["valid"])
        self.assertAnomaly(r, "G1b")

    def test_g1c_circular_information_flow(self):
        h = (History()
             .txn(0, "ok", t([["append", 1, 1], ["r", 2, [2]]]), 0, 100)
             .txn(1, "ok", t([["append", 2, 2], ["r", 1, [1]]]), 0, 100))
        r = self.check(h)
        self.assertFalse(r["valid"])
        self.assertAnomaly(r, "G1c")

    def test_g_single_read_skew(self):
        # T0 reads key 1 before T1's append, T1's append to key 2 comes
        # before T0's: InnoDB's "write reads the newest row", not SI.
        h = (History()
             .txn(0, "ok", t([["r", 1, []], ["append", 2, 1]]), 0, 100)
             .txn(1, "ok", t([["append", 1, 2], ["append", 2, 3]]), 0, 100)
             .txn(2, "ok", t([["r", 1, [2]], ["r", 2, [3, 1]]]), 200, 300))
        r = self.check(h)
        self.assertFalse(r["valid"])
        self.assertAnomaly(r, "G-single")
        self.assertNotIn("G2", r["counts"])

    def test_g2_write_skew_is_listed_not_failed(self):
        h = (History()
             .txn(0, "ok", t([["r", 1, []], ["append", 2, 1]]), 0, 100)
             .txn(1, "ok", t([["r", 2, []], ["append", 1, 2]]), 0, 100)
             .txn(2, "ok", t([["r", 1, [2]], ["r", 2, [1]]]), 200, 300))
        r = self.check(h)
        self.assertAnomaly(r, "G2")
        self.assertTrue(r["valid"], r["report"])
        self.assertEqual(r["allowed"], ["G2"])

    def test_lost_append(self):
        h = (History()
             .txn(0, "ok", t([["append", 1, 1]]), 0, 10)
             .txn(1, "ok", t([["append", 1, 2]]), 20, 30)
             .txn(2, "ok", t([["r", 1, [2]]]), 40, 50))
        r = self.check(h)
        self.assertFalse(r["valid"])
        self.assertAnomaly(r, "lost-append")

    def test_stale_read_and_realtime_cycle(self):
        h = (History()
             .txn(0, "ok", t([["append", 1, 1]]), 0, 10)
             .txn(1, "ok", t([["r", 1, []]]), 20, 30)
             .txn(2, "ok", t([["r", 1, [1]]]), 40, 50))
        r = self.check(h)
        self.assertFalse(r["valid"])
        self.assertAnomaly(r, "stale-read")
        self.assertAnomaly(r, "G-single-realtime")
        self.assertNotIn("G-single", r["counts"])

    def test_g0_realtime(self):
        # T1 began after T0 was acknowledged, yet its append comes first.
        h = (History()
             .txn(0, "ok", t([["append", 1, 1]]), 0, 10)
             .txn(1, "ok", t([["append", 1, 2]]), 20, 30)
             .txn(2, "ok", t([["r", 1, [2, 1]]]), 40, 50))
        r = self.check(h)
        self.assertFalse(r["valid"])
        self.assertAnomaly(r, "G0-realtime")
        self.assertNotIn("G0", r["counts"])

    def test_incompatible_order(self):
        h = (History()
             .txn(0, "ok", t([["append", 1, 1]]), 0, 100)
             .txn(1, "ok", t([["append", 1, 2]]), 0, 100)
             .txn(2, "ok", t([["r", 1, [1, 2]]]), 200, 210)
             .txn(3, "ok", t([["r", 1, [2, 1]]]), 200, 210))
        r = self.check(h)
        self.assertFalse(r["valid"])
        self.assertAnomaly(r, "incompatible-order")

    def test_internal_inconsistency(self):
        h = (History()
             .txn(0, "ok", t([["append", 1, 1]]), 0, 10)
             .txn(1, "ok", t([["r", 1, [1]], ["append", 1, 2], ["r", 1, [1]]]), 20, 30))
        r = self.check(h)
        self.assertFalse(r["valid"])
        self.assertAnomaly(r, "internal")

    def test_duplicate_and_garbage(self):
        h = (History()
             .txn(0, "ok", t([["append", 1, 1]]), 0, 10)
             .txn(1, "ok", t([["r", 1, [1, 1]]]), 20, 30)
             .txn(2, "ok", t([["r", 2, [9]]]), 20, 30))
        r = self.check(h)
        self.assertAnomaly(r, "duplicate-elements")
        self.assertAnomaly(r, "garbage-read")

    def test_plain_reads_option_allows_g_single(self):
        h = (History()
             .txn(0, "ok", t([["r", 1, []], ["append", 2, 1]]), 0, 100)
             .txn(1, "ok", t([["append", 1, 2], ["append", 2, 3]]), 0, 100)
             .txn(2, "ok", t([["r", 1, [2]], ["r", 2, [3, 1]]]), 200, 300))
        args = types.SimpleNamespace(keys=2, max_writes_per_key=16, duration=1, plain_reads=True)
        r = append.Append(args).check(h.ops, None, args)
        self.assertTrue(r["valid"], r["report"])
        self.assertIn("G-single", r["allowed"])


    def test_wrong_row_fails(self):
        h = (History()
             .txn(0, "ok", t([["append", 1, 1]]), 0, 10)
             .txn(1, "ok", t([["r", 2, None]]), 20, 30))
        h.ops[1]["wrong_rows"] = [[2, [[1, "1"]]]]
        args = types.SimpleNamespace(keys=2, max_writes_per_key=16, duration=1, plain_reads=False)
        r = append.Append(args).check(h.ops, None, args)
        self.assertFalse(r["valid"])
        self.assertEqual(r["counts"]["wrong-row"], 1)


class BankCheckerTest(unittest.TestCase):
    def test_totals(self):
        args = types.SimpleNamespace(accounts=2)
        b = bank.Bank(args)
        good = op(0, 0, "ok", "read", value=[[1, 150], [2, 50]])
        bad_total = op(1, 0, "ok", "read", value=[[1, 150], [2, 60]])
        negative = op(2, 0, "ok", "read", value=[[1, 210], [2, -10]])
        missing = op(3, 0, "ok", "read", value=[[1, 200]])
        unknown = op(4, 0, "info", "read", value=None)
        self.assertTrue(b.check([good, unknown], None, args)["valid"])
        for wrong in (bad_total, negative, missing):
            v = b.check([good, wrong], None, args)
            self.assertFalse(v["valid"], wrong)
            self.assertEqual(v["bad_reads"], 1)
        self.assertFalse(b.check([unknown], None, args)["valid"], "no read at all proves nothing")
        wrong = op(5, 0, "fail", "transfer", value={"from": 1, "to": 2, "amount": 1}, error=[0, "wrong-rows"])
        wrong["wrong_rows"] = [[1, [[2, 50]]], [2, [[2, 50]]]]
        v = b.check([good, wrong], None, args)
        self.assertFalse(v["valid"])
        self.assertIn("another", v["report"])


class ClassifyTest(unittest.TestCase):
    def test_definite_and_unknown_errors(self):
        import pymysql
        self.assertEqual(historylib.classify(pymysql.err.OperationalError(1213, "deadlock"))[0], "fail")
        self.assertEqual(historylib.classify(pymysql.err.OperationalError(1205, "lock wait"))[0], "fail")
        self.assertEqual(historylib.classify(pymysql.err.OperationalError(1047, "retry"))[0], "fail")
        self.assertEqual(historylib.classify(pymysql.err.OperationalError(1180, "during COMMIT"))[:2],
                         ("info", [1180, "during COMMIT"]))
        t_, _, broken = historylib.classify(pymysql.err.OperationalError(2013, "Lost connection"))
        self.assertEqual((t_, broken), ("info", True))
        self.assertEqual(historylib.classify(OSError("reset"))[::2], ("info", True))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache-dir", default=None)
    args, rest = parser.parse_known_args()
    CACHE_DIR = args.cache_dir
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
