// CuratorDiscovery is the Java side of the service discovery interop tests
// (discovery_test.go): Curator's curator-x-discovery on one base path.
//
// Arguments (key=value):
//
//	zk=host:port,...  the ZooKeeper servers
//	base=/path        the discovery base path
//	name=payments     the service name
//	mode=find         wait (ServiceCache listener) until the service has
//	                  `count` instances, print one "instance ..." line per
//	                  instance (sorted by id) and one "provider id=..."
//	                  line per call of a round-robin ServiceProvider
//	                  (2 x count calls), then exit
//	mode=register     register an instance (id, address, port, zone,
//	                  weight), print "registered id=...", then stay until
//	                  killed
//
// The payload class is Payload below, so the Go side must write
// "@class": "CuratorDiscovery$Payload" (runtime.WithJavaClass).
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;
import org.apache.curator.x.discovery.details.ServiceCacheListener;
import org.apache.curator.x.discovery.strategies.RoundRobinStrategy;

public final class CuratorDiscovery {
    public static final class Payload {
        public String zone;
        public int weight;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = new HashMap<>();
        for (String a : args) {
            int eq = a.indexOf('=');
            opt.put(a.substring(0, eq), a.substring(eq + 1));
        }
        CuratorFramework client = CuratorFrameworkFactory.newClient(opt.get("zk"), new ExponentialBackoffRetry(100, 5));
        client.start();
        ServiceDiscovery<Payload> discovery = ServiceDiscoveryBuilder.builder(Payload.class).client(client)
                .basePath(opt.get("base")).serializer(new JsonInstanceSerializer<>(Payload.class)).build();
        discovery.start();
        String name = opt.get("name");
        if (opt.get("mode").equals("register")) {
            Payload p = new Payload();
            p.zone = opt.get("zone");
            p.weight = Integer.parseInt(opt.get("weight"));
            ServiceInstance<Payload> in = ServiceInstance.<Payload>builder().name(name).id(opt.get("id"))
                    .address(opt.get("address")).port(Integer.parseInt(opt.get("port"))).payload(p).build();
            discovery.registerService(in);
            System.out.println("registered id=" + in.getId());
            Thread.sleep(120_000);
            return;
        }
        find(discovery, name, Integer.parseInt(opt.get("count")));
        discovery.close();
        client.close();
    }

    private static void find(ServiceDiscovery<Payload> discovery, String name, int count) throws Exception {
        Object changed = new Object();
        ServiceCache<Payload> cache = discovery.serviceCacheBuilder().name(name).build();
        cache.addListener(new ServiceCacheListener() {
            public void cacheChanged() { synchronized (changed) { changed.notifyAll(); } }
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        });
        cache.start();
        long deadline = System.currentTimeMillis() + 60_000;
        synchronized (changed) {
            while (cache.getInstances().size() < count) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("saw " + cache.getInstances().size() + " instances, want " + count);
                }
                changed.wait(1000);
            }
        }
        List<ServiceInstance<Payload>> all = new ArrayList<>(cache.getInstances());
        all.sort(Comparator.comparing(ServiceInstance::getId));
        for (ServiceInstance<Payload> in : all) {
            System.out.println("instance id=" + in.getId() + " address=" + in.getAddress() + " port=" + in.getPort()
                    + " zone=" + in.getPayload().zone + " weight=" + in.getPayload().weight
                    + " enabled=" + in.isEnabled() + " type=" + in.getServiceType());
        }
        ServiceProvider<Payload> provider = discovery.serviceProviderBuilder().serviceName(name)
                .providerStrategy(new RoundRobinStrategy<>()).build();
        provider.start();
        for (int i = 0; i < 2 * count; i++) {
            System.out.println("provider id=" + provider.getInstance().getId());
        }
        provider.close();
        cache.close();
    }
}
