// Package bench holds the benchmarks of the runtime's recipes against a real
// ZooKeeper, each measured side by side with a peer in the same run (for
// locks, go-zookeeper's zk.Lock), so that ratios are meaningful on a noisy
// machine. Every benchmark also reports the protocol's cost as counted on
// the wire by a zktest proxy: requests per operation (req/op) and watch
// notifications per operation (notify/op). The recipes without a Go peer
// (rwlock, semaphore, queues, election, barrier, 2PC) report the same wire
// counts, and latencies (p50-ms) or throughput (items/sec) to compare with
// the peers' figures in BENCHMARKS.md. Bound the work on small machines:
//
//	go test ./runtime/bench -run '^$' -bench . -benchtime 500x -count 6 | tee new.txt
//	benchstat -col /impl new.txt
package bench
