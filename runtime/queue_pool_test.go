package runtime_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A generated Client returns a new handle at each call (c.Jobs().Take), so
// a consumer that makes a handle per Take is what users run by default. The
// handles of one queue on one session share what their consumer learnt:
// after the first Take listed the queue, twenty more Takes, each on a fresh
// handle, cost a read and a multi each and no listing, and come out in
// order. (With a consumer per handle, each Take listed the buckets and the
// bucket again.)
func TestQueueHandlePerCallListsOnce(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	item := func(i int) string { return fmt.Sprintf("item %03d %s", i, strings.Repeat("x", 48)) } // too long to ride in its name
	for _, kind := range []string{"fifo", "priority"} {
		t.Run(kind, func(t *testing.T) {
			dir := testRoot(t)
			admin := connect(t, srv.Servers())
			px := zktest.NewProxy(t, srv.Addr())
			cs := connect(t, viaProxy(px))
			codec := runtime.StringCodec()
			var put func(string) error
			var take func() (string, error)
			if kind == "fifo" {
				put = func(v string) error { return runtime.NewQueue(admin, runtime.At(dir), codec).Put(ctx, v) }
				take = func() (string, error) { return runtime.NewQueue(cs, runtime.At(dir), codec).Take(ctx) }
			} else {
				put = func(v string) error { return runtime.NewPriorityQueue(admin, runtime.At(dir), codec, 3).Put(ctx, 1, v) }
				take = func() (string, error) { return runtime.NewPriorityQueue(cs, runtime.At(dir), codec, 3).Take(ctx) }
			}
			for i := range 30 {
				if err := put(item(i)); err != nil {
					t.Fatal(err)
				}
			}
			if v, err := take(); err != nil || v != item(0) {
				t.Fatalf("first Take = %q, %v; want %q", v, err, item(0))
			}
			px.ResetCounts()
			var got, want []string
			for i := 1; i <= 20; i++ {
				v, err := take()
				if err != nil {
					t.Fatalf("Take %d: %v", i, err)
				}
				got, want = append(got, v), append(want, item(i))
			}
			if !slices.Equal(got, want) {
				t.Errorf("took %q, want %q", got, want)
			}
			c := px.Counts()
			if n := c.Requests[zktest.OpGetChildren] + c.Requests[zktest.OpGetChildren2]; n != 0 {
				t.Errorf("20 Takes on fresh handles listed %d times (requests %v), want 0: the listing of the first Take serves them", n, c.Requests)
			}
			if c.Requests[zktest.OpGetData] != 20 || c.Requests[zktest.OpMulti] != 20 {
				t.Errorf("20 Takes on fresh handles: requests %v, want 20 reads and 20 multis", c.Requests)
			}
		})
	}
}
