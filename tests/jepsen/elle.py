"""An Elle-style checker for list-append histories (append.py).

Each operation is a transaction, value [[f, k, v], ...] with f "r" (v: the
list read, null for no row) or "append" (v: the element appended); every
appended element is unique in the run. Only reads of committed (`ok`)
transactions are evidence.

1. Per key the version order is the longest list read; every read must be a
   prefix of it (else `incompatible-order`), hold no element twice
   (`duplicate-elements`) and only elements some transaction appended
   (`garbage-read`). A transaction's reads must agree with its own earlier
   reads and appends (`internal`).
2. `G1a` (aborted read): a read holds an element a failed transaction
   appended. `G1b` (intermediate read): a read's last element is not the
   final append of its writer to that key. `non-contiguous-appends`: another
   transaction's element sits between two appends of one transaction to a
   key (they held its lock throughout).
3. `lost-append`: an acknowledged append is in no read although a read of
   its key started after it was acknowledged. `stale-read`: a read that
   started after an append was acknowledged misses it, though later reads
   have it (a real-time violation).
4. The dependency graph between committed transactions (ok ones, and info
   ones whose appends were read): ww (consecutive elements of the version
   order), wr (writer of a read's last element -> reader), rw (reader ->
   writer of the element after the read's last), and rt (real time: T1
   ended before T2 began; encoded through a chain of virtual nodes, one per
   end time, so the graph stays linear in size). Cycles are found with
   Tarjan's SCC and classified as Adya/Elle do:
     G0        only ww edges
     G1c       ww and wr, at least one wr
     G-single  exactly one rw edge
     G2        two or more rw edges (G2-item)
   and the same with rt edges as G0-realtime, G1c-realtime,
   G-single-realtime, G2-realtime.

What the append workload promises (README.md): snapshot isolation with
cluster-wide real-time snapshots -- every anomaly above is a failure except
G2 and G2-realtime, which snapshot isolation allows (write skew); they are
listed, not failed.
"""
import bisect
from collections import defaultdict

ALLOWED = {"G2", "G2-realtime"}
MAX_EXAMPLES = 8
MAX_SEARCHES = 2000


def _txn_ops(ops):
    return [op for op in ops if op.get("f") == "txn" and op.get("process") != "nemesis"]


class Graph:
    def __init__(self):
        self.out = defaultdict(list)   # node -> [(dst, type, key)]
        self.nodes = set()

    def add(self, a, b, kind, key=None):
        if a == b:
            return
        self.nodes.add(a)
        self.nodes.add(b)
        self.out[a].append((b, kind, key))

    def sccs(self, kinds):
        """Strongly connected components (size > 1) over edges of `kinds`
        (iterative Tarjan)."""
        index, low, on, stack, comps = {}, {}, set(), [], []
        counter = 0
        for root in self.nodes:
            if root in index:
                continue
            work = [(root, 0)]
            while work:
                v, i = work.pop()
                if i == 0:
                    index[v] = low[v] = counter
                    counter += 1
                    stack.append(v)
                    on.add(v)
                edges = [e for e in self.out.get(v, ()) if e[1] in kinds]
                recursed = False
                while i < len(edges):
                    w = edges[i][0]
                    i += 1
                    if w not in index:
                        work.append((v, i))
                        work.append((w, 0))
                        recursed = True
                        break
                    if w in on:
                        low[v] = min(low[v], index[w])
                if recursed:
                    continue
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        comps.append(set(comp))
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
        return comps

    def path(self, src, dst, kinds, within):
        """Shortest path src -> dst over edges of `kinds` inside `within`:
        a list of edges (a, b, type, key), or None."""
        prev = {src: None}
        frontier = [src]
        while frontier:
            nxt = []
            for v in frontier:
                for w, kind, key in self.out.get(v, ()):
                    if kind not in kinds or w not in within or w in prev:
                        continue
                    prev[w] = (v, kind, key)
                    if w == dst:
                        edges = []
                        x = w
                        while prev[x] is not None:
                            a, k, kk = prev[x]
                            edges.append((a, x, k, kk))
                            x = a
                        return list(reversed(edges))
                    nxt.append(w)
            frontier = nxt
        return None


