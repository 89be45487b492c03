"""Drives kazoo's SetPartitioner through a fixed membership churn and
prints, as JSON, what each change cost: how many partitions were released
(ownership interrupted), how long until every partition was owned again,
and which members ended in FAILURE.

Arguments (key=value): zk=host:port,... path=/... partitions=64 members=5
time_boundary=seconds (kazoo's default is 30) session_timeout=seconds
changes=join,leave,expire,join,... (the churn, one change at a time, each
after the previous settled or settle_timeout seconds passed).
"""
import json
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.partitioner import SetPartitioner

args = dict(a.split("=", 1) for a in sys.argv[1:])
ZK = args["zk"]
PATH = args["path"]
N = int(args.get("partitions", "64"))
M = int(args.get("members", "5"))
BOUNDARY = float(args.get("time_boundary", "1"))
SESSION = float(args.get("session_timeout", "4"))
CHANGES = args.get("changes", "join,leave,expire,join,leave").split(",")
SETTLE = float(args.get("settle_timeout", "60"))

lock = threading.Lock()
owner = {}  # partition -> member name
released = 0  # partitions released since the last change
failed = []


class Member:
    def __init__(self, name):
        self.name = name
        self.client = KazooClient(hosts=ZK, timeout=SESSION)
        self.client.start()
        self.p = SetPartitioner(self.client, PATH, set(range(N)), identifier=name,
                                time_boundary=BOUNDARY)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        global released
        held = []
        while not self.stop.is_set():
            p = self.p
            if p.failed:
                with lock:
                    for i in held:
                        owner.pop(i, None)
                    failed.append(self.name)
                return
            if p.release:
                with lock:
                    for i in held:
                        if owner.get(i) == self.name:
                            del owner[i]
                        released += 1
                held = []
                p.release_set()
            elif p.acquired:
                now = list(p)
                if sorted(now) != sorted(held):
                    with lock:
                        for i in now:
                            owner[i] = self.name
                    held = now
                time.sleep(0.01)
            elif p.allocating:
                p.wait_for_acquire(timeout=1)
            else:
                time.sleep(0.01)

    def leave(self):
        self.stop.set()
        self.p.finish()
        self.client.stop()
        self.client.close()

    def expire(self):
        sid, pw = self.client.client_id
        other = KazooClient(hosts=ZK, client_id=(sid, pw), timeout=SESSION)
        other.start()
        other.stop()
        other.close()


def settled(members):
    alive = [m.name for m in members if m.name not in failed]
    with lock:
        if len(owner) != N or set(owner.values()) - set(alive):
            return False
        counts = [list(owner.values()).count(a) for a in alive]
    return bool(alive) and max(counts) - min(counts) <= 1


def main():
    global released
    members = [Member("m%d" % i) for i in range(M)]
    seq = M
    out = []
    t0 = time.time()
    while not settled(members) and time.time() - t0 < SETTLE:
        time.sleep(0.01)
    out.append({"change": "start", "settled": settled(members), "settled_s": round(time.time() - t0, 3),
                "released": released, "failed": list(failed)})
    for change in CHANGES:
        with lock:
            released = 0
        t0 = time.time()
        if change == "join":
            members.append(Member("m%d" % seq))
            seq += 1
        elif change == "leave":
            members.pop(0).leave()
        elif change == "expire":
            victim = members.pop(0)
            victim.expire()
            # Settled means without it: wait until it has noticed.
            while victim.name not in failed and time.time() - t0 < SETTLE:
                time.sleep(0.01)
            victim.stop.set()
        while not settled(members) and time.time() - t0 < SETTLE:
            time.sleep(0.01)
        ok = settled(members)
        with lock:
            out.append({"change": change, "settled": ok, "settled_s": round(time.time() - t0, 3),
                        "released": released, "owned": len(owner), "failed": list(failed)})
    print(json.dumps(out))
    for m in members:
        m.stop.set()
        try:
            m.client.stop()
            m.client.close()
        except Exception:
            pass


main()
