// CuratorDiscoveryBench is the Curator peer of zkgen's BenchmarkDiscovery
// (runtime/bench/discovery_test.go): curator-x-discovery's ServiceProvider,
// built as its docs have it (ServiceDiscoveryBuilder with the default JSON
// serializer, serviceProviderBuilder with its default ServiceCache and a
// RoundRobinStrategy). It speaks CuratorBench's line protocol:
//
//	stdout: ready                  set up for the next round
//	stdin:  go                     run it
//	stdout: done ns=<t> n=<k>      it took t ns (k: instances or lookups)
//	stdin:  quit (or end of input) close and exit 0
//
// Before the first ready it builds, starts and closes one discovery and
// provider (class loading and the JIT stay out of the timed load).
// Rounds: 1. the load: build and start the discovery and the provider
// (start waits until its cache is loaded), n = the instances it holds;
// 2. lookups: getInstance on one thread for lookup_ms after as long a
// warm-up, n = the calls; then 2 x changes rounds, alternately a
// registration of c-<r> and its removal, made by the writer's own session
// with the bytes the Go benchmark writes, until the provider's cache holds
// it (or no longer does), as its listener finds in getInstances. The
// provider does not expose its cache: the listener is added to it by
// reflection (its field cache), to learn of the change without polling.
// On an error it prints "error <message>" and exits 1. With mode=fanout it
// is the driver of BenchmarkDiscoveryFanout instead (see Fanout).
//
// Arguments (key=value): zk (the reader's connect string: the counting
// proxy), path (the discovery base), nodes, changes, lookup_ms, writer_zk.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.details.ServiceCacheListener;
import org.apache.curator.x.discovery.details.ServiceProviderImpl;
import org.apache.curator.x.discovery.strategies.RoundRobinStrategy;
import org.apache.zookeeper.CreateMode;

public final class CuratorDiscoveryBench {
    private static final long TIMEOUT_S = 120;
    private static final String SERVICE = "svc";

    /** The payload, as the Go benchmark's discoveryPayload. */
    public static final class Payload {
        public String zone;
    }

    private final Map<String, String> opt;
    private final String base;
    private CuratorFramework reader, writer;
    private ServiceDiscovery<Payload> discovery;
    private ServiceProvider<Payload> provider;
    private ServiceCache<Payload> cache;
    private final Object mu = new Object();
    private String wantID; // guarded by mu
    private boolean wantPresent; // guarded by mu
    private long seenAt; // guarded by mu: when the wanted state was seen, 0 before