def parse_list(v):
    if v is None:
        return None
    return list(v)


def check(ops):
    txns = _txn_ops(ops)
    by_index = {op["index"]: op for op in txns}
    anomalies = defaultdict(list)

    def note(kind, example):
        anomalies[kind].append(example)

    # -- appends ------------------------------------------------------------
    writer = {}                 # (k, v) -> txn index
    final_append = {}           # (txn, k) -> last element it appended to k
    appends_of = defaultdict(list)  # (txn, k) -> elements in order
    for op in txns:
        for f, k, v in op["value"]:
            if f == "append":
                if (k, v) in writer:
                    raise ValueError("element %r appended twice to key %r (#%d and #%d)" %
                                     (v, k, writer[(k, v)], op["index"]))
                writer[(k, v)] = op["index"]
                final_append[(op["index"], k)] = v
                appends_of[(op["index"], k)].append(v)

    # -- reads of committed transactions -------------------------------------
    reads = []   # (txn index, k, list, start)
    for op in txns:
        if op["type"] != "ok":
            continue
        state = {}
        for f, k, v in op["value"]:
            if f == "append":
                kind, lst = state.get(k, ("suffix", []))
                state[k] = (kind, lst + [v])
                continue
            lst = parse_list(v)
            if lst is None:
                note("missing-row", {"txn": op["index"], "key": k})
                continue
            reads.append((op["index"], k, lst, op["start"]))
            if len(set(lst)) != len(lst):
                note("duplicate-elements", {"txn": op["index"], "key": k, "read": lst})
            for x in lst:
                if (k, x) not in writer:
                    note("garbage-read", {"txn": op["index"], "key": k, "element": x, "read": lst})
            if k in state:
                kind, expect = state[k]
                ok = (lst == expect) if kind == "known" else (lst[len(lst) - len(expect):] == expect
                                                               if expect else True)
                if not ok:
                    note("internal", {"txn": op["index"], "key": k, "read": lst,
                                      "expected": expect if kind == "known" else ["...", *expect]})
            state[k] = ("known", lst)

    # -- version orders --------------------------------------------------------
    longest = {}
    for t, k, lst, _ in reads:
        if len(lst) > len(longest.get(k, [])) or k not in longest:
            longest[k] = lst
    consistent_read = []
    for t, k, lst, s in reads:
        order = longest[k]
        if order[:len(lst)] != lst:
            note("incompatible-order", {"txn": t, "key": k, "read": _short(lst), "longest": _short(order)})
        else:
            consistent_read.append((t, k, lst, s))
    position = {}   # (k, v) -> index in the version order
    for k, order in longest.items():
        for i, v in enumerate(order):
            position.setdefault((k, v), i)

    # -- committed transactions ------------------------------------------------
    committed = {op["index"] for op in txns if op["type"] == "ok"}
    for op in txns:
        if op["type"] == "info" and any(f == "append" and (k, v) in position for f, k, v in op["value"]):
            committed.add(op["index"])

    # -- G1a, G1b, non-contiguous ----------------------------------------------
    for t, k, lst, _ in reads:
        for x in lst:
            w = writer.get((k, x))
            if w is not None and by_index[w]["type"] == "fail":
                note("G1a", {"txn": t, "key": k, "element": x, "writer": w, "read": _short(lst)})
                break
        if lst:
            w = writer.get((k, lst[-1]))
            if w is not None and w != t and final_append.get((w, k)) != lst[-1]:
                note("G1b", {"txn": t, "key": k, "read": _short(lst), "writer": w,
                             "writer_final": final_append.get((w, k))})
    for (t, k), elems in appends_of.items():
        pos = [position.get((k, v)) for v in elems]
        if len(elems) > 1 and None not in pos:
            if pos != list(range(pos[0], pos[0] + len(pos))):
                note("non-contiguous-appends", {"txn": t, "key": k, "elements": elems, "positions": pos})

    # -- lost and stale ----------------------------------------------------------
    reads_by_key = defaultdict(list)
    for t, k, lst, s in consistent_read:
        reads_by_key[k].append((s, t, lst))
    last_read_start = {k: max(s for s, _, _ in rs) for k, rs in reads_by_key.items()}
    acked = defaultdict(list)   # k -> [(end, v, txn)]
    for op in txns:
        if op["type"] != "ok":
            continue
        for f, k, v in op["value"]:
            if f == "append":
                acked[k].append((op["end"], v, op["index"]))
    for k, items in acked.items():
        items.sort()
        ends = [e for e, _, _ in items]
        # prefix maximum of version-order positions of the acknowledged appends
        maxpos, best = [], (-1, None)
        for e, v, t in items:
            p = position.get((k, v))
            if p is None:
                if k in last_read_start and last_read_start[k] > e:
                    note("lost-append", {"key": k, "element": v, "writer": t,
                                         "read_after": [r for s, r, _ in reads_by_key[k] if s > e][:3]})
                maxpos.append(best)
                continue
            if p > best[0]:
                best = (p, v, t)
            maxpos.append(best)
        for s, t, lst in reads_by_key.get(k, ()):
            n = bisect.bisect_left(ends, s)   # appends acknowledged before the read began
            if n == 0:
                continue
            p, v, w = maxpos[n - 1]
            if p >= len(lst):
                note("stale-read", {"txn": t, "key": k, "missing": v, "writer": w, "read": _short(lst)})

    # -- dependency graph --------------------------------------------------------
    g = Graph()
    for t in committed:
        g.nodes.add(t)
    for k, order in longest.items():
        for a, b in zip(order, order[1:]):
            wa, wb = writer.get((k, a)), writer.get((k, b))
            if wa in committed and wb in committed:
                g.add(wa, wb, "ww", k)
    for t, k, lst, _ in consistent_read:
        order = longest[k]
        if lst:
            w = writer.get((k, lst[-1]))
            if w in committed:
                g.add(w, t, "wr", k)
        if len(lst) < len(order):
            w = writer.get((k, order[len(lst)]))
            if w in committed:
                g.add(t, w, "rw", k)
    # Real time through virtual nodes -1, -2, ...: T -> V(end T) -> V(next
    # end) -> ... -> T2 for the last end before T2 began.
    ends = sorted({by_index[t]["end"] for t in committed if by_index[t]["type"] == "ok"})
    vid = {e: -(i + 1) for i, e in enumerate(ends)}
    for i in range(len(ends) - 1):
        g.add(vid[ends[i]], vid[ends[i + 1]], "rt")
    for t in committed:
        op = by_index[t]
        if op["type"] == "ok":
            g.add(t, vid[op["end"]], "rt")
        j = bisect.bisect_left(ends, op["start"]) - 1
        if j >= 0:
            g.add(vid[ends[j]], t, "rt")

    _cycles(g, note)

    failing = {k: v for k, v in anomalies.items() if k not in ALLOWED}
    result = {
        "valid": not failing,
        "txns": len(txns),
        "committed": len(committed),
        "counts": {k: len(v) for k, v in sorted(anomalies.items())},
        "anomalies": {k: v[:MAX_EXAMPLES] for k, v in sorted(anomalies.items())},
        "allowed": sorted(k for k in anomalies if k in ALLOWED),
        "keys": len(longest),
    }
    result["report"] = report(result, by_index)
    return result


