// CuratorCacheWatch is the Curator side of zkgen's cache interoperability
// test (runtime/interop/cache_test.go): it runs a CuratorCache of one path,
// as Curator's docs have it (CuratorCache.build, a listener, start), and
// prints a line for each event its listener is given:
//
//	created <path> <data>
//	changed <path> <data>
//	deleted <path>
//	initialized
//
// Arguments are key=value pairs: zk=127.0.0.1:2181 (connect string),
// path=/some/base. It runs until its input ends or says quit, and exits 0;
// on an error it prints "error <message>" and exits 1.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorCacheWatch {
    public static void main(String[] args) {
        String zk = null, path = null;
        for (String a : args) {
            if (a.startsWith("zk=")) {
                zk = a.substring(3);
            } else if (a.startsWith("path=")) {
                path = a.substring(5);
            }
        }
        try {
            if (zk == null || path == null) {
                throw new IllegalArgumentException("want zk=... path=...");
            }
            CuratorFramework c = CuratorFrameworkFactory.builder().connectString(zk)
                    .sessionTimeoutMs(10_000).retryPolicy(new ExponentialBackoffRetry(100, 3)).build();
            c.start();
            CuratorCache cache = CuratorCache.build(c, path);
            cache.listenable().addListener(CuratorCacheListener.builder()
                    .forCreates(d -> event("created", d))
                    .forChanges((old, d) -> event("changed", d))
                    .forDeletes(d -> say("deleted " + d.getPath()))
                    .forInitialized(() -> say("initialized"))
                    .build());
            cache.start();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null && !line.equals("quit");) {
                // run until told to quit
            }
            cache.close();
            c.close();
        } catch (Throwable e) {
            say("error " + e.toString().replace('\n', ' '));
            System.exit(1);
        }
        System.exit(0);
    }

    private static void event(String kind, ChildData d) {
        byte[] data = d.getData() == null ? new byte[0] : d.getData();
        say(kind + " " + d.getPath() + " " + new String(data, StandardCharsets.UTF_8));
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
