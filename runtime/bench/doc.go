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
package bench
