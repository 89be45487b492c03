package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	rtm "runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/internal/cli"
)

// sweepKinds are the resource lines of the synthetic spec, cycled through;
// %[1]d is the resource's number.
var sweepKinds = []string{
	`lock_%[1]d: {kind: lock, path: "/locks/l%[1]d/{shard:int}", doc: Serialises writes to one shard.}`,
	`rwlock_%[1]d: {kind: rwlock, path: "/locks/rw%[1]d/{table:string}"}`,
	`semaphore_%[1]d: {kind: semaphore, path: /semaphores/s%[1]d, leases: 3}`,
	`queue_%[1]d: {kind: queue, path: /queues/q%[1]d, item: Job}`,
	`tasks_%[1]d: {kind: priority_queue, path: /queues/p%[1]d, item: Job, priorities: [urgent, normal, bulk], delivery: at_least_once}`,
	`barrier_%[1]d: {kind: barrier, path: "/barriers/b%[1]d/{run:string}"}`,
	`epoch_%[1]d: {kind: double_barrier, path: "/barriers/e%[1]d/{n:int}", size: 3}`,
	`deploy_%[1]d: {kind: two_phase_commit, path: "/tx/d%[1]d/{id:string}", participants: [database, cache, search]}`,
	`leader_%[1]d: {kind: election, path: /election/e%[1]d, payload: Member}`,
	`workers_%[1]d: {kind: group, path: /groups/g%[1]d, member: Member}`,
	`flags_%[1]d: {kind: config, path: /config/f%[1]d, value: Flags}`,
	`hits_%[1]d: {kind: counter, path: /counters/c%[1]d}`,
}

// syntheticSpec returns a spec of n resources of every kind in turn.
func syntheticSpec(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`version: 1
package: coord
output: coord/coord_zkgen.go
root: /sweep
types:
  Job:    {fields: {name: string, attempt: int}}
  Member: {fields: {host: string, port: int}}
  Flags:  {fields: {dark_mode: bool, max_batch: int}}
resources:
`)
	for i := range n {
		fmt.Fprintf(&sb, "  "+sweepKinds[i%len(sweepKinds)]+"\n", i)
	}
	return []byte(sb.String())
}

// `zkgen generate` (cli.Run, as the command runs it) on a synthetic spec of
// N resources of every kind, in a temporary directory; the output is
// removed before every run so that every file is written. ms/op is the
// time of one generate, MB the peak of the heap's live objects during it
// (sampled every millisecond, from runtime/metrics), alloc-MB/op what it
// allocated in all, out-KB the generated code's size.
func BenchmarkSweepGenerator(b *testing.B) {
	sweep(b, "zkgen", sweepSizes([]int{10, 100, 1000}, 10_000), sweepGenerator)
}

func sweepGenerator(b *testing.B, n int) {
	dir := b.TempDir()
	specPath := filepath.Join(dir, "zkgen.yaml")
	if err := os.WriteFile(specPath, syntheticSpec(n), 0o644); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "coord")
	var total time.Duration
	var peak uint64
	var before, after rtm.MemStats
	runs := 0
	rtm.GC()
	rtm.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if err := os.RemoveAll(out); err != nil {
			b.Fatal(err)
		}
		stop, peakc := samplePeak()
		b.StartTimer()
		t0 := time.Now()
		var stdout, stderr bytes.Buffer
		code := cli.Run([]string{"generate", "-f", specPath}, &stdout, &stderr)
		total += time.Since(t0)
		b.StopTimer()
		close(stop)
		peak = max(peak, <-peakc)
		if code != 0 {
			b.Fatalf("zkgen generate: exit %d: %s", code, stderr.String())
		}
		runs++
		b.StartTimer()
	}
	b.StopTimer()
	rtm.ReadMemStats(&after)
	st, err := os.Stat(filepath.Join(out, "coord_zkgen.go"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(total)/float64(runs), "ns/op")
	b.ReportMetric(float64(total)/float64(time.Millisecond)/float64(runs), "ms/op")
	b.ReportMetric(float64(peak)/1e6, "MB")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/1e6/float64(runs), "alloc-MB/op")
	b.ReportMetric(float64(st.Size())/1e3, "out-KB")
}

// samplePeak samples the heap's live objects every millisecond until stop
// is closed, then sends the largest value seen.
func samplePeak() (stop chan struct{}, peak chan uint64) {
	stop, peak = make(chan struct{}), make(chan uint64, 1)
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		var m uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			m = max(m, s[0].Value.Uint64())
			select {
			case <-stop:
				peak <- m
				return
			case <-t.C:
			}
		}
	}()
	return stop, peak
}