    private CuratorDiscoveryBench(Map<String, String> opt) {
        this.opt = opt;
        this.base = opt.get("path");
    }

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
            if ("fanout".equals(opt.get("mode"))) {
                new Fanout(opt).run();
            } else {
                new CuratorDiscoveryBench(opt).run();
            }
        } catch (Throwable e) {
            fail(e.toString());
        }
        System.exit(0);
    }

    private static void fail(String msg) {
        System.out.println("error " + msg.replace('\n', ' '));
        System.out.flush();
        System.exit(1);
    }

    /** data is an instance's bytes, the Go benchmark's discoveryData. */
    static byte[] data(String id) {
        return ("{\"name\":\"" + SERVICE + "\",\"id\":\"" + id + "\",\"address\":\"10.0.0.1\",\"port\":8080,\"sslPort\":null,"
                + "\"payload\":{\"@class\":\"CuratorDiscoveryBench$Payload\",\"zone\":\"eu-1\"},\"registrationTimeUTC\":1795910400000,"
                + "\"serviceType\":\"DYNAMIC\",\"uriSpec\":null,\"enabled\":true}").getBytes(StandardCharsets.UTF_8);
    }

    private static CuratorFramework connect(String hosts) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(hosts)
                .sessionTimeoutMs(10_000) // as the Go benchmark's sessions
                .connectionTimeoutMs(15_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        c.start();
        if (!c.blockUntilConnected((int) TIMEOUT_S, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection to " + hosts + " within " + TIMEOUT_S + "s");
        }
        return c;
    }

    /** A round of the protocol: r counts from 0; it returns {ns, n}. */
    interface Round {
        long[] run(int r) throws Exception;
    }

    /**
     * rounds runs n rounds of the line protocol (ready, go, done) and then
     * waits for quit; it returns early on quit or the end of input.
     */
    static void rounds(int n, Round round) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (int r = 0; r < n; r++) {
            System.out.println("ready");
            System.out.flush();
            String line = in.readLine();
            if (line == null || line.equals("quit")) {
                return;
            }
            if (!line.equals("go")) {
                throw new IllegalArgumentException("expected go, got " + line);
            }
            long[] res = round.run(r);
            System.out.println("done ns=" + res[0] + " n=" + res[1]);
            System.out.flush();
        }
        for (String line; (line = in.readLine()) != null && !line.equals("quit");) {
            // wait for the benchmark to finish with us
        }
    }

    private void run() throws Exception {
        reader = connect(opt.get("zk"));
        writer = connect(opt.getOrDefault("writer_zk", opt.get("zk")));
        int changes = Integer.parseInt(opt.getOrDefault("changes", "100"));
        warm();
        try {
            rounds(2 + 2 * changes, r -> r == 0 ? load() : r == 1 ? lookups() : change((r - 2) / 2 + 1, r % 2 == 0));
        } finally {
            if (provider != null) {
                provider.close();
            }
            if (discovery != null) {
                discovery.close();
            }
            writer.close();
            reader.close();
        }
    }

    /**
     * warm builds, starts and closes a discovery and provider of the base
     * once before the first ready, so that the timed load does not include
     * loading and compiling their classes (Jackson's among them).
     */
    private void warm() throws Exception {
        ServiceDiscovery<Payload> d = ServiceDiscoveryBuilder.builder(Payload.class).client(reader).basePath(base).build();
        d.start();
        ServiceProvider<Payload> p = d.serviceProviderBuilder().serviceName(SERVICE)
                .providerStrategy(new RoundRobinStrategy<>()).build();
        p.start();
        for (int i = 0; i < 1000; i++) {
            p.getInstance();
        }
        p.close();
        d.close();
    }

    @SuppressWarnings("unchecked")
    private long[] load() throws Exception {
        long t0 = System.nanoTime();
        discovery = ServiceDiscoveryBuilder.builder(Payload.class).client(reader).basePath(base).build();
        discovery.start();
        provider = discovery.serviceProviderBuilder().serviceName(SERVICE)
                .providerStrategy(new RoundRobinStrategy<>()).build();
        provider.start();
        long elapsed = System.nanoTime() - t0;
        Field f = ServiceProviderImpl.class.getDeclaredField("cache");
        f.setAccessible(true);
        cache = (ServiceCache<Payload>) f.get(provider);
        cache.addListener(new ServiceCacheListener() {
            public void cacheChanged() {
                seen();
            }

            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        });
        return new long[] {elapsed, provider.getAllInstances().size()};
    }

    private long[] lookups() throws Exception {
        long ms = Long.parseLong(opt.getOrDefault("lookup_ms", "2000"));
        long k = 0, t0 = 0;
        for (int pass = 0; pass < 2; pass++) { // the first warms the JIT up
            k = 0;
            t0 = System.nanoTime();
            long until = t0 + TimeUnit.MILLISECONDS.toNanos(ms);
            while (System.nanoTime() < until) {
                for (int i = 0; i < 100; i++) {
                    if (provider.getInstance() == null) {
                        throw new IllegalStateException("getInstance gave no instance");
                    }
                }
                k += 100;
            }
        }
        return new long[] {System.nanoTime() - t0, k};
    }

    private void seen() {
        synchronized (mu) {
            if (wantID == null || seenAt != 0) {
                return;
            }
            boolean has = false;
            for (ServiceInstance<Payload> in : cache.getInstances()) {
                has = has || in.getId().equals(wantID);
            }
            if (has == wantPresent) {
                seenAt = System.nanoTime();
                mu.notifyAll();
            }
        }
    }

    /** change registers (add) or removes c-<idx> and waits until the provider's cache shows it. */
    private long[] change(int idx, boolean add) throws Exception {
        String id = String.format("c-%06d", idx);
        String path = base + "/" + SERVICE + "/" + id;
        synchronized (mu) {
            wantID = id;
            wantPresent = add;
            seenAt = 0;
        }
        long t0 = System.nanoTime();
        if (add) {
            writer.create().withMode(CreateMode.EPHEMERAL).forPath(path, data(id));
        } else {
            writer.delete().forPath(path);
        }
        long deadline = t0 + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
        synchronized (mu) {
            while (seenAt == 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new IllegalStateException((add ? "registration " : "removal ") + id + " not seen after " + TIMEOUT_S + "s");
                }
                TimeUnit.NANOSECONDS.timedWait(mu, left);
            }
            wantID = null;
            return new long[] {seenAt - t0, 1};
        }
    }

    /**
     * Fanout is the driver of BenchmarkDiscoveryFanout (mode=fanout): k
     * clients, each a CuratorFramework of its own (its own session) with a
     * ServiceDiscovery and a ServiceProvider built as above, and the time
     * until every one of them has a registration (or no longer has it).
     * Rounds: 1. the load: connect the k clients and start their providers,
     * n = k; then 2 x changes rounds, alternately a registration of c-<r>
     * and its removal by the writer's own session, timed until the last
     * client's cache holds it (or no longer does), as a listener on each
     * provider's cache (added by reflection) finds in its getInstances.
     * Arguments: zk, path, clients, changes, writer_zk.
     */
    static final class Fanout {
        /** A change awaited: every client's cache must show id present (or absent). */
        private static final class Want {
            final String id;
            final boolean present;
            final boolean[] seen;
            final CountDownLatch left;
            volatile long lastAt;

            Want(String id, boolean present, int clients) {
                this.id = id;
                this.present = present;
                this.seen = new boolean[clients];
                this.left = new CountDownLatch(clients);
            }
        }

        /** One client: its own session, discovery, provider and the provider's cache. */
        private final class Client {
            final int idx;
            final CuratorFramework c;
            ServiceDiscovery<Payload> discovery;
            ServiceProvider<Payload> provider;
            ServiceCache<Payload> cache;

            Client(int idx, CuratorFramework c) {
                this.idx = idx;
                this.c = c;
            }

            @SuppressWarnings("unchecked")
            void start() throws Exception {
                discovery = ServiceDiscoveryBuilder.builder(Payload.class).client(c).basePath(base).build();
                discovery.start();
                provider = discovery.serviceProviderBuilder().serviceName(SERVICE)
                        .providerStrategy(new RoundRobinStrategy<>()).build();
                provider.start();
                Field f = ServiceProviderImpl.class.getDeclaredField("cache");
                f.setAccessible(true);
                cache = (ServiceCache<Payload>) f.get(provider);
                cache.addListener(new ServiceCacheListener() {
                    public void cacheChanged() {
                        seen(Client.this);
                    }

                    public void stateChanged(CuratorFramework c, ConnectionState s) {}
                });
            }

            void close() throws Exception {
                if (provider != null) {
                    provider.close();
                }
                if (discovery != null) {
                    discovery.close();
                }
                c.close();
            }
        }

        private final Map<String, String> opt;
        private final String base;
        private final List<Client> clients = new ArrayList<>();
        private CuratorFramework writer;
        private volatile Want want; // the change awaited, null between rounds

        private Fanout(Map<String, String> opt) {
            this.opt = opt;
            this.base = opt.get("path");
        }

        void run() throws Exception {
            writer = connect(opt.getOrDefault("writer_zk", opt.get("zk")));
            int k = Integer.parseInt(opt.getOrDefault("clients", "1"));
            int changes = Integer.parseInt(opt.getOrDefault("changes", "50"));
            Client w = new Client(-1, connect(opt.get("zk"))); // warm: classes and JIT out of the timed load
            w.start();
            for (int i = 0; i < 1000; i++) {
                w.provider.getInstance();
            }
            w.close();
            try {
                rounds(1 + 2 * changes, r -> r == 0 ? load(k) : change((r - 1) / 2 + 1, r % 2 == 1));
            } finally {
                for (Client c : clients) {
                    c.close();
                }
                writer.close();
            }
        }

        private long[] load(int k) throws Exception {
            long t0 = System.nanoTime();
            for (int i = 0; i < k; i++) {
                Client c = new Client(i, connect(opt.get("zk")));
                clients.add(c);
                c.start();
            }
            return new long[] {System.nanoTime() - t0, clients.size()};
        }

        /** seen marks c as having seen the wanted change, if its cache shows it. */
        private void seen(Client c) {
            Want w = want;
            if (w == null) {
                return;
            }
            boolean has = false;
            for (ServiceInstance<Payload> in : c.cache.getInstances()) {
                has = has || in.getId().equals(w.id);
            }
            if (has != w.present) {
                return;
            }
            synchronized (w) {
                if (w.seen[c.idx]) {
                    return;
                }
                w.seen[c.idx] = true;
                if (w.left.getCount() == 1) {
                    w.lastAt = System.nanoTime();
                }
                w.left.countDown();
            }
        }

        /** change registers (add) or removes c-<idx> and waits until every client's cache shows it. */
        private long[] change(int idx, boolean add) throws Exception {
            String id = String.format("c-%06d", idx);
            String path = base + "/" + SERVICE + "/" + id;
            Want w = new Want(id, add, clients.size());
            want = w;
            long t0 = System.nanoTime();
            if (add) {
                writer.create().withMode(CreateMode.EPHEMERAL).forPath(path, data(id));
            } else {
                writer.delete().forPath(path);
            }
            if (!w.left.await(TIMEOUT_S, TimeUnit.SECONDS)) {
                throw new IllegalStateException((add ? "registration " : "removal ") + id + " not seen by " + w.left.getCount()
                        + " clients after " + TIMEOUT_S + "s");
            }
            want = null;
            return new long[] {w.lastAt - t0, clients.size()};
        }
    }
}
