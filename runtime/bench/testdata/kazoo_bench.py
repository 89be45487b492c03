"""The kazoo peer of zkgen's benchmarks (runtime/bench/peers_test.go).

It runs one workload with kazoo's recipes on its own sessions and threads
(the queue workloads: a worker process per session), times only the
measured part itself, and talks to the Go benchmark through a line
protocol:

    stdout: ready                  sessions connected, parents created,
                                   warm-up done: waiting for go
    stdin:  go                     run one measured round
    stdout: done ns=<t> n=<k>      the round took t ns for k operations
    stdin:  quit (or end of input) close the sessions and exit 0

The lock and queue workloads have one round of n operations; the election
and group workloads have n rounds of one failover or one change each (they
print ready again once the next round is set up). On an error it prints "error <message>" and exits 1.

Arguments are key=value pairs:

    zk=127.0.0.1:2181  hosts (the Go benchmark's counting proxy)
    workload=lock      lock            one session, Lock
                       lock-contended  clients sessions, one Lock each
                       queue           producers + consumers processes, a
                                       session and a Queue each
                       lockingqueue    the same with LockingQueue (get, then
                                       consume: at least once)
                       election        clients sessions, one Election each
                       group           members Party members, a ChildrenWatch
                                       watching them
                       cache           a TreeCache of path: the first round
                                       loads it, each later one is one
                                       change seen by its listener
    path=/bench/x      the recipe's path
    n=1000             operations (queue: items; election: failovers)
    clients=8          sessions (lock-contended, election)
    members=10         group members (group)
    members_zk=...     hosts for the members' sessions (group; default zk)
    producers=4
    consumers=4
    item_bytes=0       queue: items of JSON of this many bytes (0: 16 bytes)
    nodes=1000         cache: the nodes under path (n-000000, ...)
    changes=200        cache: the rounds after the load (and 2 more, the Go
                       benchmark's reconnection and expiry rounds)
    spread=10          cache: the nodes each of the last 2 rounds sets
    writer_zk=...      cache: hosts of the writer's session
    load_timeout_s=120 cache: bound on the load
    warmup_ms=1000     before ready, run the workload for this long (at
                       least one operation; not for election)
    depth=0            queue: items put (in transactions of 1000) before
                       the warm-up, so the queue holds that many throughout
    slow_ms=0          queue: the first consumer sleeps this long after
                       each get (a slow worker), cut short when the round
                       ends; the others do not
"""

import gc
import multiprocessing
import os
import queue
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.cache import TreeCache, TreeEvent

TIMEOUT_S = 120.0  # bound on any single wait
PAYLOAD = b"0123456789abcdef"


def json_item(size):
    """A JSON item of exactly size bytes (at least 18), the same bytes as
    the Go benchmark's jsonItem: {"i":"000001","p":"xx..."}."""
    head = b'{"i":"000001","p":"'
    return head + b"x" * (size - len(head) - 2) + b'"}'

sessions = []
workers = []  # the workloads with worker processes, closed at the end


def connect(hosts):
    """Opens one session (a KazooClient)."""
    zk = KazooClient(hosts=hosts, timeout=10.0)  # as the Go sessions
    zk.start(timeout=TIMEOUT_S)
    sessions.append(zk)
    return zk


def stop(zk):
    try:
        zk.stop()
        zk.close()
    except Exception:  # closing anyway
        pass


def warm(ms, batch):
    """Runs batch until ms have passed, at least once."""
    until = time.monotonic() + ms / 1000.0
    batch()
    while time.monotonic() < until:
        batch()


def run_threads(k, body):
    """Runs body(i) on k threads started together; returns the elapsed ns
    from the start until all have returned."""
    gate = threading.Event()
    failures = []

    def main(i):
        gate.wait()
        try:
            body(i)
        except Exception as e:  # reported below
            failures.append(e)

    ts = [threading.Thread(target=main, args=(i,), daemon=True)
          for i in range(k)]
    for t in ts:
        t.start()
    t0 = time.monotonic_ns()
    gate.set()
    for t in ts:
        t.join()
    elapsed = time.monotonic_ns() - t0
    if failures:
        raise failures[0]
    return elapsed


