#!/usr/bin/python3
"""A Jepsen-style test of a real Shale cluster: clients run a workload
against 3 (--nodes) shaled processes while a nemesis injects faults; the
history of every operation is checked afterwards.

    tests/jepsen/run.py --shaled build/src/shaled --workload register \\
        --nemesis partition --seed 3 --duration 60 [--nodes 3] [--clients 6] [--out DIR]

Workloads: register (linearizable registers, checked by porcupine), bank
(transfers, totals), append (Elle-style list append, checked for
G0/G1/G-single/G2/lost/stale). Nemeses: none, kill, pause, partition,
mixed. See README.md here.

Everything of a run is kept in --out (default: a new temporary directory,
printed): history.jsonl, verdict.json, run.json (the arguments), nodeN.log,
and for an invalid register history porcupine's HTML visualization.
Exit status: 0 valid, 1 invalid, 3 the checker could not decide (timeout),
2 the run itself failed (a node did not start, no operation succeeded).
"""
import argparse
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import append  # noqa: E402
import bank  # noqa: E402
import cluster as clusterlib  # noqa: E402
import history as historylib  # noqa: E402
import nemesis as nemesislib  # noqa: E402
import netns  # noqa: E402
import porcupine  # noqa: E402
import register  # noqa: E402

WORKLOADS = {"register": register.Register, "bank": bank.Bank, "append": append.Append}


class Worker(threading.Thread):
    """One client: a connection to its node, operations one after another."""

    def __init__(self, index, node, workload, history, stop, nclients, seed, think_ms, lock_wait_s, log):
        super().__init__(name="client%d" % index, daemon=True)
        self.index = index
        self.process = index
        self.node = node
        self.workload = workload
        self.history = history
        self.stop = stop
        self.nclients = nclients
        self.rng = random.Random("%s-%d" % (seed, index))
        self.think = think_ms / 1000.0
        self.lock_wait_s = lock_wait_s
        self.log = log
        self.seen = {}         # workload state of this client (register: last value per key)
        self.crashed = None
        self.ops = 0

    def connect(self):
        conn = self.node.connect()
        try:
            conn.cursor().execute("SET SESSION innodb_lock_wait_timeout = %d" % self.lock_wait_s)
        except Exception:  # noqa: BLE001 - an older server without it: the default applies
            pass
        return conn

    def run(self):
        conn = None
        try:
            while not self.stop.is_set():
                if conn is None:
                    try:
                        conn = self.connect()
                    except Exception:  # noqa: BLE001 - node down, paused or cut off: try again
                        self.stop.wait(0.5)
                        continue
                op = self.workload.generate(self)
                conn, _ = self.execute(conn, op)
                self.ops += 1
                if self.think:
                    self.stop.wait(self.rng.expovariate(1.0 / self.think))
        except Exception:  # noqa: BLE001 - a bug in the runner: reported, fails the run
            self.crashed = traceback.format_exc()
            self.log("client%d crashed:\n%s" % (self.index, self.crashed))
        finally:
            clusterlib_close(conn)

    def execute(self, conn, op, process=None):
        """Runs op on conn, records it; returns the connection (None if it
        broke) and the record."""
        rec = dict(op)
        rec["process"] = self.process if process is None else process
        rec["node"] = self.node.name
        rec["start"] = time.monotonic_ns()
        try:
            res = self.workload.invoke(conn, op, self)
            rec.update(res)
        except historylib.TxnAborted as e:
            _, err, broken = historylib.classify(e.cause)
            rec["type"], rec["error"] = "fail", err
            if broken:
                conn = clusterlib_close(conn)
        except Exception as e:  # noqa: BLE001 - pymysql and socket errors, classified
            rec["type"], rec["error"], broken = historylib.classify(e)
            if broken:
                conn = clusterlib_close(conn)
        rec["end"] = time.monotonic_ns()
        self.history.add(rec)
        if rec["type"] == "info" and process is None:
            self.process += self.nclients
        return conn, rec


def clusterlib_close(conn):
    if conn is not None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - a dead peer may fail the close any way
            pass
    return None


def run_sql(node, sql, timeout=60):
    """sql on node, retrying errors for up to `timeout` s (set-up only; the
    statements are idempotent)."""
    deadline = time.time() + timeout
    while True:
        try:
            return node.query(sql, timeout=30)
        except Exception as e:  # noqa: BLE001 - a node still settling
            if time.time() > deadline:
                raise RuntimeError("%s: %s failed for %d s: %r" % (node.name, sql[:80], timeout, e))
            time.sleep(0.5)


