"""The kazoo side of zkgen's cache interoperability test
(runtime/interop/cache_test.go): it runs a kazoo TreeCache of one path, as
kazoo's docs have it (TreeCache, listen, start), and prints a line for each
event its listener is given:

    created <path> <data>      (NODE_ADDED)
    changed <path> <data>      (NODE_UPDATED)
    deleted <path>             (NODE_REMOVED)
    initialized                (INITIALIZED)

Arguments are key=value pairs: zk=127.0.0.1:2181 (hosts), path=/some/base.
It runs until its input ends or says quit, and exits 0; on an error it
prints "error <message>" and exits 1.
"""

import os
import sys
import threading

from kazoo.client import KazooClient
from kazoo.recipe.cache import TreeCache, TreeEvent

KINDS = {TreeEvent.NODE_ADDED: "created", TreeEvent.NODE_UPDATED: "changed"}
lock = threading.Lock()


def say(line):
    with lock:
        print(line, flush=True)


def listener(ev):
    if ev.event_type == TreeEvent.INITIALIZED:
        say("initialized")
    elif ev.event_type == TreeEvent.NODE_REMOVED:
        say("deleted %s" % ev.event_data.path)
    elif ev.event_type in KINDS:
        d = ev.event_data
        say("%s %s %s" % (KINDS[ev.event_type], d.path,
                          (d.data or b"").decode("utf-8")))


def main(argv):
    opt = dict(a.split("=", 1) for a in argv)
    zk = KazooClient(hosts=opt["zk"], timeout=10.0)
    zk.start(timeout=60)
    cache = TreeCache(zk, opt["path"])
    cache.listen(listener)
    cache.start()
    for line in sys.stdin:
        if line.strip() == "quit":
            break
    cache.close()
    zk.stop()
    zk.close()


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Exception as e:
        say("error %r" % (e,))
        os._exit(1)
    sys.stdout.flush()
    os._exit(0)