class Locks(object):
    """k sessions, one kazoo Lock each on one path, k threads taking a
    shared count of acquire+release cycles (k = 1: uncontended)."""

    rounds = 1

    def __init__(self, opt, k):
        self.locks = [connect(opt["zk"]).Lock(opt["path"], "c%d" % i)
                      for i in range(k)]
        self.n = int(opt["n"])
        self.warmup = int(opt.get("warmup_ms", "1000"))

    def prepare(self):
        warm(self.warmup, lambda: self.cycles(50))  # creates the parents

    def round(self):
        return self.cycles(self.n), self.n

    def cycles(self, total):
        left = [total]
        mu = threading.Lock()

        def body(i):
            lock = self.locks[i]
            while True:
                with mu:
                    if left[0] <= 0:
                        return
                    left[0] -= 1
                if not lock.acquire(timeout=TIMEOUT_S):
                    raise RuntimeError("lock not acquired within %ss"
                                       % TIMEOUT_S)
                lock.release()

        return run_threads(len(self.locks), body)


class Shared(object):
    """What a round's worker processes share: the items taken, the gets
    under way or done (claimed: a preloaded queue would let the consumers
    take more than the round's items), when the last item was taken, and
    the go and done events."""

    def __init__(self, ctx):
        self.lock = ctx.Lock()
        self.taken = ctx.Value("q", 0, lock=False)  # guarded by lock
        self.claimed = ctx.Value("q", 0, lock=False)  # guarded by lock
        self.end = ctx.Value("q", 0, lock=False)  # guarded by lock
        self.go = ctx.Event()
        self.done = ctx.Event()

    def reset(self):
        with self.lock:
            self.taken.value = self.claimed.value = self.end.value = 0
        self.done.clear()
        self.go.clear()

    def claim(self, total):
        """Counts a get about to start; False once total are under way."""
        with self.lock:
            if self.claimed.value >= total:
                return False
            self.claimed.value += 1
            return True

    def unclaim(self):
        with self.lock:
            self.claimed.value -= 1

    def took(self, total):
        """Counts an item taken; the last one of the round ends it."""
        with self.lock:
            self.taken.value += 1
            if self.taken.value == total:
                self.end.value = time.monotonic_ns()
                self.done.set()


def die_with_parent():
    """Asks Linux to kill this process when its parent (the driver) dies,
    as the Go benchmark has it do for the driver."""
    try:
        import ctypes
        import signal
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # not Linux: the closed pipe ends the worker
        pass


def take(zk, q, path, total, sh, slow):
    """A Queue consumer's part of a round: get until the round's items are
    taken, sleeping slow seconds after each (until the round ends); on an
    empty queue, wait on a child watch of the path."""
    deadline = time.monotonic() + TIMEOUT_S
    while not sh.done.is_set():
        if not sh.claim(total):
            return
        if q.get() is not None:
            sh.took(total)
            if slow:
                sh.done.wait(slow)
            continue
        sh.unclaim()
        woken = threading.Event()
        if zk.get_children(path, watch=lambda ev: woken.set()):
            continue  # items came meanwhile
        while not woken.wait(0.05):  # a change, or the round ended
            if sh.done.is_set():
                return
            if time.monotonic() > deadline:
                raise RuntimeError("no item within %ss" % TIMEOUT_S)


def take_locked(q, total, sh):
    """A LockingQueue consumer's part of a round: get (which waits on its
    own watches until it locks an entry) and consume. The get's timeout
    only lets the consumer see that the round has ended."""
    deadline = time.monotonic() + TIMEOUT_S
    while not sh.done.is_set():
        if time.monotonic() > deadline:
            raise RuntimeError("no item within %ss" % TIMEOUT_S)
        if q.get(1.0) is None:
            continue
        if not q.consume():
            raise RuntimeError("consume failed")
        sh.took(total)


def serve(conn, kind, role, opt, sh, slow):
    """A worker process: one session with one kazoo queue of kind, as a
    producer (role put) or a consumer (take; sleeping slow seconds after
    each get), running the rounds the driver sends on conn until quit or
    the end of conn."""
    die_with_parent()
    zk = None
    try:
        zk = connect(opt["zk"])
        path = opt["path"]
        q = zk.LockingQueue(path) if kind == "lockingqueue" else zk.Queue(path)
        size = int(opt.get("item_bytes", "0"))
        payload = json_item(size) if size else PAYLOAD
        conn.send(("up",))
        while True:
            msg = conn.recv()
            if msg[0] == "quit":
                return
            _, total, share = msg
            conn.send(("armed",))
            sh.go.wait()
            if role == "put":
                for _ in range(share):
                    q.put(payload)
            elif kind == "lockingqueue":
                take_locked(q, total, sh)
            else:
                take(zk, q, path, total, sh, slow)
            conn.send(("ok",))
    except EOFError:  # the driver is gone
        pass
    except Exception as e:
        try:
            conn.send(("error", repr(e)))
        except Exception:  # the driver is gone
            pass
    finally:
        if zk is not None:
            stop(zk)
        os._exit(0)  # daemon threads may still wait on the stopped session


