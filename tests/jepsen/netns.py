"""A private network of Linux network namespaces, one per node.

Each node runs in its own namespace with one address of a private /24,
10.213.<octet>.<i>/24, on a veth pair whose other end is enslaved to a
bridge in the root namespace; the bridge holds 10.213.<octet>.254, so
clients in the root namespace reach every node. The namespaces have no
default route: nothing they send can leave the bridge, i.e. this machine.

A link between two nodes is cut by a route in each of the two namespaces
that refuses the other's address (`ip route add prohibit <ip>/32`; a
connect fails at once, a packet of an open connection is dropped and
retransmitted until the route goes), and healed by deleting it. (There is
no iptables here; a route is the one tool that cuts a single link.)

Names are derived from the octet (`shj<octet>n<i>`, `shjb<octet>`,
`shjv<octet>n<i>`), and an octet is owned through an flock on
/tmp/shale-jepsen-net/<octet>.lock held for the whole run: two runs never
pick the same octet, and whatever exists under an octet's names when its
lock is taken is what a killed run left behind, so it is deleted first.
"""
import fcntl
import os
import random
import re
import subprocess

LOCK_DIR = "/tmp/shale-jepsen-net"
PREFIX = "10.213"


class NetnsUnavailable(Exception):
    pass


def _ip(*args, check=True):
    r = subprocess.run(["ip"] + list(args), capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def available():
    """'' when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root (running as uid %d)" % os.geteuid()
    try:
        r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "iproute2's ip does not run: %s" % e
    if r.returncode != 0:
        return "ip netns list fails: %s" % r.stderr.strip()
    return ""


def _octets_in_use():
    """Third octets of 10.213.x.y addresses or routes the root namespace has."""
    used = set()
    out = _ip("-4", "-o", "addr", "show").stdout + _ip("-4", "route", "show").stdout
    for word in out.replace("/", " ").split():
        parts = word.split(".")
        if len(parts) == 4 and ".".join(parts[:2]) == PREFIX and parts[2].isdigit():
            used.add(int(parts[2]))
    return used


class Network:
    """n namespaces on a bridge; cut()/heal() single links between them."""

    def __init__(self, n, log=print):
        why = available()
        if why:
            raise NetnsUnavailable(why)
        self.n = n
        self.log = log
        self.lock_file = None
        self.octet = None
        self.cuts = set()   # (i, j) with i < j, 1-based node indexes
        self.created = False
        self._acquire()

    # -- names ---------------------------------------------------------------

    def ns(self, i):
        return "shj%dn%d" % (self.octet, i)

    def ip(self, i):
        return "%s.%d.%d" % (PREFIX, self.octet, i)

    @property
    def host_ip(self):
        return "%s.%d.254" % (PREFIX, self.octet)

    @property
    def bridge(self):
        return "shjb%d" % self.octet

    def veth(self, i):
        return "shjv%dn%d" % (self.octet, i)

    def veth_peer(self, i):
        return "shjp%dn%d" % (self.octet, i)

    def exec_prefix(self, i):
        """The command prefix that runs a program inside node i's namespace."""
        return ["ip", "netns", "exec", self.ns(i)]

    # -- set up and tear down ------------------------------------------------

    def _acquire(self):
        os.makedirs(LOCK_DIR, exist_ok=True)
        in_use = _octets_in_use()
        candidates = [o for o in range(1, 251) if o not in in_use]
        random.SystemRandom().shuffle(candidates)
        for octet in candidates:
            f = open(os.path.join(LOCK_DIR, "%d.lock" % octet), "a+")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                f.close()
                continue
            self.lock_file = f
            self.octet = octet
            f.truncate(0)
            f.write("%d\n" % os.getpid())
            f.flush()
            return
        raise NetnsUnavailable("no free 10.213.x.0/24 (all %d locked or in use)" % len(candidates))

    def setup(self):
        self._remove_leftovers()
        self.created = True
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", self.host_ip + "/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for i in range(1, self.n + 1):
            ns = self.ns(i)
            _ip("netns", "add", ns)
            _ip("link", "add", self.veth(i), "type", "veth", "peer", "name", self.veth_peer(i))
            _ip("link", "set", self.veth_peer(i), "netns", ns)
            _ip("link", "set", self.veth(i), "master", self.bridge)
            _ip("link", "set", self.veth(i), "up")
            _ip("-n", ns, "addr", "add", self.ip(i) + "/24", "dev", self.veth_peer(i))
            _ip("-n", ns, "link", "set", self.veth_peer(i), "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            # No default route: the only routes are the /24 and loopback.
        self.log("network: %d namespaces %s..%s on bridge %s, %s.%d.0/24 (host %s)" %
                 (self.n, self.ns(1), self.ns(self.n), self.bridge, PREFIX, self.octet, self.host_ip))

    def _remove_leftovers(self):
        namespaces = _ip("netns", "list").stdout.split()
        for i in range(1, 10):
            if self.ns(i) in namespaces:
                self.log("network: removing leftover namespace %s" % self.ns(i))
                _ip("netns", "delete", self.ns(i), check=False)
            _ip("link", "delete", self.veth(i), check=False)
        _ip("link", "delete", self.bridge, check=False)

    def teardown(self):
        """Deletes every namespace, veth and the bridge; idempotent. The
        processes inside must be gone first (a namespace lives on while a
        process holds it)."""
        if self.created:
            for i in range(1, self.n + 1):
                _ip("netns", "delete", self.ns(i), check=False)
                _ip("link", "delete", self.veth(i), check=False)
            _ip("link", "delete", self.bridge, check=False)
            self.created = False
        if self.lock_file is not None:
            self.lock_file.close()
            self.lock_file = None

    # -- faults ----------------------------------------------------------------

    def cut(self, i, j):
        """Cuts the link between nodes i and j, both ways."""
        a, b = min(i, j), max(i, j)
        if (a, b) in self.cuts:
            return
        _ip("-n", self.ns(a), "route", "add", "prohibit", self.ip(b) + "/32")
        _ip("-n", self.ns(b), "route", "add", "prohibit", self.ip(a) + "/32")
        self.cuts.add((a, b))

    def heal(self):
        for a, b in sorted(self.cuts):
            _ip("-n", self.ns(a), "route", "del", "prohibit", self.ip(b) + "/32", check=False)
            _ip("-n", self.ns(b), "route", "del", "prohibit", self.ip(a) + "/32", check=False)
        self.cuts.clear()

    def routes(self, i):
        return _ip("-n", self.ns(i), "route", "show").stdout


def cleanup_stale(log=print):
    """Removes what killed runs left: every octet whose lock nobody holds."""
    if available():
        return 0
    removed = 0
    namespaces = set(_ip("netns", "list").stdout.split())
    links = _ip("-o", "link", "show").stdout
    octets = set()
    for name in list(namespaces) + [w.split("@")[0].strip(":") for w in links.split()]:
        m = re.match(r"^shj[bvp]?(\d+)", name)
        if m:
            octets.add(int(m.group(1)))
    os.makedirs(LOCK_DIR, exist_ok=True)
    for octet in sorted(octets):
        f = open(os.path.join(LOCK_DIR, "%d.lock" % octet), "a+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue  # a live run owns it
        net = Network.__new__(Network)
        net.n, net.log, net.octet, net.lock_file, net.cuts, net.created = 9, log, octet, f, set(), True
        net._remove_leftovers()
        net.teardown()
        removed += 1
    return removed