def final_reads(workload, cluster, history, log, timeout=120):
    """The workload's final operations through every node, each retried
    until it succeeds (every attempt is recorded); at most `timeout` s per
    node, and none through a node that is not running."""
    done = 0
    deadlines = {}
    for i, (node, op) in enumerate(workload.final_ops(cluster)):
        if not node.running():
            log("final read on %s skipped: the node is not running" % node.name)
            continue
        deadline = deadlines.setdefault(node.name, time.time() + timeout)
        w = Worker(10000 + i, node, workload, history, threading.Event(), 1, "final", 0, 5, log)
        conn = None
        while True:
            try:
                conn = conn or w.connect()
                conn, rec = w.execute(conn, dict(op), process=10000 + i)
                if rec["type"] == "ok":
                    done += 1
                    break
            except Exception as e:  # noqa: BLE001 - the node is still coming back
                log("final read on %s: %r" % (node.name, e))
            if time.time() > deadline:
                log("final read on %s did not succeed within %d s" % (node.name, timeout))
                break
            time.sleep(0.5)
        clusterlib_close(conn)
    return done


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shaled", help="the shaled binary")
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="register")
    p.add_argument("--nemesis", choices=nemesislib.KINDS, default="none")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--duration", type=float, default=30, help="seconds of workload (default 30)")
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--clients", type=int, default=6)
    p.add_argument("--one-node", action="store_true", help="every client on node 1 (default: spread)")
    p.add_argument("--out", help="output directory (default: a new temporary one)")
    p.add_argument("--keys", type=int, default=None,
                   help="register: keys (default 5); append: active keys (default 5)")
    p.add_argument("--accounts", type=int, default=8, help="bank: accounts (default 8)")
    p.add_argument("--max-writes-per-key", type=int, default=16, help="append: appends before a key retires")
    p.add_argument("--plain-reads", action="store_true",
                   help="append: writing transactions read without FOR UPDATE (G-single then allowed)")
    p.add_argument("--interval", type=float, default=8, help="nemesis: mean seconds between faults (default 8)")
    p.add_argument("--hold", type=float, default=4, help="nemesis: mean seconds a fault lasts (default 4)")
    p.add_argument("--no-wait-protected", dest="wait_protected", action="store_false",
                   help="nemesis: do not wait for full protection before the next fault")
    p.add_argument("--think-ms", type=float, default=0, help="mean pause of a client between operations")
    p.add_argument("--lock-wait-timeout", type=int, default=5, help="innodb_lock_wait_timeout of the clients")
    p.add_argument("--net", choices=["auto", "netns", "loopback"], default="auto",
                   help="nodes in network namespaces (auto: when root) or on loopback")
    p.add_argument("--cache-dir", default=None, help="where the Go checker is built (default ~/.cache/shale-jepsen)")
    p.add_argument("--checker-timeout", type=int, default=300, help="porcupine's time limit per key, seconds")
    p.add_argument("--keep-data", action="store_true", help="keep the nodes' data directories")
    p.add_argument("--check-only", metavar="DIR", help="check DIR/history.jsonl again (arguments from DIR/run.json)")
    p.add_argument("--cleanup", action="store_true", help="remove namespaces left by killed runs and exit")
    p.add_argument("--skip-if-no-netns", action="store_true",
                   help="exit 77 (ctest's skip) instead of failing when the partition nemesis cannot run")
    args = p.parse_args(argv)
    if args.keys is None:
        args.keys = 5
    return args


def file_md5(path):
    import hashlib
    h = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check(workload, ops, out_dir, args):
    return workload.check(ops, out_dir, args)


def print_verdict(verdict, out_dir):
    report = verdict.get("report", "")
    if report:
        sys.stdout.write(report)
    valid = verdict["valid"]
    word = {True: "VALID", False: "INVALID"}.get(valid, "UNKNOWN")
    print("verdict: %s  (%s)" % (word, out_dir))


def exit_code(valid):
    return {True: 0, False: 1}.get(valid, 3)