class Queue(object):
    """Producers and consumers, each a process of its own with its own
    session and kazoo Queue on one path (sequential nodes, taken in order;
    get reads and deletes the head, so each item is taken once), as a
    deployment runs them: in one interpreter their eight sessions would
    share one core (the GIL). Queue.get does not block: a consumer that
    finds the queue empty sets a child watch on the path and waits for it
    (or for items already there) before trying again. A round is timed
    from go until its last item is taken."""

    rounds = 1
    kind = "queue"

    def __init__(self, opt):
        self.opt = opt
        self.path = opt["path"]
        self.k = int(opt.get("producers", "4"))
        roles = ["put"] * self.k + ["take"] * int(opt.get("consumers", "4"))
        self.n = int(opt["n"])
        self.warmup = int(opt.get("warmup_ms", "1000"))
        self.depth = int(opt.get("depth", "0"))
        size = int(opt.get("item_bytes", "0"))
        self.payload = json_item(size) if size else PAYLOAD
        # Fork before this process starts any thread (a session's).
        ctx = multiprocessing.get_context("fork")
        self.sh = Shared(ctx)
        self.conns, self.procs = [], []
        slow = int(opt.get("slow_ms", "0")) / 1000.0
        for i, role in enumerate(roles):
            mine, theirs = ctx.Pipe()
            s = slow if i == self.k else 0  # the first consumer
            p = ctx.Process(target=serve, daemon=True,
                            args=(theirs, self.kind, role, opt, self.sh, s))
            p.start()
            theirs.close()
            self.conns.append(mine)
            self.procs.append(p)
        workers.append(self)
        for c in self.conns:
            self.reply(c, "up")

    def reply(self, conn, want):
        if not conn.poll(TIMEOUT_S):
            raise RuntimeError("no %r from a worker within %ss"
                               % (want, TIMEOUT_S))
        try:
            msg = conn.recv()
        except EOFError:
            raise RuntimeError("a worker exited waiting for %r" % want)
        if msg[0] != want:
            raise RuntimeError("worker: %s (waiting for %r)"
                               % (" ".join(msg), want))

    def prepare(self):
        self.preload()
        warm(self.warmup, lambda: self.items(50))

    def preload(self):
        """Puts depth items with the nodes kazoo's Queue.put creates
        (entry-<priority>-<seq>, priority 100), 1000 per transaction."""
        if not self.depth:
            return
        client = connect(self.opt["zk"])
        client.ensure_path(self.path)
        left = self.depth
        while left > 0:
            t = client.transaction()
            for _ in range(min(left, 1000)):
                t.create(self.path + "/entry-100-", self.payload,
                         sequence=True)
            for r in t.commit():
                if isinstance(r, Exception):
                    raise r
            left -= min(left, 1000)

    def round(self):
        return self.items(self.n), self.n

    def items(self, total):
        """Runs one round of total items; returns the ns from go until the
        last was taken."""
        self.sh.reset()
        for i, c in enumerate(self.conns):
            share = total // self.k + (1 if i < total % self.k else 0)
            c.send(("round", total, share if i < self.k else 0))
        for c in self.conns:
            self.reply(c, "armed")
        t0 = time.monotonic_ns()
        self.sh.go.set()
        for c in self.conns:
            self.reply(c, "ok")
        if self.sh.taken.value != total:
            raise RuntimeError("took %d items, put %d"
                               % (self.sh.taken.value, total))
        return self.sh.end.value - t0

    def close(self):
        """Tells the workers to close their sessions and waits for them."""
        for c in self.conns:
            try:
                c.send(("quit",))
            except Exception:  # that worker is gone
                pass
        for p in self.procs:
            p.join(TIMEOUT_S)


class LockingQueue(Queue):
    """The at-least-once peer: kazoo's LockingQueue, producers and
    consumers each a process with its own session. A consumer's get locks
    the head item (waiting on its watches while there is none) and
    consume() deletes it: an item whose consumer dies before consume() is
    delivered again."""

    kind = "lockingqueue"

    def __init__(self, opt):
        if int(opt.get("depth", "0")):
            raise ValueError("lockingqueue: depth is not supported")
        if int(opt.get("slow_ms", "0")):
            raise ValueError("lockingqueue: slow_ms is not supported")
        Queue.__init__(self, opt)


