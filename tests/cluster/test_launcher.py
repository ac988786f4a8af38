"""The local launcher: ./shale up --nodes 3 starts three joined nodes on
consecutive MySQL ports, ./shale status lists them, ./shale down stops them.
Runs the real script with --no-build against the binary under test, with its
run and data directories in a temporary directory."""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_fixture import wait_until  # noqa: E402
from shaled_fixture import FREE_PORT_FLOOR, ephemeral_low, port_bindable  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SHALED = None


def listening(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def free_base(n):
    """A base port with base..base+n-1 and their +1000 cluster ports free,
    below the ephemeral range when there is room (shaled_fixture.free_port
    says why)."""
    import random
    rng = random.Random()
    low = ephemeral_low() or 40000
    top = low - 1000 - n if low - 1000 - n > FREE_PORT_FLOOR + 2000 else 40000
    for _ in range(200):
        base = rng.randrange(FREE_PORT_FLOOR, top)
        if all(port_bindable(base + i) and port_bindable(base + 1000 + i) for i in range(n)):
            return base
    raise RuntimeError("no free port range")


class LauncherTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-launcher-")
        self.env = dict(os.environ,
                        SHALE_BUILD_DIR=os.path.dirname(os.path.dirname(SHALED)),
                        SHALE_RUN_DIR=os.path.join(self.tmp, "run"),
                        SHALE_DATA_DIR=os.path.join(self.tmp, "data"))

    def tearDown(self):
        self.shale("down")
        shutil.rmtree(self.tmp, ignore_errors=True)

    def shale(self, *args, check=False):
        r = subprocess.run([os.path.join(ROOT, "shale")] + list(args), env=self.env,
                           capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            self.fail("shale %s failed (%d):\n%s\n%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
        return r

    def test_up_status_down(self):
        import pymysql
        base = free_base(3)
        self.shale("up", "--nodes", "3", "--port", str(base), "--no-build", check=True)

        def three_everywhere():
            for i in range(3):
                conn = pymysql.connect(host="127.0.0.1", port=base + i, user="root", connect_timeout=3)
                cur = conn.cursor()
                cur.execute("SELECT name, sql_address FROM system.nodes")
                rows = dict(cur.fetchall())
                conn.close()
                if rows != {"node%d" % (j + 1): "127.0.0.1:%d" % (base + j) for j in range(3)}:
                    return False
            return True
        wait_until("three nodes in system.nodes on every node", three_everywhere, 60)

        status = self.shale("status", check=True).stdout
        for i in range(1, 4):
            self.assertIn("node%d: running" % i, status)
        # A second 'up' refuses while nodes run.
        self.assertNotEqual(self.shale("up", "--nodes", "3", "--port", str(base), "--no-build").returncode, 0)

        self.assertIn("stopped", self.shale("down", check=True).stdout)
        r = self.shale("status")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not running", r.stdout)
        for i in range(3):
            self.assertFalse(listening(base + i), "port %d still listening after down" % (base + i))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--shaled", required=True)
    args, rest = parser.parse_known_args()
    SHALED = os.path.abspath(args.shaled)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
