// CuratorBench is the Apache Curator peer of zkgen's benchmarks
// (runtime/bench/peers_test.go): it runs one workload with Curator's recipes
// on its own sessions and threads, times only the measured part itself, and
// talks to the Go benchmark through a line protocol:
//
//	stdout: ready                  sessions connected, parents created,
//	                               warm-up done: waiting for go
//	stdin:  go                     run one measured round
//	stdout: done ns=<t> n=<k>      the round took t ns for k operations
//	stdin:  quit (or end of input) close the sessions and exit 0
//
// The lock and queue workloads have one round of n operations; the election
// and group workloads have n rounds of one failover or one change each (they
// print ready again once the next round is set up). On an error it prints "error <message>" and exits 1.
//
// Arguments are key=value pairs:
//
//	zk=127.0.0.1:2181  connect string (the Go benchmark's counting proxy)
//	workload=lock      lock           one session, InterProcessMutex
//	                   lock-contended clients sessions, one mutex each
//	                   queue          producers + consumers sessions,
//	                                  DistributedQueue
//	                   election       clients sessions, one LeaderLatch each
//	                   group          members ephemeral member nodes, a
//	                                  CuratorCache watching them
//	                   cache          a CuratorCache of path: the first
//	                                  round loads it, each later one is
//	                                  one change seen by its listener
//	path=/bench/x      the recipe's path
//	n=1000             operations (queue: items; election: failovers)
//	clients=8          sessions (lock-contended, election)
//	members=10         group members (group)
//	members_zk=...     connect string for the members' sessions (group;
//	                   default zk)
//	producers=4
//	consumers=4
//	item_bytes=0       queue: items of JSON of this many bytes (0: 16 bytes)
//	lock_path=0        queue: 1 gives the consumers a lock path (the
//	                   at-least-once DistributedQueue)
//	nodes=1000         cache: the nodes under path (n-000000, ...)
//	changes=200        cache: the rounds after the load (and 2 more, the
//	                   Go benchmark's reconnection and expiry rounds)
//	spread=10          cache: the nodes each of the last 2 rounds sets
//	writer_zk=...      cache: connect string of the writer's session
//	load_timeout_s=120 cache: bound on the load
//	warmup_ms=1000     before ready, run the workload for this long (at
//	                   least one operation) to warm the JIT (not for
//	                   election)
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;

public final class CuratorBench {
    /** Bound on any single wait (an acquire, a leader, the queue draining). */
    private static final long TIMEOUT_S = 120;

    /** A workload: prepare is called before each ready, round after each go. */
    private interface Workload {
        int rounds();

        void prepare() throws Exception;

        /** Runs one measured round and returns {elapsed ns, operations}. */
        long[] round() throws Exception;

        void close();
    }

    /**
     * A JSON item of exactly size bytes (at least 18), the same bytes as the
     * Go benchmark's jsonItem: {"i":"000001","p":"xx..."}.
     */
    static byte[] jsonItem(int size) {
        StringBuilder sb = new StringBuilder("{\"i\":\"000001\",\"p\":\"");
        while (sb.length() < size - 2) {
            sb.append('x');
        }
        return sb.append("\"}").toString().getBytes(StandardCharsets.UTF_8);
    }

    private static String zk;
    private static final List<CuratorFramework> clients = new ArrayList<>();

    public static void main(String[] args) {
        Map<String, String> opt = new HashMap<>();
        for (String a : args) {
            int eq = a.indexOf('=');
            if (eq < 0) {
                fail("argument " + a + " is not key=value");
            }
            opt.put(a.substring(0, eq), a.substring(eq + 1));
        }
        try {
            zk = need(opt, "zk");
            String path = need(opt, "path");
            int n = Integer.parseInt(need(opt, "n"));
            long warmup = Long.parseLong(opt.getOrDefault("warmup_ms", "1000"));
            int nclients = Integer.parseInt(opt.getOrDefault("clients", "8"));
            int producers = Integer.parseInt(opt.getOrDefault("producers", "4"));
            int consumers = Integer.parseInt(opt.getOrDefault("consumers", "4"));
            Workload w;
            switch (need(opt, "workload")) {
                case "lock":
                    w = new Locks(path, 1, n, warmup);
                    break;
                case "lock-contended":
                    w = new Locks(path, nclients, n, warmup);
                    break;
                case "queue":
                    Queue q = new Queue(path, producers, consumers, n, warmup,
                            opt.getOrDefault("lock_path", "0").equals("1"));
                    int size = Integer.parseInt(opt.getOrDefault("item_bytes", "0"));
                    if (size > 0) {
                        q.payload = jsonItem(size);
                    }
                    w = q;
                    break;
                case "election":
                    w = new Election(path, nclients, n);
                    break;
                case "group":
                    w = new Group(path, Integer.parseInt(opt.getOrDefault("members", "10")), n,
                            opt.getOrDefault("members_zk", zk));
                    break;
                case "cache":
                    w = new Cache(path, opt);
                    break;
                default:
                    throw new IllegalArgumentException("unknown workload " + opt.get("workload"));
            }
            run(w);
        } catch (Throwable e) {
            fail(e.toString());
        }
        System.exit(0);
    }

