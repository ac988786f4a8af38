"""The workloads' answer checks catch a wrong answer: against a real shaled,
prepare a workload, change its data behind its back the way a buggy server
would (a lost row, a lost update), and expect WorkloadError from the run or
the final verify. Run: /usr/bin/python3 bench/harness/checks_test.py
--shaled build/src/shaled (ctest bench_checks)."""
import argparse
import os
import socket
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness import ycsb  # noqa: E402
from harness.driver import WorkloadError  # noqa: E402
from harness.systems import Shale  # noqa: E402
from harness.workload import Scale  # noqa: E402

SHALED = None


class ChecksTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="shale-bench-checks-")
        cls.system = Shale(cls.workdir, 64, SHALED)
        cls.system.start()

    @classmethod
    def tearDownClass(cls):
        cls.system.cleanup()

    def workload(self, letter, duration=0.5):
        w = ycsb.Ycsb(Scale(True, duration, 2), letter)
        w.records = 100
        w.prepare(self.system)
        return w

    def sql(self, w, stmt):
        with self.system.connect(w.database()) as c, c.cursor() as cur:
            cur.execute(stmt)

    def test_correct_server_passes(self):
        w = self.workload("d")
        w.run(self.system, 1)
        w.verify(self.system)
        w.cleanup(self.system)

    def test_lost_row_fails_the_count(self):
        w = self.workload("c")
        self.sql(w, "DELETE FROM usertable WHERE YCSB_KEY = '%s'" % ycsb.key_of(5))
        with self.assertRaisesRegex(WorkloadError, "99 rows at the end, expected 100"):
            w.verify(self.system)
        w.cleanup(self.system)

    def test_lost_rows_fail_the_reads(self):
        w = self.workload("c", duration=2.0)
        # The hottest keys of the scrambled zipfian are among these.
        self.sql(w, "DELETE FROM usertable WHERE YCSB_KEY <> '%s'" % ycsb.key_of(0))
        with self.assertRaisesRegex(WorkloadError, "returned 0 rows"):
            w.run(self.system, 1)
        w.cleanup(self.system)

    def test_wrong_field_fails_the_reads(self):
        w = self.workload("c", duration=2.0)
        self.sql(w, "UPDATE usertable SET FIELD3 = 'short'")
        with self.assertRaisesRegex(WorkloadError, "wrong record"):
            w.run(self.system, 1)
        w.cleanup(self.system)


class PortsTest(unittest.TestCase):
    """A port taken between free_port() and shaled's bind: start() moves to
    another port instead of failing the run."""

    def test_start_moves_off_a_taken_port(self):
        workdir = tempfile.mkdtemp(prefix="shale-bench-ports-")
        system = Shale(workdir, 64, SHALED)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
            holder.bind(("127.0.0.1", system.port))  # bound, not listening: connects are refused
            taken = system.port
            try:
                system.start()
                self.assertNotEqual(system.port, taken)
                with system.connect() as c, c.cursor() as cur:
                    cur.execute("SELECT 1")
                    self.assertEqual(cur.fetchone()[0], 1)
            finally:
                system.cleanup()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--shaled", required=True)
    args, rest = ap.parse_known_args()
    SHALED = os.path.abspath(args.shaled)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