def main(argv=None):
    args = parse_args(argv if argv is not None else sys.argv[1:])
    log = lambda msg: print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)  # noqa: E731

    if args.cleanup:
        log("removed %d leftover networks" % netns.cleanup_stale(log))
        clusterlib.cleanup_stale_data(log)
        return 0

    if args.check_only:
        out_dir = args.check_only
        with open(os.path.join(out_dir, "run.json")) as f:
            saved = json.load(f)
        for k, v in saved.items():
            if k not in ("check_only", "cache_dir", "checker_timeout") and hasattr(args, k):
                setattr(args, k, v)
        workload = WORKLOADS[args.workload](args)
        ops = historylib.load(os.path.join(out_dir, "history.jsonl"))
        verdict = check(workload, ops, out_dir, args)
        print_verdict(verdict, out_dir)
        return exit_code(verdict["valid"])

    if not args.shaled:
        print("--shaled is required", file=sys.stderr)
        return 2
    out_dir = os.path.abspath(args.out or tempfile.mkdtemp(prefix="shale-jepsen-%s-" % args.workload))
    os.makedirs(out_dir, exist_ok=True)
    # What an earlier run in the same directory left (never anything else).
    for name in os.listdir(out_dir):
        if (name in ("history.jsonl", "verdict.json", "run.json") or
                (name.startswith("node") and name.endswith(".log")) or
                (name.startswith("linearizability-key") and name.endswith(".html"))):
            os.unlink(os.path.join(out_dir, name))
    info = dict(vars(args))
    info["shaled_md5"] = file_md5(args.shaled)
    info["shaled_mtime"] = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(args.shaled)))
    with open(os.path.join(out_dir, "run.json"), "w") as f:
        json.dump(info, f, indent=2, sort_keys=True)
    log("jepsen: %s, nemesis %s, seed %d, %g s, %d nodes, %d clients; shaled %s (md5 %s, %s); out %s" %
        (args.workload, args.nemesis, args.seed, args.duration, args.nodes, args.clients, args.shaled,
         info["shaled_md5"][:12], info["shaled_mtime"], out_dir))

    # Build the checker first: a missing Go fails before minutes of load.
    if args.workload == "register":
        try:
            porcupine.build(args.cache_dir, log=log)
        except porcupine.CheckerUnavailable as e:
            log("cannot build the register checker: %s" % e)
            return 2

    why = netns.available()
    want_netns = args.net == "netns" or (args.net == "auto" and not why)
    if args.net == "netns" and why:
        log("--net netns: %s" % why)
        return 2
    if args.nemesis == "partition" and (why or args.net == "loopback"):
        log("the partition nemesis needs network namespaces (one per node, links cut by routes): %s" %
            (why or "--net loopback given"))
        return 77 if args.skip_if_no_netns else 2
    if want_netns:
        netns.cleanup_stale(log)
    clusterlib.cleanup_stale_data(log)

    # SIGTERM (ctest's timeout, kill) unwinds like Ctrl-C, so the finally
    # below removes the network and the nodes.
    def on_term(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    signal.signal(signal.SIGTERM, on_term)

    net = None
    cluster = None
    history = historylib.History(os.path.join(out_dir, "history.jsonl"))
    workload = WORKLOADS[args.workload](args)
    stop = threading.Event()
    workers = []
    nem = None
    verdict = None
    status = 2
    try:
        if want_netns:
            net = netns.Network(args.nodes, log=log)
            net.setup()
        cluster = clusterlib.Cluster(args.shaled, args.nodes, net, log=log)
        cluster.start()
        workload.setup(cluster, history, run_sql)
        log("set up; clients start")

        rng = random.Random(args.seed)
        for i in range(args.clients):
            node = cluster.nodes[0] if args.one_node else cluster.nodes[i % args.nodes]
            workers.append(Worker(i, node, workload, history, stop, args.clients, args.seed, args.think_ms,
                                  args.lock_wait_timeout, log))
        for w in workers:
            w.start()
        nem = nemesislib.Nemesis(args.nemesis, cluster, net, history, rng, args.interval, args.hold, log,
                                 wait_protected=args.wait_protected)
        stop_at = time.monotonic() + args.duration
        nemesis_error = None
        try:
            nem.run(stop_at)
        except Exception:  # noqa: BLE001 - e.g. a node that does not come back: heal, check, report
            nemesis_error = traceback.format_exc()
            log("nemesis failed:\n%s" % nemesis_error)
        stop.set()
        for w in workers:
            w.join(timeout=120)
        hung = [w.name for w in workers if w.is_alive()]
        try:
            nem.heal_all()
        except Exception:  # noqa: BLE001
            nemesis_error = (nemesis_error or "") + traceback.format_exc()
            log("heal failed:\n%s" % traceback.format_exc())
        log("workload stopped (%d ops); faults healed; waiting for every node to be a member" % len(history.ops))
        try:
            cluster.wait_all_members(120)
        except AssertionError as e:
            log("cluster did not heal: %s" % e)
        n_final = final_reads(workload, cluster, history, log)
        log("final reads: %d ok" % n_final)
        history.close()

        ops = history.ops
        verdict = check(workload, ops, out_dir, args)
        verdict["faults"] = [[k, d] for k, d in nem.faults]
        verdict["faults_skipped"] = nem.skipped
        crashed = [w.crashed for w in workers if w.crashed]
        if crashed or hung or nemesis_error:
            verdict["run_errors"] = {"crashed_clients": crashed, "hung_clients": hung, "nemesis": nemesis_error}
        print_verdict(verdict, out_dir)
        status = exit_code(verdict["valid"])
        ok_ops = sum(1 for op in ops if op.get("type") == "ok" and op.get("process") not in ("nemesis", -1))
        if status == 0 and (crashed or hung or ok_ops == 0 or nemesis_error):
            log("run error: %s" % (verdict.get("run_errors") or "no operation succeeded"))
            status = 2
    except KeyboardInterrupt as e:
        log("interrupted (%s)" % e)
        status = 130
    except Exception:  # noqa: BLE001 - set-up failed: report, clean up
        log("run failed:\n%s" % traceback.format_exc())
        status = 2
    finally:
        stop.set()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if cluster is not None:
            cluster.kill_all()
            cluster.collect_logs(out_dir)
            cluster.shutdown(keep_data=args.keep_data)
            if args.keep_data:
                log("data kept in %s" % cluster.root_dir)
        if net is not None:
            net.teardown()
        if verdict is not None:
            with open(os.path.join(out_dir, "verdict.json"), "w") as f:
                json.dump(verdict, f, indent=2, sort_keys=True, default=str)
        if not history.file.closed:
            history.close()
    log("out: %s (exit %d)" % (out_dir, status))
    return status


if __name__ == "__main__":
    sys.exit(main())