def _short(lst, n=6):
    if lst is None or len(lst) <= 2 * n:
        return lst
    return lst[:n] + ["..."] + lst[-n:]


def _cycles(g, note):
    """Finds and classifies cycles: one example per strongly connected
    component and anomaly, at most MAX_SEARCHES path searches per anomaly."""

    def collapse(edges):
        """Turns runs through virtual real-time nodes into single rt steps;
        starts the cycle at a transaction."""
        i = next(i for i, e in enumerate(edges) if e[0] >= 0)
        edges = edges[i:] + edges[:i]
        steps = []
        i = 0
        while i < len(edges):
            a, b, kind, key = edges[i]
            if b < 0:
                j = i
                while edges[j][1] < 0:
                    j += 1
                steps.append((a, edges[j][1], "rt", None))
                i = j + 1
            else:
                steps.append((a, b, kind, key))
                i += 1
        return [{"from": a, "to": b, "edge": kind, "key": key} for a, b, kind, key in steps]

    def search(name, comp_kinds, first_kind, back_kinds, need=None, exclude=(), virtual_only=False):
        """For each SCC over comp_kinds: the first edge of kind first_kind
        (from a transaction) inside it that closes a cycle with a path over
        back_kinds; the cycle must contain an edge of kind `need` if given,
        and must not close over any of the `exclude` kind sets alone (those
        cycles are another anomaly's)."""
        budget = MAX_SEARCHES
        for comp in g.sccs(comp_kinds):
            if virtual_only and not any(v < 0 for v in comp):
                continue
            starts = [(v, w, key) for v in comp if v >= 0 for w, kind, key in g.out.get(v, ())
                      if kind == first_kind and w in comp]
            for v, w, key in starts:
                if budget <= 0:
                    return
                budget -= 1
                back = g.path(w, v, back_kinds, comp)
                if back is None:
                    continue
                edges = [(v, w, first_kind, key)] + back
                kinds = {e[2] for e in edges}
                if need is not None and need not in kinds:
                    continue
                if any(g.path(w, v, ex, comp) is not None for ex in exclude):
                    continue
                note(name, {"cycle": collapse(edges)})
                break

    search("G0", {"ww"}, "ww", {"ww"})
    search("G1c", {"ww", "wr"}, "wr", {"ww", "wr"})
    search("G-single", {"ww", "wr", "rw"}, "rw", {"ww", "wr"})
    search("G2", {"ww", "wr", "rw"}, "rw", {"ww", "wr", "rw"}, exclude=[{"ww", "wr"}])
    # With real-time edges: only the cycles that need one.
    search("G0-realtime", {"ww", "rt"}, "ww", {"ww", "rt"}, need="rt", exclude=[{"ww"}], virtual_only=True)
    search("G1c-realtime", {"ww", "wr", "rt"}, "wr", {"ww", "wr", "rt"}, need="rt",
           exclude=[{"ww", "wr"}], virtual_only=True)
    search("G-single-realtime", {"ww", "wr", "rw", "rt"}, "rw", {"ww", "wr", "rt"}, need="rt",
           exclude=[{"ww", "wr"}], virtual_only=True)
    search("G2-realtime", {"ww", "wr", "rw", "rt"}, "rw", {"ww", "wr", "rw", "rt"}, need="rt",
           exclude=[{"ww", "wr", "rw"}, {"ww", "wr", "rt"}], virtual_only=True)


def describe_txn(op):
    parts = []
    for f, k, v in op["value"]:
        if f == "append":
            parts.append("append %s %s" % (k, v))
        else:
            parts.append("r %s %s" % (k, _short(v)))
    return "#%d p%s %s %s [%s]" % (op["index"], op["process"], op.get("node"), op["type"], ", ".join(parts))


def report(result, by_index):
    lines = ["append: %d transactions, %d committed, %d keys" % (result["txns"], result["committed"], result["keys"])]
    if not result["counts"]:
        lines.append("  no anomalies")
    for name, n in result["counts"].items():
        tag = "allowed under snapshot isolation, listed" if name in ALLOWED else "FAILURE"
        lines.append("  %s: %d (%s)" % (name, n, tag))
        for ex in result["anomalies"][name][:3]:
            if "cycle" in ex:
                lines.append("    cycle:")
                for step in ex["cycle"]:
                    lines.append("      %s" % describe_txn(by_index[step["from"]]))
                    lines.append("        -%s%s->" % (step["edge"], "" if step["key"] is None else " key %s" % step["key"]))
                lines.append("      %s" % describe_txn(by_index[ex["cycle"][0]["from"]]))
            else:
                lines.append("    %s" % ex)
    return "\n".join(lines) + "\n"
