"""Faults: kill, pause, partition, and mixed (a random one of these each
time), injected every few seconds from a seeded RNG and healed after a few
seconds; heal_all() undoes everything before the final reads.

- kill: SIGKILL a random node; after the hold, start it again on the same
  data directory and address (without --join: a member rejoins by itself).
- pause: SIGSTOP a random node; SIGCONT after the hold.
- partition (network namespaces only): one of
    isolate  -- one node cut from all others,
    halves   -- a random minority cut from the majority,
    bridge   -- the others split in two halves that cannot reach each
                other, one node reaching both (three nodes: A-C cut, B sees
                both).

Each of these makes the cluster remove the node(s) it cut off after
--node-timeout-ms (2 s here), which takes their replicas out of the slice
map; a slice with no replica left is lost (docs/cluster.md "A node
leaves"), as designed. So by default the next fault waits until
system.protection says "fully protected" (reprotection copied every slice
again) -- at most --protect-timeout seconds, else that fault is skipped and
logged. --no-wait-protected drops the wait (expect lost slices: the
history then shows lost writes, which is the documented limit, not a bug).

Everything runs in the runner's main thread (nodes are started with a
parent-death signal bound to the thread that forks them).
"""
import time

KINDS = ("none", "kill", "pause", "partition", "mixed")
PARTITIONS = ("isolate", "halves", "bridge")


class Nemesis:
    def __init__(self, kind, cluster, net, history, rng, interval, hold, log, wait_protected=True,
                 protect_timeout=120):
        if kind not in KINDS:
            raise ValueError("unknown nemesis %r" % kind)
        self.kind = kind
        self.cluster = cluster
        self.net = net
        self.history = history
        self.rng = rng
        self.interval = interval
        self.hold = hold
        self.log = log
        self.wait_protected = wait_protected
        self.protect_timeout = protect_timeout
        self.faults = []      # what was injected: (kind, detail)
        self.skipped = 0
        self.active = None    # (kind, detail) until healed

    def choices(self):
        if self.kind == "mixed":
            return ["kill", "pause"] + (["partition"] if self.net is not None else [])
        return [self.kind]

    def sleep_until(self, t, stop_at):
        while True:
            now = time.monotonic()
            if now >= min(t, stop_at):
                return now < stop_at
            time.sleep(min(0.1, min(t, stop_at) - now))

    def run(self, stop_at, on_tick=None):
        """Injects and heals faults until time.monotonic() reaches stop_at."""
        if self.kind == "none":
            self.sleep_until(stop_at, stop_at)
            return
        while True:
            wait = self.rng.uniform(0.5, 1.5) * self.interval
            if not self.sleep_until(time.monotonic() + wait, stop_at):
                return
            if self.wait_protected and not self.protected(stop_at):
                continue
            if stop_at - time.monotonic() < self.hold / 2:
                return  # no time left to hold a fault
            kind = self.rng.choice(self.choices())
            self.inject(kind)
            hold = self.rng.uniform(0.5, 1.5) * self.hold
            self.sleep_until(time.monotonic() + hold, stop_at)
            self.heal_all()

    def protected(self, stop_at):
        """Waits until a node says every slice has all its replicas."""
        deadline = min(time.monotonic() + self.protect_timeout, stop_at)
        last = None
        while time.monotonic() < deadline:
            for node in self.cluster.nodes:
                try:
                    rows = node.query("SELECT status, lost_slices FROM system.protection", timeout=5)
                    last = rows[0]
                    if rows[0][0] == "fully protected":
                        return True
                    break
                except Exception as e:  # noqa: BLE001 - a node that does not answer: ask the next
                    last = e
            time.sleep(0.5)
        if time.monotonic() < stop_at:
            self.skipped += 1
            self.log("nemesis: not fully protected after %d s (%r): fault skipped" % (self.protect_timeout, last))
            self.history.nemesis("skip", "not fully protected: %s" % (last,))
        return False

    def inject(self, kind):
        nodes = self.cluster.nodes
        start = time.monotonic_ns()
        if kind == "kill":
            node = self.rng.choice(nodes)
            node.kill()
            detail = node.name
        elif kind == "pause":
            node = self.rng.choice(nodes)
            node.pause()
            detail = node.name
        elif kind == "partition":
            detail = self.partition()
        else:
            raise ValueError(kind)
        self.active = (kind, detail)
        self.faults.append((kind, detail))
        self.history.nemesis(kind, detail, start=start)
        self.log("nemesis: %s %s" % (kind, detail))

    def partition(self):
        n = len(self.cluster.nodes)
        idx = list(range(1, n + 1))
        self.rng.shuffle(idx)
        how = self.rng.choice(PARTITIONS)
        if how == "isolate":
            groups = [idx[:1], idx[1:]]
            cut = [(a, b) for a in groups[0] for b in groups[1]]
        elif how == "halves":
            k = n // 2
            groups = [idx[:k], idx[k:]]
            cut = [(a, b) for a in groups[0] for b in groups[1]]
        else:  # bridge
            bridge, rest = idx[0], idx[1:]
            k = len(rest) // 2
            groups = [rest[:k], [bridge], rest[k:]]
            cut = [(a, b) for a in groups[0] for b in groups[2]]
        for a, b in cut:
            self.net.cut(a, b)
        return {"kind": how, "groups": [["node%d" % i for i in g] for g in groups],
                "cut": ["node%d-node%d" % (min(a, b), max(a, b)) for a, b in cut]}

    def heal_all(self):
        """Network whole, every node running and resumed (killed ones
        restarted). Idempotent."""
        start = time.monotonic_ns()
        did = []
        if self.net is not None and self.net.cuts:
            self.net.heal()
            did.append("network")
        for node in self.cluster.nodes:
            if node.paused:
                node.resume()
                did.append("resume " + node.name)
        for node in self.cluster.nodes:
            if not node.running():
                node.start()
                did.append("start " + node.name)
        self.active = None
        if did:
            self.history.nemesis("heal", did, start=start)
            self.log("nemesis: heal (%s)" % ", ".join(did))