    private static void run(Workload w) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            for (int r = 0; r < w.rounds(); r++) {
                w.prepare();
                System.out.println("ready");
                System.out.flush();
                String line = in.readLine();
                if (line == null || line.equals("quit")) {
                    return;
                }
                if (!line.equals("go")) {
                    throw new IllegalArgumentException("expected go, got " + line);
                }
                long[] res = w.round();
                System.out.println("done ns=" + res[0] + " n=" + res[1] + (res.length > 2 ? " mem=" + res[2] : ""));
                System.out.flush();
            }
            for (String line; (line = in.readLine()) != null && !line.equals("quit");) {
                // wait for the benchmark to finish with us
            }
        } finally {
            w.close();
            for (CuratorFramework c : clients) {
                c.close();
            }
        }
    }

    private static void fail(String msg) {
        System.out.println("error " + msg.replace('\n', ' '));
        System.out.flush();
        System.exit(1);
    }

    private static String need(Map<String, String> opt, String key) {
        String v = opt.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing argument " + key + "=...");
        }
        return v;
    }

    /** connect opens one session (a CuratorFramework) and waits until it is connected. */
    private static CuratorFramework connect() throws InterruptedException {
        return connect(zk);
    }

    /** connect opens one session to hosts. */
    private static CuratorFramework connect(String hosts) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(hosts)
                .sessionTimeoutMs(10_000) // as the Go benchmark's sessions
                .connectionTimeoutMs(15_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        c.start();
        if (!c.blockUntilConnected((int) TIMEOUT_S, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection to " + zk + " within " + TIMEOUT_S + "s");
        }
        synchronized (clients) {
            clients.add(c);
        }
        return c;
    }

    /** warm runs batch until ms have passed, at least once. */
    private interface Batch {
        void run() throws Exception;
    }

    private static void warm(long ms, Batch batch) throws Exception {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        do {
            batch.run();
        } while (System.nanoTime() < until);
    }

    /**
     * runThreads runs body(i) on k threads started together and returns the
     * elapsed time from the start until all have returned.
     */
    private interface Body {
        void run(int i) throws Exception;
    }

    private static long runThreads(int k, Body body) throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < k; i++) {
            int id = i;
            Thread t = new Thread(() -> {
                try {
                    gate.await();
                    body.run(id);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            t.start();
            ts.add(t);
        }
        long t0 = System.nanoTime();
        gate.countDown();
        for (Thread t : ts) {
            t.join();
        }
        long elapsed = System.nanoTime() - t0;
        if (failure.get() != null) {
            throw new Exception(failure.get().toString(), failure.get());
        }
        return elapsed;
    }

    /**
     * Locks: k sessions, one InterProcessMutex each on one path, k threads
     * taking a shared count of acquire+release cycles (k = 1: uncontended).
     */
    private static final class Locks implements Workload {
        private final List<InterProcessMutex> mutexes = new ArrayList<>();
        private final int n;
        private final long warmup;

        Locks(String path, int k, int n, long warmup) throws Exception {
            for (int i = 0; i < k; i++) {
                mutexes.add(new InterProcessMutex(connect(), path));
            }
            this.n = n;
            this.warmup = warmup;
        }

        public int rounds() {
            return 1;
        }

        public void prepare() throws Exception {
            warm(warmup, () -> cycles(50)); // creates the parents, warms the JIT
        }

        public long[] round() throws Exception {
            return new long[] {cycles(n), n};
        }

        private long cycles(int total) throws Exception {
            AtomicInteger left = new AtomicInteger(total);
            return runThreads(mutexes.size(), i -> {
                InterProcessMutex m = mutexes.get(i);
                while (left.getAndDecrement() > 0) {
                    if (!m.acquire(TIMEOUT_S, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("lock not acquired within " + TIMEOUT_S + "s");
                    }
                    m.release();
                }
            });
        }

        public void close() {}
    }

    /**
     * Queue: producers and consumers on their own sessions, each with its own
     * DistributedQueue on one path (a FIFO of sequential nodes; a consumer
     * reads and deletes an item before its callback sees it, so each item is
     * consumed once). Producers put synchronously (putInBackground false),
     * one item per put, like zkgen's Put: Curator's default, putting in the
     * background, returns before the item is stored, drops a failed put
     * unreported, and was slower here (BENCHMARKS-LOG.md, "Peers as their
     * docs have them"). A round ends when the consumers' callbacks have seen
     * all its items.
     */
    private static final class Queue implements Workload {
        private static final byte[] PAYLOAD = "0123456789abcdef".getBytes(StandardCharsets.UTF_8);
        private byte[] payload = PAYLOAD;
        private final List<DistributedQueue<byte[]>> put = new ArrayList<>();
        private final List<DistributedQueue<byte[]>> take = new ArrayList<>();
        private final Object mu = new Object();
        private long consumed; // guarded by mu
        private long target; // guarded by mu
        private final int n;
        private final long warmup;

        /** locked: with a lock path, the at-least-once queue (an item stays until its consumer returns). */
        Queue(String path, int producers, int consumers, int n, long warmup, boolean locked) throws Exception {
            QueueSerializer<byte[]> bytes = new QueueSerializer<byte[]>() {
                public byte[] serialize(byte[] item) {
                    return item;
                }

                public byte[] deserialize(byte[] b) {
                    return b;
                }
            };
            QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
                public void consumeMessage(byte[] item) {
                    synchronized (mu) {
                        consumed++;
                        if (consumed >= target) {
                            mu.notifyAll();
                        }
                    }
                }

                public void stateChanged(CuratorFramework c, ConnectionState s) {}
            };
            for (int i = 0; i < producers; i++) {
                DistributedQueue<byte[]> q = QueueBuilder.builder(connect(), null, bytes, path)
                        .putInBackground(false).buildQueue();
                q.start();
                put.add(q);
            }
            for (int i = 0; i < consumers; i++) {
                QueueBuilder<byte[]> b = QueueBuilder.builder(connect(), consumer, bytes, path);
                if (locked) {
                    b = b.lockPath(path + "-locks");
                }
                DistributedQueue<byte[]> q = b.buildQueue();
                q.start();
                take.add(q);
            }
            this.n = n;
            this.warmup = warmup;
        }

        public int rounds() {
            return 1;
        }

        public void prepare() throws Exception {
            warm(warmup, () -> items(50));
        }

        public long[] round() throws Exception {
            return new long[] {items(n), n};
        }

        /** items puts total items and waits until they are consumed. */
        private long items(int total) throws Exception {
            long until;
            synchronized (mu) {
                target += total;
                until = target;
            }
            int k = put.size();
            long t0 = System.nanoTime();
            runThreads(k, i -> {
                int share = total / k + (i < total % k ? 1 : 0);
                for (int j = 0; j < share; j++) {
                    put.get(i).put(payload);
                }
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
            synchronized (mu) {
                while (consumed < until) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        throw new IllegalStateException("consumed " + consumed + " of " + until + " items within " + TIMEOUT_S + "s");
                    }
                    TimeUnit.NANOSECONDS.timedWait(mu, left);
                }
                if (consumed != until) {
                    throw new IllegalStateException("consumed " + consumed + " items, put " + until);
                }
            }
            return System.nanoTime() - t0;
        }

        public void close() {
            for (DistributedQueue<byte[]> q : take) {
                try {
                    q.close();
                } catch (Exception e) {
                    // closing anyway
                }
            }
            for (DistributedQueue<byte[]> q : put) {
                try {
                    q.close();
                } catch (Exception e) {
                    // closing anyway
                }
            }
        }
    }

    /**
     * Election: k candidates, each a LeaderLatch on its own session. A round
     * closes the leader's session (CuratorFramework.close, which ends the
     * ZooKeeper session) and ends when the next latch's listener is told
     * isLeader. Between rounds (untimed) a new candidate joins so that k
     * stay in line.
     */
    private static final class Election implements Workload {
        private final String path;
        private final int k, n;
        private final BlockingQueue<long[]> elected = new LinkedBlockingQueue<>(); // {candidate, ns}
        private final List<CuratorFramework> sessions = new ArrayList<>();
        private final List<LeaderLatch> latches = new ArrayList<>();
        private int leader = -1;
        private CuratorFramework observer;

        Election(String path, int k, int n) throws Exception {
            this.path = path;
            this.k = k;
            this.n = n;
        }

        public int rounds() {
            return n;
        }

        private void join() throws Exception {
            int id = sessions.size();
            CuratorFramework c = connect();
            LeaderLatch l = new LeaderLatch(c, path, "candidate-" + id);
            l.addListener(new LeaderLatchListener() {
                public void isLeader() {
                    elected.add(new long[] {id, System.nanoTime()});
                }

                public void notLeader() {}
            });
            sessions.add(c);
            latches.add(l);
            l.start();
        }

        public void prepare() throws Exception {
            if (leader < 0) {
                observer = connect();
                for (int i = 0; i < k; i++) {
                    join();
                }
                leader = (int) next()[0];
            } else {
                join();
            }
            // wait until k latch nodes are in line
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
            for (;;) {
                int c = 0;
                if (observer.checkExists().forPath(path) != null) {
                    for (String kid : observer.getChildren().forPath(path)) {
                        if (kid.contains("latch-")) {
                            c++;
                        }
                    }
                }
                if (c >= k) {
                    return;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(c + " of " + k + " candidates in line after " + TIMEOUT_S + "s");
                }
                Thread.sleep(1);
            }
        }

        private long[] next() throws InterruptedException {
            long[] e = elected.poll(TIMEOUT_S, TimeUnit.SECONDS);
            if (e == null) {
                throw new IllegalStateException("no leader within " + TIMEOUT_S + "s");
            }
            return e;
        }

        public long[] round() throws Exception {
            long t0 = System.nanoTime();
            sessions.get(leader).close();
            long[] e = next();
            leader = (int) e[0];
            return new long[] {e[1] - t0, 1};
        }

        public void close() {}
    }

    /**
     * Group: k members, each an ephemeral node member-<i> under path (the
     * node GroupMember's PersistentNode keeps; GroupMember itself would give
     * every member its own cache), on up to 16 sessions to members_zk, and a
     * watcher: a CuratorCache on path on its own session, counting the
     * children it is told of. A round is one change, a member joining (the
     * next round, leaving), and ends when the cache's listener has seen the
     * group at its new size.
     */
    private static final class Group implements Workload {
        private final String path, membersZk;
        private final int k, n;
        private final List<CuratorFramework> members = new ArrayList<>();
        private final Object mu = new Object();
        private int size; // guarded by mu: the children the cache was told of
        private long at; // guarded by mu: when size last changed
        private CuratorCache cache;
        private boolean joined;

        Group(String path, int k, int n, String membersZk) {
            this.path = path;
            this.k = k;
            this.n = n;
            this.membersZk = membersZk;
        }

        public int rounds() {
            return n;
        }

        private void seen(String p, int delta) {
            if (!p.startsWith(path + "/")) {
                return; // the directory itself
            }
            synchronized (mu) {
                size += delta;
                at = System.nanoTime();
                mu.notifyAll();
            }
        }

        /** waitSize waits until the cache has seen want children; returns when. */
        private long waitSize(int want) throws Exception {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
            synchronized (mu) {
                while (size != want) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        throw new IllegalStateException("group of " + size + ", want " + want + " after " + TIMEOUT_S + "s");
                    }
                    TimeUnit.NANOSECONDS.timedWait(mu, left);
                }
                return at;
            }
        }

        public void prepare() throws Exception {
            if (cache == null) {
                for (int i = 0; i < Math.min(k, 16); i++) {
                    members.add(connect(membersZk));
                }
                for (int i = 0; i < k; i++) {
                    members.get(i % members.size()).create().creatingParentContainersIfNeeded()
                            .withMode(CreateMode.EPHEMERAL).forPath(path + "/member-" + i);
                }
                cache = CuratorCache.build(connect(), path);
                cache.listenable().addListener(CuratorCacheListener.builder()
                        .forCreates(d -> seen(d.getPath(), 1))
                        .forDeletes(d -> seen(d.getPath(), -1))
                        .build());
                cache.start();
            }
            waitSize(joined ? k + 1 : k);
        }

        public long[] round() throws Exception {
            long t0 = System.nanoTime();
            String changing = path + "/member-changing";
            if (joined) {
                members.get(0).delete().forPath(changing);
            } else {
                members.get(0).create().withMode(CreateMode.EPHEMERAL).forPath(changing);
            }
            joined = !joined;
            return new long[] {waitSize(joined ? k + 1 : k) - t0, 1};
        }

        public void close() {
            if (cache != null) {
                cache.close();
            }
        }
    }

    /**
     * Cache: a CuratorCache of path, built as Curator's docs have it
     * (CuratorCache.build, a listener, start). The first round builds and
     * starts it and ends when the listener's initialized is called; it
     * reports the heap the cache took (used heap after full collections,
     * before and after). Each later round is one change: the writer's own
     * session (writer_zk, not through the counting proxy) sets one node's
     * data to a value not written before, and the round ends when the
     * listener has seen that value.
     */
    private static final class Cache implements Workload {
        private final String path, writerZk;
        private final int nodes, rounds;
        private final long loadTimeoutS;
        private final Object mu = new Object();
        private CuratorFramework writer, reader;
        private CuratorCache cache;
        private long initAt; // guarded by mu: when initialized was called
        private final int changes, spread;
        private final java.util.Set<String> want = new java.util.HashSet<>(); // guarded by mu: the paths not seen yet
        private byte[] wantData; // guarded by mu: the value they are set to
        private long seenAt; // guarded by mu: when the last was seen, 0 before
        private int round;

        Cache(String path, Map<String, String> opt) {
            this.path = path;
            this.writerZk = opt.getOrDefault("writer_zk", zk);
            this.nodes = Integer.parseInt(opt.getOrDefault("nodes", "1000"));
            this.changes = Integer.parseInt(opt.getOrDefault("changes", "200"));
            this.spread = Integer.parseInt(opt.getOrDefault("spread", "10"));
            this.rounds = 1 + changes + 2;
            this.loadTimeoutS = Long.parseLong(opt.getOrDefault("load_timeout_s", String.valueOf(TIMEOUT_S)));
        }

        /** value is round r's payload, the Go benchmark's cacheValue: 32 bytes. */
        static byte[] value(int r) {
            return (String.format("v%08d", r) + "x".repeat(23)).getBytes(StandardCharsets.UTF_8);
        }

        public int rounds() {
            return rounds;
        }

        public void prepare() throws Exception {
            if (writer == null) {
                writer = connect(writerZk);
                reader = connect();
            }
        }

        private void seen(ChildData d) {
            synchronized (mu) {
                if (Arrays.equals(d.getData(), wantData) && want.remove(d.getPath()) && want.isEmpty()) {
                    seenAt = System.nanoTime();
                    mu.notifyAll();
                }
            }
        }

        private static long usedHeap() {
            for (int i = 0; i < 3; i++) {
                System.gc();
            }
            return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        }

        public long[] round() throws Exception {
            return cache == null ? load() : change();
        }

        private long[] load() throws Exception {
            long before = usedHeap();
            long t0 = System.nanoTime();
            cache = CuratorCache.build(reader, path);
            cache.listenable().addListener(CuratorCacheListener.builder()
                    .forInitialized(() -> {
                        synchronized (mu) {
                            initAt = System.nanoTime();
                            mu.notifyAll();
                        }
                    })
                    .forCreates(this::seen)
                    .forChanges((old, now) -> seen(now))
                    .build());
            cache.start();
            long deadline = t0 + TimeUnit.SECONDS.toNanos(loadTimeoutS);
            synchronized (mu) {
                while (initAt == 0) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        throw new IllegalStateException("load: not initialized after " + loadTimeoutS + "s, "
                                + cache.size() + " nodes cached");
                    }
                    TimeUnit.NANOSECONDS.timedWait(mu, left);
                }
            }
            long elapsed = initAt - t0;
            return new long[] {elapsed, cache.size() - 1, usedHeap() - before}; // size counts path itself
        }

        /**
         * change sets one node (after the changes: spread nodes spread over
         * the tree, the Go benchmark's cacheNodes) to a new value and waits
         * until the listener has seen them all.
         */
        private long[] change() throws Exception {
            round++;
            int k = round > changes ? spread : 1;
            List<String> paths = new ArrayList<>();
            for (int j = 0; j < k; j++) {
                paths.add(String.format("%s/n-%06d", path, (int) (((long) round * 7919 + (long) j * (nodes / k)) % nodes)));
            }
            byte[] v = value(round);
            synchronized (mu) {
                want.clear();
                want.addAll(paths);
                wantData = v;
                seenAt = 0;
            }
            long t0 = System.nanoTime();
            for (String p : paths) {
                writer.setData().forPath(p, v);
            }
            long deadline = t0 + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
            synchronized (mu) {
                while (seenAt == 0) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        throw new IllegalStateException("round " + round + ": " + want + " not seen after " + TIMEOUT_S + "s");
                    }
                    TimeUnit.NANOSECONDS.timedWait(mu, left);
                }
                return new long[] {seenAt - t0, 1};
            }
        }

        public void close() {
            if (cache != null) {
                cache.close();
            }
        }
    }
}
