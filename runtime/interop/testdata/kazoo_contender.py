"""A lock contender for zkgen's interoperability tests.

It takes kazoo locks on one path over and over and tells the Go test's
referee (a line-based TCP server on 127.0.0.1) each time it enters and
leaves its critical section.

Arguments are key=value pairs:

    zk=127.0.0.1:2181    ZooKeeper hosts
    path=/some/lock      lock path
    referee=127.0.0.1:N  the referee's address
    name=kazoo1          contender name prefix
    roles=m,r,w          one thread per role: m = Lock, r = ReadLock,
                         w = WriteLock
    cycles=50            lock/unlock cycles per thread
    hold_ms_r=0          time spent inside a read critical section
    hold_ms_x=0          time spent inside an exclusive critical section
    timeout_s=60         bound on each acquire (a stall fails the contender)

Each thread is its own lock object, so its own contender; the threads share
one KazooClient (one ZooKeeper session). Each thread opens its own referee
connection and speaks:

    hello <who>         -> go   (once every contender of the test said hello)
    enter <who> <mode>  -> ok   (mode x = exclusive, r = shared)
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


def run(lock, who, mode, referee, cycles, hold, timeout):
    start = time.monotonic()
    ref = Referee(referee)
    try:
        ref.call("hello " + who, "go")
        for i in range(cycles):
            if not lock.acquire(timeout=timeout):
                raise RuntimeError(
                    "cycle %d: lock not acquired within %ss" % (i, timeout))
            try:
                ref.call("enter %s %s" % (who, mode), "ok")
                if hold > 0:
                    time.sleep(hold)  # the work done under the lock
                ref.call("exit %s %s" % (who, mode), "ok")
            finally:
                lock.release()
    finally:
        ref.close()
    ms = int((time.monotonic() - start) * 1000)
    print("summary who=%s cycles=%d ms=%d kazoo=%s"
          % (who, cycles, ms, kazoo_version), flush=True)


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

    zk = KazooClient(hosts=opt["zk"], timeout=10.0)
    zk.start(timeout=timeout)
    failures = []
    try:
        threads = []
        for i, role in enumerate(roles):
            who = "%s-%d-%s" % (opt["name"], i, role)
            if role == "m":
                lock, mode = zk.Lock(opt["path"], who), "x"
            elif role == "r":
                lock, mode = zk.ReadLock(opt["path"], who), "r"
            elif role == "w":
                lock, mode = zk.WriteLock(opt["path"], who), "x"
            else:
                raise SystemExit("unknown role %r" % role)
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
