#!/usr/bin/python3
"""The mariadb CLI used interactively, as a person would: driven through a
pseudo-terminal (so it runs its line editor, prompts and tables exactly as
on a terminal), with and without TLS. Each test types statements, waits
for what the CLI prints (the table, "Query OK", the error) and the next
prompt, and ends with \\q.

Run by ctest (tests/CMakeLists.txt) as:
    python3 tests/e2e/test_cli_interactive.py --shaled build/src/shaled
"""
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402

# Terminal control sequences (CSI, character-set selection) and CRs.
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b[=>]|\r")


def prompt(db):
    """The CLI's prompt for database `db` (None: none). It says MySQL for a
    server whose version does not name MariaDB."""
    return rb"(?:MySQL|MariaDB) \[%s\]> " % (re.escape(db.encode()) if db else rb"\(none\)")


class Terminal:
    """A program on a pseudo-terminal: type lines, wait for output."""

    def __init__(self, argv, env):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self.out = b""  # everything printed, terminal escapes and CRs removed
        self.mark = 0   # expect() searches from here

    def _read(self, timeout):
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # the program exited and closed the terminal
            return False
        if not data:
            return False
        self.out += ANSI.sub(b"", data)
        return True

    def expect(self, pattern, timeout=15.0):
        """Waits until `pattern` (a regex, bytes) appears after the last
        match; returns the match. Fails with what was printed so far."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            m = regex.search(self.out, self.mark)
            if m:
                self.mark = m.end()
                return m
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(min(left, 0.5)) and self.proc.poll() is not None):
                m = regex.search(self.out, self.mark)
                if m:
                    self.mark = m.end()
                    return m
                raise AssertionError("did not see %r; the terminal shows:\n%s" %
                                     (pattern, self.out[-3000:].decode(errors="replace")))

    def type(self, line):
        os.write(self.master, line.encode() + b"\r")

    def since(self, start):
        return self.out[start:self.mark].decode(errors="replace")

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        os.close(self.master)


class InteractiveCliTest(NodeTestCase):
    def setUp(self):
        self.mariadb = shutil.which("mariadb")
        if self.mariadb is None:
            self.fail("the mariadb CLI is not installed (scripts/install-deps.sh installs it)")
        self.home = tempfile.mkdtemp(prefix="shale-cli-")
        self.addCleanup(shutil.rmtree, self.home, ignore_errors=True)

    def start(self, *tls):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home,
               "TERM": "xterm", "LANG": "C.UTF-8", "MYSQL_HISTFILE": "/dev/null"}
        argv = [self.mariadb, "--no-defaults", "-h127.0.0.1", "-P%d" % self.node.port, "-uroot",
                *tls]
        term = Terminal(argv, env)
        self.addCleanup(term.close)
        term.expect(rb"Welcome to the MariaDB monitor")
        term.expect(prompt(None))
        return term

    def session(self, db, *tls):
        t = self.start(*tls)
        t.type("CREATE DATABASE %s;" % db)
        t.expect(rb"Query OK, 1 row affected")
        t.expect(prompt(None))
        t.type("USE %s" % db)  # a client command: no ';' needed
        t.expect(rb"Database changed")
        t.expect(prompt(db))
        t.type("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10));")
        t.expect(rb"Query OK, 0 rows affected")
        t.type("INSERT INTO t VALUES (1, 'one'), (2, NULL);")
        # (MySQL adds "Records: 2  Duplicates: 0  Warnings: 0"; Shale's OK
        # packet has no info string for INSERT yet.)
        t.expect(rb"Query OK, 2 rows affected")

        # A statement over two lines: the continuation prompt, then the table.
        t.type("SELECT id, v")
        t.expect(rb"\n\s*-> ")
        start = t.mark
        t.type("FROM t ORDER BY id;")
        t.expect(rb"2 rows in set")
        table = t.since(start)
        self.assertIn("+----+------+", table)
        self.assertIn("| id | v    |", table)
        self.assertIn("|  1 | one  |", table)
        self.assertIn("|  2 | NULL |", table)
        t.expect(prompt(db))

        # A syntax error is shown and the session goes on.
        t.type("SELEC 1;")
        t.expect(rb"ERROR 1064 \(42000\)[^\n]*SELEC")
        t.expect(prompt(db))
        t.type("SELECT COUNT(*) AS n FROM t WHERE v IS NOT NULL;")
        t.expect(rb"\| n +\|")
        t.expect(rb"\|\s+1 \|")
        t.expect(rb"1 row in set")
        t.type("UPDATE t SET v = 'two' WHERE id = 2;")
        t.expect(rb"Query OK, 1 row affected")
        t.expect(rb"Rows matched: 1  Changed: 1  Warnings: 0")

        # The status command reports the connection, TLS included.
        t.type("status")
        m = t.expect(rb"SSL:\s+([^\n]*)\n")
        ssl_line = m.group(1).decode()
        t.expect(prompt(db))
        t.type("DROP DATABASE %s;" % db)
        t.expect(rb"Query OK")
        t.type("\\q")
        t.expect(rb"Bye")
        self.assertEqual(t.proc.wait(timeout=10), 0)
        return ssl_line

    def test_interactive_session_without_tls(self):
        ssl = self.session("cli_plain", "--skip-ssl")
        self.assertEqual(ssl, "Not in use")

    def test_interactive_session_over_tls(self):
        ssl = self.session("cli_tls", "--ssl", "--skip-ssl-verify-server-cert")
        self.assertRegex(ssl, r"^Cipher in use is \S+")

    def test_interactive_timeout_applies_to_the_cli(self):
        # The CLI sets CLIENT_INTERACTIVE, so its session idles up to
        # interactive_timeout; other clients keep wait_timeout.
        admin = self.connect()
        self.addCleanup(admin.close)
        with admin.cursor() as cur:
            cur.execute("SET GLOBAL interactive_timeout = 1234")
        self.addCleanup(admin.cursor().execute, "SET GLOBAL interactive_timeout = 28800")
        t = self.start("--skip-ssl")
        t.type("SELECT @@session.wait_timeout AS w;")
        t.expect(rb"\| w +\|")
        t.expect(rb"\|\s+1234 \|")
        t.type("\\q")
        t.expect(rb"Bye")
        other = self.connect()
        with other.cursor() as cur:
            cur.execute("SELECT @@session.wait_timeout")
            self.assertEqual(cur.fetchone(), (28800,))
        other.close()


if __name__ == "__main__":
    main()
