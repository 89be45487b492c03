"""A contender for zkgen's interoperability tests.

It takes kazoo locks (or leads a kazoo election, takes a semaphore lease,
adds to a counter) on one path over and over and tells the Go test's
referee (a line-based TCP server on 127.0.0.1) each time it enters and
leaves its critical section.

Arguments are key=value pairs:

    zk=127.0.0.1:2181    ZooKeeper hosts
    path=/some/lock      lock path
    referee=127.0.0.1:N  the referee's address
    name=kazoo1          contender name prefix
    roles=m,r,w          one thread per role: m = Lock, r = ReadLock,
                         w = WriteLock, e = Election (its leadership is
                         the critical section, mode x), s = Semaphore
                         (mode s), c = Counter(support_curator=True):
                         each cycle adds 1, then enters and leaves (mode r),
                         g = Party: each cycle joins, waits until the party
                         has `members` members, prints them ("members ..."),
                         enters and leaves (mode r), and leaves the party
    leases=1             the semaphore's max_leases
    members=1            the party size a g thread waits for
    cycles=50            lock/unlock cycles per thread
    hold_ms_r=0          time spent inside a read critical section
    hold_ms_x=0          time spent inside an exclusive critical section
    timeout_s=60         bound on each acquire (a stall fails the contender)

Each thread is its own lock object, so its own contender; the threads share
one KazooClient (one ZooKeeper session). Each thread opens its own referee
connection and speaks:

    hello <who>         -> go   (once every contender of the test said hello)
    enter <who> <mode>  -> ok   (mode x = exclusive, r = shared,
                                 s = one of a semaphore's leases)
    exit <who> <mode>   -> ok

It prints one "summary" line per thread and exits 0, or prints the error and
exits 1.
"""

import socket
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.version import __version__ as kazoo_version


class Referee(object):
    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = self.sock.makefile("r", encoding="utf-8", newline="\n")

    def call(self, line, want):
        self.sock.sendall((line + "\n").encode("utf-8"))
        got = self.rfile.readline().rstrip("\n")
        if got != want:
            raise RuntimeError("referee answered %r to %r" % (got, line))

    def close(self):
        self.rfile.close()
        self.sock.close()


def run(sec, who, mode, referee, cycles, hold, timeout):
    start = time.monotonic()
    ref = Referee(referee)

    def body():
        ref.call("enter %s %s" % (who, mode), "ok")
        if hold > 0:
            time.sleep(hold)  # the work done under the lock
        ref.call("exit %s %s" % (who, mode), "ok")

    try:
        ref.call("hello " + who, "go")
        for i in range(cycles):
            try:
                sec.cycle(body, timeout)
            except Exception as e:
                raise RuntimeError("cycle %d: %r" % (i, e))
    finally:
        ref.close()
    ms = int((time.monotonic() - start) * 1000)
    print("summary who=%s cycles=%d ms=%d kazoo=%s"
          % (who, cycles, ms, kazoo_version), flush=True)


class ElectionSection(object):
    """An Election as a section: run() blocks until elected and returns
    when the body returns, resigning."""

    def __init__(self, election):
        self.election = election

    def cycle(self, body, timeout):
        self.election.run(body)


class LockSection(object):
    """A Lock, ReadLock, WriteLock or Semaphore as a section."""

    def __init__(self, lock):
        self.lock = lock

    def cycle(self, body, timeout):
        if not self.lock.acquire(timeout=timeout):
            raise RuntimeError("not acquired within %ss" % timeout)
        try:
            body()
        finally:
            self.lock.release()


class CounterSection(object):
    """A Counter: each cycle adds 1 (compare-and-set, retried by the
    client's command_retry), then runs the body."""

    def __init__(self, counter):
        self.counter = counter

    def cycle(self, body, timeout):
        self.counter += 1
        body()


class PartySection(object):
    """A Party: see the g role above."""

    def __init__(self, zk, path, who, expect):
        self.zk, self.path, self.who, self.expect = zk, path, who, expect
        self.party = zk.Party(path, who)

    def cycle(self, body, timeout):
        self.party.join()
        try:
            while True:
                changed = threading.Event()
                self.zk.get_children(self.path, watch=lambda e: changed.set())
                seen = sorted(self.party)
                if len(seen) >= self.expect:
                    break
                if not changed.wait(timeout):
                    raise RuntimeError("party has %d of %d members after %ss"
                                       % (len(seen), self.expect, timeout))
            print("members who=%s saw=%s" % (self.who, ",".join(seen)),
                  flush=True)
            body()
        finally:
            self.party.leave()


def section(zk, role, path, who, leases, members=1):
    """Returns the section of a role and its referee mode."""
    if role == "m":
        return LockSection(zk.Lock(path, who)), "x"
    if role == "r":
        return LockSection(zk.ReadLock(path, who)), "r"
    if role == "w":
        return LockSection(zk.WriteLock(path, who)), "x"
    if role == "e":
        return ElectionSection(zk.Election(path, who)), "x"
    if role == "s":
        return LockSection(zk.Semaphore(path, who, max_leases=leases)), "s"
    if role == "c":
        return CounterSection(zk.Counter(path, support_curator=True)), "r"
    if role == "g":
        return PartySection(zk, path, who, members), "r"
    raise SystemExit("unknown role %r" % role)


def main(argv):
    opt = {}
    for a in argv:
        key, eq, value = a.partition("=")
        if not eq:
            raise SystemExit("argument %r is not key=value" % a)
        opt[key] = value
    roles = opt["roles"].split(",")
    cycles = int(opt.get("cycles", "50"))
    hold_r = int(opt.get("hold_ms_r", "0")) / 1000.0
    hold_x = int(opt.get("hold_ms_x", "0")) / 1000.0
    timeout = float(opt.get("timeout_s", "60"))

    leases = int(opt.get("leases", "1"))
    members = int(opt.get("members", "1"))

    # Unbounded command retries: a counter's compare-and-set retries until
    # it wins, however many writers race it.
    zk = KazooClient(hosts=opt["zk"], timeout=10.0,
                     command_retry={"max_tries": -1, "max_delay": 0.5})
    zk.start(timeout=timeout)
    failures = []
    try:
        threads = []
        for i, role in enumerate(roles):
            who = "%s-%d-%s" % (opt["name"], i, role)
            lock, mode = section(zk, role, opt["path"], who, leases, members)
            hold = hold_r if mode == "r" else hold_x

            def body(lock=lock, who=who, mode=mode, hold=hold):
                try:
                    run(lock, who, mode, opt["referee"], cycles, hold, timeout)
                except Exception as e:  # reported below, exit status 1
                    failures.append("%s: %r" % (who, e))

            th = threading.Thread(target=body, name=who)
            threads.append(th)
            th.start()
        for th in threads:
            th.join()
    finally:
        zk.stop()
        zk.close()
    if failures:
        for f in failures:
            print("error " + f, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
