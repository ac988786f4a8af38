#!/usr/bin/python3
"""End-to-end tests with real client libraries that are not Debian's: each
runs a client program against a real shaled and expects it to print "ok".

  - mysql-connector-python (pure Python and C extension): text queries,
    server-side prepared statements, TLS, multi-statements, values near
    max_allowed_packet, user variables, ROW_COUNT()/FOUND_ROWS()
    (tests/clients/python/connector_client.py), run with the interpreter of
    the repo's virtualenv .venv that scripts/install-deps.sh makes.

(go-sql-driver/mysql is in test_protocol.py, GoDriverTest.)
A missing client is a skip on a developer's machine and a failure in CI
(CI=true), where scripts/install-deps.sh must have installed it.

Run by ctest (tests/CMakeLists.txt) as:
    python3 tests/e2e/test_clients.py --shaled build/src/shaled
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_PYTHON = os.path.join(REPO, ".venv", "bin", "python")


def missing_client(test, what):
    """A client that is not installed: a failure in CI, else a skip."""
    if os.environ.get("CI") == "true":
        test.fail(what + " (CI=true: scripts/install-deps.sh must install it)")
    test.skipTest(what + "; run scripts/install-deps.sh")


class ConnectorPythonTest(NodeTestCase):
    # The client checks values up to 1 KiB below this limit and one above it.
    extra_args = ("--max-allowed-packet=4194304",)

    def test_connector_python(self):
        if not os.access(VENV_PYTHON, os.X_OK):
            missing_client(self, "no virtualenv at .venv")
        probe = subprocess.run([VENV_PYTHON, "-c", "import mysql.connector"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            missing_client(self, "mysql-connector-python is not in .venv: " + probe.stderr[-300:])
        script = os.path.join(REPO, "tests", "clients", "python", "connector_client.py")
        run = subprocess.run([VENV_PYTHON, script, "--port", str(self.node.port)],
                             capture_output=True, text=True, timeout=240)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr + self.node.log())
        self.assertEqual(run.stdout.strip().splitlines()[-1:], ["ok"], run.stdout)


if __name__ == "__main__":
    main()
