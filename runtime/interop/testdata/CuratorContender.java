// CuratorContender is a contender for zkgen's interoperability tests: it
// takes Apache Curator locks (or leads a LeaderLatch election, takes a
// semaphore lease, adds to a counter) on one path over and over and tells
// the Go test's referee (a line-based TCP server on 127.0.0.1) each time it
// enters and leaves its critical section.
//
// Arguments are key=value pairs:
//
//	zk=127.0.0.1:2181   ZooKeeper connect string
//	path=/some/lock     lock path
//	referee=127.0.0.1:N the referee's address
//	name=curator1       contender name prefix
//	roles=m,r,w         one thread per role: m = InterProcessMutex,
//	                    r / w = read / write side of InterProcessReadWriteLock,
//	                    e = LeaderLatch (leadership is the section, mode x),
//	                    s = InterProcessSemaphoreV2 (mode s),
//	                    k = SharedCount, a = DistributedAtomicLong: each
//	                    cycle adds 1, then enters and leaves (mode r),
//	                    g = GroupMember (payload: its name): each cycle
//	                    joins, waits until the group has `members` members,
//	                    prints their payloads ("members ..."), enters and
//	                    leaves (mode r), and leaves the group
//	leases=1            the semaphore's leases
//	members=1           the group size a g thread waits for
//	cycles=50           lock/unlock cycles per thread
//	hold_ms_r=0         time spent inside a read critical section
//	hold_ms_x=0         time spent inside an exclusive critical section
//	timeout_s=60        bound on each acquire (a stall fails the contender)
//
// Each thread is its own lock instance, so its own contender; the threads
// share one CuratorFramework (one ZooKeeper session). Each thread opens its
// own referee connection and speaks:
//
//	hello <who>        -> go   (once every contender of the test said hello)
//	enter <who> <mode> -> ok   (mode x = exclusive, r = shared,
//	                            s = one of a semaphore's leases)
//	exit <who> <mode>  -> ok
//
// It prints one "summary" line per thread and exits 0, or prints the error
// and exits 1.
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorContender {
    private static final class Referee implements AutoCloseable {
        private final Socket sock;
        private final BufferedReader in;
        private final Writer out;

        Referee(String addr) throws IOException {
            int colon = addr.lastIndexOf(':');
            sock = new Socket(addr.substring(0, colon), Integer.parseInt(addr.substring(colon + 1)));
            sock.setTcpNoDelay(true);
            in = new BufferedReader(new InputStreamReader(sock.getInputStream(), StandardCharsets.UTF_8));
            out = new OutputStreamWriter(sock.getOutputStream(), StandardCharsets.UTF_8);
        }

        // call sends one line and returns the referee's answer, which must be want.
        void call(String line, String want) throws IOException {
            out.write(line + "\n");
            out.flush();
            String got = in.readLine();
            if (!want.equals(got)) {
                throw new IOException("referee answered " + got + " to \"" + line + "\"");
            }
        }

        @Override
        public void close() throws IOException {
            sock.close();
        }
    }

    // Body is what a contender does inside its section: tell the referee.
    private interface Body {
        void run() throws Exception;
    }

    // Section is one cycle of a role: acquire, run the body, release.
    private interface Section {
        void cycle(Body body, long timeout) throws Exception;
    }

    private static Section lockSection(InterProcessLock lock) {
        return (body, timeout) -> {
            if (!lock.acquire(timeout, TimeUnit.SECONDS)) {
                throw new IllegalStateException("lock not acquired within " + timeout + "s");
            }
            try {
                body.run();
            } finally {
                lock.release();
            }
        };
    }

    // A fresh LeaderLatch per cycle: start, await leadership, body, close
    // (which deletes the latch node and hands leadership on).
    private static Section latchSection(CuratorFramework client, String path, String who) {
        return (body, timeout) -> {
            LeaderLatch latch = new LeaderLatch(client, path, who);
            latch.start();
            try {
                if (!latch.await(timeout, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("leadership not won within " + timeout + "s");
                }
                body.run();
            } finally {
                latch.close();
            }
        };
    }

    private static Section semaphoreSection(InterProcessSemaphoreV2 sem) {
        return (body, timeout) -> {
            Lease lease = sem.acquire(timeout, TimeUnit.SECONDS);
            if (lease == null) {
                throw new IllegalStateException("lease not acquired within " + timeout + "s");
            }
            try {
                body.run();
            } finally {
                sem.returnLease(lease);
            }
        };
    }

    // SharedCount: compare-and-set on the version until it wins.
    private static Section sharedCountSection(SharedCount count) {
        return (body, timeout) -> {
            while (true) {
                VersionedValue<Integer> v = count.getVersionedValue();
                if (count.trySetCount(v, v.getValue() + 1)) {
                    break;
                }
            }
            body.run();
        };
    }

    // GroupMember: join, wait for the group to have `members` members (a
    // children watch wakes it; the members come from GroupMember's own cache,
    // which may lag the watch, so it looks again after a bounded wait), print
    // them, run the body, leave.
    private static Section groupSection(CuratorFramework client, String path, String who, int members) {
        return (body, timeout) -> {
            GroupMember member = new GroupMember(client, path, who, who.getBytes(StandardCharsets.UTF_8));
            member.start();
            try {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeout);
                TreeSet<String> seen = new TreeSet<>();
                while (true) {
                    CountDownLatch changed = new CountDownLatch(1);
                    client.getChildren().usingWatcher((org.apache.zookeeper.Watcher) e -> changed.countDown()).forPath(path);
                    seen.clear();
                    for (byte[] b : member.getCurrentMembers().values()) {
                        seen.add(new String(b, StandardCharsets.UTF_8));
                    }
                    if (seen.size() >= members) {
                        break;
                    }
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("group has " + seen + ", not " + members + " members, after " + timeout + "s");
                    }
                    changed.await(200, TimeUnit.MILLISECONDS);
                }
                System.out.println("members who=" + who + " saw=" + String.join(",", seen));
                body.run();
            } finally {
                member.close();
            }
        };
    }

    // DistributedAtomicLong: optimistic increment, again until it succeeds.
    private static Section atomicLongSection(DistributedAtomicLong n) {
        return (body, timeout) -> {
            while (true) {
                AtomicValue<Long> v = n.increment();
                if (v.succeeded()) {
                    break;
                }
            }
            body.run();
        };
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = new HashMap<>();
        for (String a : args) {
            int eq = a.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("argument " + a + " is not key=value");
            }
            opt.put(a.substring(0, eq), a.substring(eq + 1));
        }
        String zk = need(opt, "zk");
        String path = need(opt, "path");
        String referee = need(opt, "referee");
        String name = need(opt, "name");
        String[] roles = need(opt, "roles").split(",");
        int cycles = Integer.parseInt(opt.getOrDefault("cycles", "50"));
        long holdR = Long.parseLong(opt.getOrDefault("hold_ms_r", "0"));
        long holdX = Long.parseLong(opt.getOrDefault("hold_ms_x", "0"));
        long timeout = Long.parseLong(opt.getOrDefault("timeout_s", "60"));
        int leases = Integer.parseInt(opt.getOrDefault("leases", "1"));
        int members = Integer.parseInt(opt.getOrDefault("members", "1"));

        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(zk)
                .sessionTimeoutMs(10_000)
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        client.start();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        try {
            if (!client.blockUntilConnected((int) timeout, TimeUnit.SECONDS)) {
                throw new IllegalStateException("no ZooKeeper connection to " + zk + " within " + timeout + "s");
            }
            String version = recipesVersion();
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < roles.length; i++) {
                String role = roles[i];
                String who = name + "-" + i + "-" + role;
                Section lock;
                String mode;
                SharedCount shared = null;
                switch (role) {
                    case "m":
                        lock = lockSection(new InterProcessMutex(client, path));
                        mode = "x";
                        break;
                    case "r":
                        lock = lockSection(new InterProcessReadWriteLock(client, path).readLock());
                        mode = "r";
                        break;
                    case "w":
                        lock = lockSection(new InterProcessReadWriteLock(client, path).writeLock());
                        mode = "x";
                        break;
                    case "e":
                        lock = latchSection(client, path, who);
                        mode = "x";
                        break;
                    case "s":
                        lock = semaphoreSection(new InterProcessSemaphoreV2(client, path, leases));
                        mode = "s";
                        break;
                    case "k":
                        shared = new SharedCount(client, path, 0);
                        shared.start();
                        lock = sharedCountSection(shared);
                        mode = "r";
                        break;
                    case "g":
                        lock = groupSection(client, path, who, members);
                        mode = "r";
                        break;
                    case "a":
                        lock = atomicLongSection(new DistributedAtomicLong(client, path, new RetryNTimes(1000, 1)));
                        mode = "r";
                        break;
                    default:
                        throw new IllegalArgumentException("unknown role " + role);
                }
                long hold = mode.equals("r") ? holdR : holdX;
                Thread th = new Thread(() -> {
                    try {
                        run(lock, who, mode, referee, cycles, hold, timeout, version);
                    } catch (Throwable e) {
                        failure.compareAndSet(null, new Exception(who + ": " + e, e));
                    }
                }, who);
                threads.add(th);
                th.start();
            }
            for (Thread th : threads) {
                th.join();
            }
        } finally {
            client.close();
        }
        if (failure.get() != null) {
            System.out.println("error " + failure.get());
            failure.get().printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    private static void run(Section lock, String who, String mode, String refAddr, int cycles,
            long hold, long timeout, String version) throws Exception {
        long start = System.nanoTime();
        try (Referee ref = new Referee(refAddr)) {
            ref.call("hello " + who, "go");
            Body body = () -> {
                ref.call("enter " + who + " " + mode, "ok");
                if (hold > 0) {
                    Thread.sleep(hold); // the work done under the lock
                }
                ref.call("exit " + who + " " + mode, "ok");
            };
            for (int i = 0; i < cycles; i++) {
                try {
                    lock.cycle(body, timeout);
                } catch (Exception e) {
                    throw new IllegalStateException("cycle " + i + ": " + e, e);
                }
            }
        }
        long ms = (System.nanoTime() - start) / 1_000_000;
        System.out.println("summary who=" + who + " cycles=" + cycles + " ms=" + ms + " curator=" + version);
    }

    // recipesVersion reads curator-recipes' version from its Maven metadata.
    private static String recipesVersion() {
        Properties p = new Properties();
        try (InputStream in = InterProcessMutex.class.getResourceAsStream(
                "/META-INF/maven/org.apache.curator/curator-recipes/pom.properties")) {
            if (in != null) {
                p.load(in);
            }
        } catch (IOException e) {
            // unknown version
        }
        return p.getProperty("version", "unknown");
    }

    private static String need(Map<String, String> opt, String key) {
        String v = opt.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing argument " + key + "=...");
        }
        return v;
    }
}
