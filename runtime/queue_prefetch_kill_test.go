//go:build linux

package runtime_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// The price of WithPrefetch, counted: a consumer process killed (SIGKILL,
// not a session close) while its buffer holds the rest of a chunk loses
// those items and nothing else. The promise is "at most k-1 items a
// consumer"; with one consumer on a fresh queue a chunk is exactly k
// items, so a consumer killed after n Takes loses exactly k-n.
//
// The consumer is the test binary run again as TestPrefetchKillChild.
func TestPrefetchConsumerKilled(t *testing.T) {
	const k, items = 16, 48
	srv := server(t)
	for _, takes := range []int{1, 5} {
		t.Run(fmt.Sprintf("after-%d-takes", takes), func(t *testing.T) {
			ctx := testCtx(t, time.Minute)
			dir := testRoot(t)
			admin := connect(t, srv.Servers())
			q := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[int]())
			if _, err := q.PutAll(ctx, seq(0, items)); err != nil {
				t.Fatal(err)
			}
			got := consumerChild(t, srv.Servers(), dir, k, takes, syscall.SIGKILL)
			var drained []int
			for {
				n, err := q.Len(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				vs, err := q.TakeN(ctx, n)
				if err != nil {
					t.Fatal(err)
				}
				drained = append(drained, vs...)
			}
			seen := map[int]int{}
			for _, v := range append(got, drained...) {
				seen[v]++
				if seen[v] > 1 {
					t.Errorf("item %d delivered twice", v)
				}
			}
			lost := items - len(got) - len(drained)
			t.Logf("killed after %d takes with prefetch %d: %d of %d items lost", takes, k, lost, items)
			if lost > k-1 || lost != k-takes {
				t.Errorf("lost %d items, want %d (k-n; at most k-1 = %d)", lost, k-takes, k-1)
			}
		})
	}
}

// consumerChild runs a consumer process that takes n items with a prefetch
// of k (0: none, spreading out as after a lost race) and the extra
// environment env (ZKGEN_PREFETCH_TIMEOUT: its session timeout, default
// 4s), sends it sig (SIGKILL, SIGSTOP) once it reports them, and
// returns them. The process is killed when the test ends, by PID.
func consumerChild(t *testing.T, servers []string, dir string, k, n int, sig syscall.Signal, env ...string) []int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPrefetchKillChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), "ZKGEN_PREFETCH_CHILD="+dir, "ZKGEN_PREFETCH_SERVERS="+strings.Join(servers, ","),
		fmt.Sprintf("ZKGEN_PREFETCH_K=%d", k), fmt.Sprintf("ZKGEN_PREFETCH_N=%d", n))
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		line := lines.Text()
		if rest, ok := strings.CutPrefix(line, "error "); ok {
			t.Fatalf("consumer: %s", rest)
		}
		rest, ok := strings.CutPrefix(line, "took ")
		if !ok {
			continue
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, f := range strings.Split(rest, ",") {
			v, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("consumer said %q", line)
			}
			got = append(got, v)
		}
		return got
	}
	t.Fatal("the consumer exited without reporting its takes")
	return nil
}

// TestPrefetchKillChild is the consumer of TestPrefetchConsumerKilled (and
// of TestQueueStoppedConsumerLosesNothing, with k 0): it
// takes its items, reports them, and waits to be killed.
func TestPrefetchKillChild(t *testing.T) {
	dir := os.Getenv("ZKGEN_PREFETCH_CHILD")
	if dir == "" {
		t.Skip("the consumer process of TestPrefetchConsumerKilled: runs only as its child")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k, _ := strconv.Atoi(os.Getenv("ZKGEN_PREFETCH_K"))
	n, _ := strconv.Atoi(os.Getenv("ZKGEN_PREFETCH_N"))
	timeout := 4 * time.Second
	if d, err := time.ParseDuration(os.Getenv("ZKGEN_PREFETCH_TIMEOUT")); err == nil {
		timeout = d
	}
	s, err := runtime.Connect(ctx, strings.Split(os.Getenv("ZKGEN_PREFETCH_SERVERS"), ","), runtime.WithSessionTimeout(timeout))
	if err != nil {
		fmt.Println("error connect:", err)
		os.Exit(1)
	}
	q := runtime.NewQueue(s, runtime.At(dir), runtime.JSONCodec[int](), runtime.WithPrefetch(k))
	if k == 0 {
		runtime.Contend(q) // a spread consumer, with a chunk claim
	}
	var got []string
	for range n {
		v, err := q.Take(ctx)
		if err != nil {
			fmt.Println("error take:", err)
			os.Exit(1)
		}
		got = append(got, strconv.Itoa(v))
	}
	fmt.Println("took " + strings.Join(got, ","))
	<-ctx.Done() // killed before this; never closes the session itself
	os.Exit(1)
}
