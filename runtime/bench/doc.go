// Package bench holds the benchmarks of the runtime's recipes against a real
// ZooKeeper, measured side by side with peers in the same run, as
// sub-benchmarks impl=<name>, so that ratios are meaningful on a noisy
// machine: for locks go-zookeeper's zk.Lock (impl=gozk), and for the lock,
// the 4-producer/4-consumer queue and the election failover Apache Curator
// (impl=curator) and kazoo (impl=kazoo), each run by a driver process
// (peers_test.go; skipped when the peer is not installed). Every benchmark
// also reports the protocol's cost as counted on the wire by a zktest proxy:
// requests per operation (req/op) and watch notifications per operation
// (notify/op). The recipes without a peer here (rwlock, semaphore, batched
// and priority queues, barrier, 2PC) report the same wire counts, and
// latencies (p50-ms) or throughput (items/sec). Bound the work on small
// machines:
//
//	go test ./runtime/bench -run '^$' -bench . -benchtime 500x -count 6 | tee new.txt
//	benchstat -col /impl new.txt
//
// BenchmarkCache (cache_test.go) is a sequence, not a loop: run it with
// -benchtime 1x. Its sub-benchmarks are n=<nodes>/impl=<name> (1,000,
// 10,000 and 100,000 nodes: select sizes with -bench, the largest takes
// minutes), and a peer that cannot load a size is skipped with what
// happened, which only -v prints:
//
//	go test ./runtime/bench -run '^$' -bench 'Cache/n=(1000|10000)$' -benchtime 1x -count 2
//	go test ./runtime/bench -run '^$' -bench 'Cache/n=100000$' -benchtime 1x -v
//
// BenchmarkDiscovery (discovery_test.go) is a sequence too, on services of
// 10, 1,000 and 10,000 instances, beside Curator's ServiceProvider (it
// needs Debian's libcurator-discovery-java besides the recipes):
//
//	go test ./runtime/bench -run '^$' -bench 'Discovery' -benchtime 1x -count 3
package bench