class Election(object):
    """k candidates, each a kazoo Election on its own session. A round stops
    the leader's session (KazooClient.stop, which closes the ZooKeeper
    session) and ends when the next candidate's function is called. Between
    rounds (untimed) a new candidate joins so that k stay in line."""

    def __init__(self, opt):
        self.opt = opt
        self.k = int(opt.get("clients", "8"))
        self.rounds = int(opt["n"])
        self.elected = queue.Queue()  # (candidate, ns)
        self.candidates = []
        self.leader = None
        self.observer = None

    def join(self):
        zk = connect(self.opt["zk"])
        i = len(self.candidates)
        self.candidates.append(zk)
        election = zk.Election(self.opt["path"], "candidate-%d" % i)
        forever = threading.Event()

        def lead():
            self.elected.put((i, time.monotonic_ns()))
            forever.wait()  # lead until the session is stopped

        def campaign():
            try:
                election.run(lead)
            except Exception:  # the session was stopped
                pass

        threading.Thread(target=campaign, daemon=True).start()

    def next(self):
        try:
            return self.elected.get(timeout=TIMEOUT_S)
        except queue.Empty:
            raise RuntimeError("no leader within %ss" % TIMEOUT_S)

    def prepare(self):
        if self.leader is None:
            self.observer = connect(self.opt["zk"])
            for _ in range(self.k):
                self.join()
            self.leader = self.next()[0]
        else:
            self.join()
        deadline = time.monotonic() + TIMEOUT_S
        while True:  # wait until k candidates are in line
            path = self.opt["path"]
            kids = []
            if self.observer.exists(path):
                kids = self.observer.get_children(path)
            c = sum(1 for kid in kids if "__lock__" in kid)
            if c >= self.k:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("%d of %d candidates in line after %ss"
                                   % (c, self.k, TIMEOUT_S))
            time.sleep(0.001)

    def round(self):
        t0 = time.monotonic_ns()
        self.candidates[self.leader].stop()
        i, at = self.next()
        self.candidates[self.leader].close()
        self.leader = i
        return at - t0, 1


class Group(object):
    """k members, each a kazoo Party on one of up to 16 sessions to
    members_zk, and a watcher: a ChildrenWatch on the path on its own
    session, counting the party's members in each list it is given. A round
    is one change, a member joining (the next round, leaving), and ends when
    the watcher's function has seen the party at its new size."""

    def __init__(self, opt):
        self.opt = opt
        self.path = opt["path"]
        self.k = int(opt.get("members", "10"))
        self.rounds = int(opt["n"])
        self.cond = threading.Condition()
        self.size = -1  # guarded by cond
        self.at = 0  # guarded by cond: when size last changed
        self.spare = None
        self.joined = False

    def seen(self, children):
        c = sum(1 for kid in children if "__party__" in kid)
        with self.cond:
            if c != self.size:
                self.size = c
                self.at = time.monotonic_ns()
                self.cond.notify_all()

    def wait_size(self, want):
        deadline = time.monotonic() + TIMEOUT_S
        with self.cond:
            while self.size != want:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError("party of %d, want %d after %ss"
                                       % (self.size, want, TIMEOUT_S))
                self.cond.wait(left)
            return self.at

    def prepare(self):
        if self.spare is None:
            hosts = self.opt.get("members_zk", self.opt["zk"])
            clients = [connect(hosts) for _ in range(min(self.k, 16))]
            for i in range(self.k):
                clients[i % len(clients)].Party(self.path, "m%d" % i).join()
            self.spare = clients[0].Party(self.path, "changing")
            connect(self.opt["zk"]).ChildrenWatch(self.path, self.seen)
        self.wait_size(self.k + 1 if self.joined else self.k)

    def round(self):
        t0 = time.monotonic_ns()
        if self.joined:
            self.spare.leave()
        else:
            self.spare.join()
        self.joined = not self.joined
        return self.wait_size(self.k + 1 if self.joined else self.k) - t0, 1


def rss():
    """The process's resident memory in bytes, after a collection."""
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def cache_value(r):
    """Round r's payload, the Go benchmark's cacheValue: 32 bytes."""
    return b"v%08d" % r + b"x" * 23


