#!/usr/bin/python3
"""End-to-end tests of users and privileges against a real shaled:
CREATE/ALTER/DROP USER, GRANT/REVOKE at *.*, db.* and db.table, the checks
on every statement with MySQL's error codes, SHOW GRANTS, host matching,
durability across a restart, and authentication of stored accounts with
mysql_native_password and caching_sha2_password (fast path, full
authentication over TLS, and the RSA public-key exchange without TLS).

Run by ctest (tests/CMakeLists.txt) as:
    python3 tests/e2e/test_accounts.py --shaled build/src/shaled
"""
import hashlib
import os
import socket
import struct
import subprocess
import sys
import unittest

import pymysql

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402
from test_protocol import PacketFraming  # noqa: E402

PROTOCOL_41 = 1 << 9
SECURE_CONNECTION = 1 << 15
PLUGIN_AUTH = 1 << 19
LONG_PASSWORD = 1


def sha256(b):
    return hashlib.sha256(b).digest()


def xor(a, b):
    return bytes(x ^ b[i % len(b)] for i, x in enumerate(a))


class Wire(PacketFraming):
    """The connection phase by hand, to see each caching_sha2_password step."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        self.seq = 0
        g = self.read()
        assert g[0] == 10
        end = g.index(b"\0", 1)
        p = end + 1 + 4
        part1 = g[p:p + 8]
        p += 8 + 1 + 2 + 1 + 2 + 2
        auth_len = g[p]
        p += 1 + 10
        part2 = g[p:p + max(13, auth_len - 8) - 1]
        self.scramble = part1 + part2
        assert len(self.scramble) == 20, self.scramble

    def login(self, user, token, plugin):
        caps = LONG_PASSWORD | PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH
        self.write(struct.pack("<IIB", caps, 1 << 24, 45) + b"\0" * 23 + user.encode() + b"\0" +
                   bytes([len(token)]) + token + plugin.encode() + b"\0")
        return self.read()

    def close(self):
        self.sock.close()


class AccountsTest(NodeTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        conn = pymysql.connect(host="127.0.0.1", port=cls.node.port, user="root", autocommit=True)
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE p")
            cur.execute("CREATE TABLE p.t (id INT PRIMARY KEY, v INT)")
            cur.execute("CREATE TABLE p.u (id INT PRIMARY KEY, v INT)")
            cur.execute("INSERT INTO p.t VALUES (1, 10), (2, 20)")
            cur.execute("INSERT INTO p.u VALUES (1, 100)")
            cur.execute("CREATE DATABASE q")
        conn.close()

    def root(self):
        return self.connect()

    def login(self, user, password="", db=None, **kw):
        return pymysql.connect(host="127.0.0.1", port=self.node.port, user=user, password=password,
                               database=db, autocommit=True, **kw)

    def assertLoginFails(self, code, user, password="", db=None, **kw):
        with self.assertRaises(pymysql.MySQLError) as ctx:
            self.login(user, password, db, **kw).close()
        self.assertEqual(ctx.exception.args[0], code, str(ctx.exception))

    def run_root(self, *sqls):
        conn = self.root()
        with conn.cursor() as cur:
            for sql in sqls:
                cur.execute(sql)
        conn.close()

    def rows(self, conn, sql):
        with conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()

    def test_create_login_alter_drop(self):
        self.run_root("CREATE USER 'alice'@'%' IDENTIFIED BY 'pw1'")
        conn = self.login("alice", "pw1")
        self.assertEqual(self.rows(conn, "SELECT CURRENT_USER()")[0][0].split("@")[0], "alice")
        conn.close()
        self.assertLoginFails(1045, "alice", "wrong")
        self.assertLoginFails(1045, "alice", "")
        self.assertLoginFails(1045, "nobody", "pw1")
        root = self.root()
        with root.cursor() as cur:
            self.assertSqlError(cur, "CREATE USER alice IDENTIFIED BY 'x'", 1396)
            cur.execute("CREATE USER IF NOT EXISTS alice IDENTIFIED BY 'x'")
            cur.execute("SHOW WARNINGS")
            self.assertEqual(cur.fetchall()[0][1], 3163)
            # All or nothing: one existing account fails the whole statement.
            self.assertSqlError(cur, "CREATE USER newbie, alice", 1396)
            self.assertSqlError(cur, "DROP USER newbie", 1396)
            self.assertSqlError(cur, "CREATE USER root IDENTIFIED BY 'x'", 1396)
            self.assertSqlError(cur, "CREATE USER z IDENTIFIED WITH sha256_password BY 'x'", 1524)
            cur.execute("ALTER USER alice IDENTIFIED BY 'pw2'")
        root.close()
        self.assertLoginFails(1045, "alice", "pw1")
        conn = self.login("alice", "pw2")
        # Changing one's own password needs no privilege.
        with conn.cursor() as cur:
            cur.execute("ALTER USER CURRENT_USER() IDENTIFIED BY 'pw3'")
            self.assertSqlError(cur, "ALTER USER root IDENTIFIED BY 'x'", 1227)
            self.assertSqlError(cur, "CREATE USER mallory", 1227)
            self.assertSqlError(cur, "DROP USER alice", 1227)
        conn.close()
        self.login("alice", "pw3").close()
        self.run_root("DROP USER alice")
        self.assertLoginFails(1045, "alice", "pw3")
        root = self.root()
        with root.cursor() as cur:
            self.assertSqlError(cur, "DROP USER alice", 1396)
            cur.execute("DROP USER IF EXISTS alice")
        root.close()

    def test_privileges_checked_on_every_statement(self):
        self.run_root("CREATE USER bob IDENTIFIED BY 'b'")
        self.assertLoginFails(1044, "bob", "b", db="p")
        bob = self.login("bob", "b")
        cur = bob.cursor()
        self.assertSqlError(cur, "SELECT * FROM p.t", 1142)
        # A missing table is not revealed to a user without privileges.
        self.assertSqlError(cur, "SELECT * FROM p.missing", 1142)
        self.assertSqlError(cur, "USE p", 1044)
        self.assertSqlError(cur, "SHOW TABLES FROM p", 1044)
        self.assertSqlError(cur, "CREATE DATABASE bobs", 1044)
        self.assertSqlError(cur, "DROP DATABASE p", 1044)
        self.assertSqlError(cur, "SET GLOBAL wait_timeout = 5", 1227)
        self.assertEqual(self.rows(bob, "SHOW DATABASES"), (("information_schema",),))

        self.run_root("GRANT SELECT ON p.t TO bob")
        # Grants apply at once to connected sessions.
        self.assertEqual(self.rows(bob, "SELECT v FROM p.t ORDER BY id"), ((10,), (20,)))
        self.assertSqlError(cur, "SELECT * FROM p.u", 1142)
        self.assertSqlError(cur, "SELECT * FROM p.t JOIN p.u ON p.t.id = p.u.id", 1142)
        # Tables read anywhere in a statement need SELECT.
        self.assertSqlError(cur, "SELECT * FROM p.t WHERE id IN (SELECT id FROM p.u)", 1142)
        self.assertSqlError(cur, "SELECT * FROM (SELECT id FROM p.u) d", 1142)
        self.assertSqlError(cur, "SELECT id FROM p.t UNION SELECT id FROM p.u", 1142)
        self.assertSqlError(cur, "CREATE INDEX iv ON p.t (v)", 1142)
        self.assertSqlError(cur, "INSERT INTO p.t VALUES (3, 30)", 1142)
        self.assertSqlError(cur, "DELETE FROM p.t", 1142)
        self.assertSqlError(cur, "CREATE TABLE p.x (a INT)", 1142)
        self.assertSqlError(cur, "DROP TABLE p.t", 1142)
        cur.execute("USE p")
        self.assertEqual(self.rows(bob, "SHOW TABLES"), (("t",),))  # only what bob may see
        self.assertEqual(self.rows(bob, "SHOW DATABASES"), (("information_schema",), ("p",)))
        self.login("bob", "b", db="p").close()

        self.run_root("GRANT INSERT, UPDATE ON p.* TO bob")
        cur.execute("INSERT INTO u VALUES (2, 200)")
        # UPDATE with a WHERE clause reads the table: it needs SELECT too.
        self.assertSqlError(cur, "UPDATE u SET v = 1 WHERE id = 1", 1142)
        cur.execute("UPDATE t SET v = 11 WHERE id = 1")
        cur.execute("UPDATE u SET v = 7")
        self.assertEqual(self.rows(bob, "SELECT v FROM t WHERE id = 1"), ((11,),))
        # Statements that delete, drop or move rows need more than INSERT/UPDATE.
        self.assertSqlError(cur, "REPLACE INTO u VALUES (2, 201)", 1142)
        self.assertSqlError(cur, "TRUNCATE TABLE u", 1142)
        self.assertSqlError(cur, "RENAME TABLE u TO u2", 1142)
        self.assertSqlError(cur, "ALTER TABLE u ADD COLUMN w INT", 1142)
        self.assertSqlError(cur, "ALTER TABLE u RENAME TO u2", 1142)
        self.assertSqlError(cur, "CREATE TABLE p.c LIKE p.u", 1142)
        self.assertSqlError(cur, "EXPLAIN SELECT * FROM p.u", 1142)
        self.assertEqual(self.rows(bob, "SELECT COUNT(*) FROM t"), ((2,),))

        self.run_root("REVOKE SELECT ON p.t FROM bob")
        self.assertSqlError(cur, "SELECT * FROM p.t", 1142)
        self.run_root("GRANT ALL ON p.* TO bob")
        cur.execute("CREATE TABLE p.bobs (a INT)")
        cur.execute("DROP TABLE p.bobs")
        self.assertSqlError(cur, "CREATE TABLE q.bobs (a INT)", 1142)
        cur.execute("SELECT COUNT(*) FROM p.u")
        self.assertEqual(cur.fetchall(), ((2,),))
        self.run_root("REVOKE ALL PRIVILEGES, GRANT OPTION FROM bob")
        self.assertSqlError(cur, "SELECT * FROM p.u", 1142)
        bob.close()

    def test_show_grants(self):
        self.run_root("CREATE USER 'gina'@'localhost' IDENTIFIED BY 'g'",
                      "GRANT SELECT, INSERT ON p.* TO 'gina'@'localhost'",
                      "GRANT UPDATE ON p.t TO 'gina'@'localhost' WITH GRANT OPTION",
                      "GRANT PROCESS ON *.* TO 'gina'@'localhost'")
        root = self.root()
        self.assertEqual(self.rows(root, "SHOW GRANTS FOR 'gina'@'localhost'"), (
            ("GRANT PROCESS ON *.* TO `gina`@`localhost`",),
            ("GRANT SELECT, INSERT ON `p`.* TO `gina`@`localhost`",),
            ("GRANT UPDATE ON `p`.`t` TO `gina`@`localhost` WITH GRANT OPTION",)))
        with root.cursor() as cur:
            cur.execute("SHOW GRANTS")
            self.assertEqual(cur.fetchall(),
                             (("GRANT ALL PRIVILEGES ON *.* TO `root`@`%` WITH GRANT OPTION",),))
            self.assertEqual(cur.description[0][0], "Grants for root@%")
            self.assertSqlError(cur, "SHOW GRANTS FOR nobody", 1141)
        root.close()
        gina = self.login("gina", "g")
        self.assertEqual(len(self.rows(gina, "SHOW GRANTS")), 3)
        self.assertEqual(len(self.rows(gina, "SHOW GRANTS FOR CURRENT_USER")), 3)
        with gina.cursor() as cur:
            self.assertSqlError(cur, "SHOW GRANTS FOR root", 1044)
        gina.close()

    def test_grant_option_and_grant_errors(self):
        self.run_root("CREATE USER carol IDENTIFIED BY 'c'", "CREATE USER dave IDENTIFIED BY 'd'",
                      "GRANT SELECT ON p.* TO carol WITH GRANT OPTION")
        carol = self.login("carol", "c")
        with carol.cursor() as cur:
            cur.execute("GRANT SELECT ON p.* TO dave")
            self.assertSqlError(cur, "GRANT INSERT ON p.* TO dave", 1044)
            self.assertSqlError(cur, "GRANT SELECT ON q.* TO dave", 1044)
            self.assertSqlError(cur, "GRANT SELECT ON *.* TO dave", 1045)
            cur.execute("GRANT SELECT ON p.t TO dave")
            self.assertSqlError(cur, "GRANT SELECT ON p.t TO nobody", 1410)
        carol.close()
        dave = self.login("dave", "d")
        self.assertEqual(len(self.rows(dave, "SELECT * FROM p.t")), 2)
        with dave.cursor() as cur:
            self.assertSqlError(cur, "GRANT SELECT ON p.t TO carol", 1142)
        dave.close()
        root = self.root()
        with root.cursor() as cur:
            self.assertSqlError(cur, "GRANT SUPER ON p.* TO dave", 1221)
            self.assertSqlError(cur, "GRANT SELECT ON p.nosuch TO dave", 1146)
            self.assertSqlError(cur, "REVOKE SELECT ON q.* FROM dave", 1141)
            self.assertSqlError(cur, "REVOKE SELECT ON p.u FROM dave", 1147)
            self.assertSqlError(cur, "GRANT SELECT ON p.* TO nobody", 1410)
            self.assertSqlError(cur, "GRANT SELECT ON t TO dave", 1046)
            cur.execute("REVOKE SELECT ON p.* FROM dave")
            cur.execute("REVOKE SELECT ON p.t FROM dave")
        root.close()
        dave = self.login("dave", "d")
        with dave.cursor() as cur:
            self.assertSqlError(cur, "SELECT * FROM p.t", 1142)
        dave.close()

    def test_host_matching(self):
        self.run_root("CREATE USER 'erin'@'10.%' IDENTIFIED BY 'far'")
        self.assertLoginFails(1045, "erin", "far")
        self.run_root("CREATE USER 'erin'@'127.0.0.%' IDENTIFIED BY 'near'")
        self.login("erin", "near").close()
        self.assertLoginFails(1045, "erin", "far")
        # 'localhost' matches loopback and is more specific than a pattern.
        self.run_root("CREATE USER 'erin'@'localhost' IDENTIFIED BY 'local'")
        self.login("erin", "local").close()
        self.assertLoginFails(1045, "erin", "near")
        conn = self.login("erin", "local")
        self.assertEqual(self.rows(conn, "SHOW GRANTS")[0][0], "GRANT USAGE ON *.* TO `erin`@`localhost`")
        conn.close()

    def test_accounts_survive_restart(self):
        self.run_root("CREATE USER hank IDENTIFIED BY 'h'", "GRANT SELECT ON p.t TO hank")
        self.node.stop()
        self.node.start()
        hank = self.login("hank", "h")
        self.assertEqual(len(self.rows(hank, "SELECT * FROM p.t")), 2)
        self.assertEqual(self.rows(hank, "SHOW GRANTS")[1][0], "GRANT SELECT ON `p`.`t` TO `hank`@`%`")
        hank.close()

    def test_mariadb_cli_as_a_user(self):
        self.run_root("CREATE USER ivy IDENTIFIED BY 'i'", "GRANT SELECT ON p.* TO ivy")
        base = ["mariadb", "-h127.0.0.1", "-P%d" % self.node.port, "--batch", "--skip-column-names"]
        p = subprocess.run(base + ["-uivy", "-pi", "-e", "SELECT COUNT(*) FROM p.t"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "2"), p.stderr)
        p = subprocess.run(base + ["-uivy", "-pi", "-e", "DELETE FROM p.t"],
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("ERROR 1142 (42000)", p.stderr)


class CachingSha2Test(NodeTestCase):
    """caching_sha2_password: full authentication fills the cache, later
    logins take the fast path; a restart empties the cache."""

    PASSWORD = "sha-secret"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        conn = pymysql.connect(host="127.0.0.1", port=cls.node.port, user="root", autocommit=True)
        with conn.cursor() as cur:
            cur.execute("CREATE USER sha IDENTIFIED WITH caching_sha2_password BY '%s'" % cls.PASSWORD)
            cur.execute("CREATE USER nopw IDENTIFIED WITH caching_sha2_password")
        conn.close()

    def restart(self):
        self.node.stop()
        self.node.start()

    def token(self, scramble, password=None):
        pw = (password or self.PASSWORD).encode()
        return xor(sha256(pw), sha256(sha256(sha256(pw)) + scramble))

    def test_rsa_exchange_then_fast_path_by_hand(self):
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding
        self.restart()
        w = Wire(self.node.port)
        p = w.login("sha", self.token(w.scramble), "caching_sha2_password")
        self.assertEqual(p, b"\x01\x04")  # perform full authentication
        w.write(b"\x02")                   # request the public key
        p = w.read()
        self.assertEqual(p[0], 1)
        key = serialization.load_pem_public_key(p[1:])
        secret = xor(self.PASSWORD.encode() + b"\0", w.scramble)
        w.write(key.encrypt(secret, padding.OAEP(mgf=padding.MGF1(hashes.SHA1()),
                                                 algorithm=hashes.SHA1(), label=None)))
        self.assertEqual(w.read()[0], 0)  # OK
        w.close()
        # Cached now: the fast path answers 0x03 then OK.
        w = Wire(self.node.port)
        self.assertEqual(w.login("sha", self.token(w.scramble), "caching_sha2_password"), b"\x01\x03")
        self.assertEqual(w.read()[0], 0)
        w.close()
        # An answer that does not match the cache falls back to full
        # authentication (as in MySQL), where a wrong password is refused.
        w = Wire(self.node.port)
        p = w.login("sha", self.token(w.scramble, "wrong"), "caching_sha2_password")
        self.assertEqual(p, b"\x01\x04")
        w.write(b"\x02")
        key = serialization.load_pem_public_key(w.read()[1:])
        w.write(key.encrypt(xor(b"wrong\0", w.scramble),
                            padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(),
                                         label=None)))
        p = w.read()
        self.assertEqual((p[0], struct.unpack("<H", p[1:3])[0]), (0xFF, 1045))
        w.close()
        # A client starting with mysql_native_password is switched.
        w = Wire(self.node.port)
        p = w.login("sha", b"\x00" * 20, "mysql_native_password")
        self.assertEqual(p[0], 0xFE)
        self.assertEqual(p[1:p.index(b"\0", 1)], b"caching_sha2_password")
        w.write(self.token(w.scramble))
        self.assertEqual(w.read(), b"\x01\x03")
        self.assertEqual(w.read()[0], 0)
        w.close()

    def test_clear_text_without_tls_is_refused(self):
        self.restart()
        w = Wire(self.node.port)
        self.assertEqual(w.login("sha", self.token(w.scramble), "caching_sha2_password"), b"\x01\x04")
        w.write(self.PASSWORD.encode() + b"\0")
        p = w.read()
        self.assertEqual((p[0], struct.unpack("<H", p[1:3])[0]), (0xFF, 1045))
        w.close()

    def test_pymysql_full_auth_over_tls_and_rsa(self):
        self.restart()
        conn = pymysql.connect(host="127.0.0.1", port=self.node.port, user="sha",
                               password=self.PASSWORD, ssl={"ssl": {}})
        self.assertIn(conn._sock.version(), ("TLSv1.2", "TLSv1.3"))
        conn.close()
        conn = pymysql.connect(host="127.0.0.1", port=self.node.port, user="sha", password=self.PASSWORD)
        with conn.cursor() as cur:
            cur.execute("SELECT CURRENT_USER()")
            self.assertTrue(cur.fetchone()[0].startswith("sha@"))
        conn.close()
        self.restart()
        # Without TLS and with an empty cache: the RSA exchange.
        conn = pymysql.connect(host="127.0.0.1", port=self.node.port, user="sha", password=self.PASSWORD)
        conn.close()
        with self.assertRaises(pymysql.MySQLError) as ctx:
            pymysql.connect(host="127.0.0.1", port=self.node.port, user="sha", password="nope")
        self.assertEqual(ctx.exception.args[0], 1045)
        pymysql.connect(host="127.0.0.1", port=self.node.port, user="nopw", password="").close()

    def test_mariadb_cli_with_and_without_ssl(self):
        self.restart()
        base = ["mariadb", "-h127.0.0.1", "-P%d" % self.node.port, "-usha", "-p" + self.PASSWORD,
                "--batch", "--skip-column-names", "-e", "SELECT 7 * 6"]
        p = subprocess.run(base + ["--ssl", "--skip-ssl-verify-server-cert"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "42"), p.stderr)
        self.restart()
        p = subprocess.run(base + ["--skip-ssl"], capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "42"), p.stderr)


if __name__ == "__main__":
    main()