class Cache(object):
    """A TreeCache of path, as kazoo's docs have it (TreeCache, listen,
    start). The first round starts it and ends at its INITIALIZED event; it
    reports the memory the cache took (the process's resident memory after
    a collection, before and after: Python keeps what it allocated). Each
    later round is one change: the writer's own session (writer_zk, not
    through the counting proxy) sets one node's data to a value not written
    before, and the round ends when the listener has seen that value."""

    def __init__(self, opt):
        self.opt = opt
        self.path = opt["path"]
        self.nodes = int(opt.get("nodes", "1000"))
        self.changes = int(opt.get("changes", "200"))
        self.spread = int(opt.get("spread", "10"))
        self.rounds = 1 + self.changes + 2
        self.load_timeout = float(opt.get("load_timeout_s", TIMEOUT_S))
        self.cond = threading.Condition()
        self.init_at = 0  # guarded by cond
        self.want = set()  # guarded by cond: the paths not seen yet
        self.want_data = None  # guarded by cond: the value they are set to
        self.seen_at = 0  # guarded by cond: when the last was seen
        self.cache = None
        self.writer = None
        self.r = 0

    def prepare(self):
        if self.writer is None:
            self.writer = connect(self.opt.get("writer_zk", self.opt["zk"]))
            self.reader = connect(self.opt["zk"])

    def listen(self, ev):
        with self.cond:
            if ev.event_type == TreeEvent.INITIALIZED:
                self.init_at = time.monotonic_ns()
                self.cond.notify_all()
            elif ev.event_type in (TreeEvent.NODE_ADDED, TreeEvent.NODE_UPDATED):
                d = ev.event_data
                if d.data == self.want_data and d.path in self.want:
                    self.want.discard(d.path)
                    if not self.want:
                        self.seen_at = time.monotonic_ns()
                        self.cond.notify_all()

    def wait(self, done, t0, timeout, what):
        with self.cond:
            while not done():
                left = t0 / 1e9 + timeout - time.monotonic()
                if left <= 0:
                    raise RuntimeError("%s after %ss" % (what(), timeout))
                self.cond.wait(left)

    def round(self):
        if self.cache is None:
            return self.load()
        return self.change()

    def load(self):
        before = rss()
        t0 = time.monotonic_ns()
        self.cache = TreeCache(self.reader, self.path)
        self.cache.listen(self.listen)
        self.cache.start()
        self.wait(lambda: self.init_at, t0, self.load_timeout,
                  lambda: "load: not initialized, %d nodes cached"
                  % len(self.cache.get_children(self.path, set())))
        n = len(self.cache.get_children(self.path, set()))
        return self.init_at - t0, n, rss() - before

    def change(self):
        """Sets one node (after the changes: spread nodes spread over the
        tree, the Go benchmark's cacheNodes) to a new value and waits until
        the listener has seen them all."""
        self.r += 1
        k = self.spread if self.r > self.changes else 1
        paths = ["%s/n-%06d" % (self.path, (self.r * 7919 + j * (self.nodes // k)) % self.nodes)
                 for j in range(k)]
        v = cache_value(self.r)
        with self.cond:
            self.want, self.want_data, self.seen_at = set(paths), v, 0
        t0 = time.monotonic_ns()
        for p in paths:
            self.writer.set(p, v)
        self.wait(lambda: self.seen_at, t0, TIMEOUT_S,
                  lambda: "round %d: %s not seen" % (self.r, sorted(self.want)))
        return self.seen_at - t0, 1


def main(argv):
    opt = {}
    for a in argv:
        key, eq, value = a.partition("=")
        if not eq:
            raise ValueError("argument %r is not key=value" % a)
        opt[key] = value
    workload = opt["workload"]
    if workload == "lock":
        w = Locks(opt, 1)
    elif workload == "lock-contended":
        w = Locks(opt, int(opt.get("clients", "8")))
    elif workload == "queue":
        w = Queue(opt)
    elif workload == "lockingqueue":
        w = LockingQueue(opt)
    elif workload == "election":
        w = Election(opt)
    elif workload == "group":
        w = Group(opt)
    elif workload == "cache":
        w = Cache(opt)
    else:
        raise ValueError("unknown workload %r" % workload)
    try:
        for _ in range(w.rounds):
            w.prepare()
            print("ready", flush=True)
            line = sys.stdin.readline().strip()
            if line in ("", "quit"):
                return
            if line != "go":
                raise ValueError("expected go, got %r" % line)
            res = w.round()
            extra = " mem=%d" % res[2] if len(res) > 2 else ""
            print("done ns=%d n=%d%s" % (res[0], res[1], extra), flush=True)
        for line in sys.stdin:
            if line.strip() == "quit":
                break
    finally:
        for w in workers:
            w.close()
        for zk in sessions:
            stop(zk)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Exception as e:
        print("error %r" % (e,), flush=True)
        sys.stdout.flush()
        os._exit(1)
    sys.stdout.flush()
    os._exit(0)  # daemon threads may still wait on stopped sessions
