package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zkgen/zkgen/runtime"
)

// zkgen inspect shows what an at-least-once queue's consumers hold: the
// count and its consumers on the queue's line, a row per consumer (its
// session, how many items, for how long), a row per claimed item (by
// which session, for how long), and in --json the claims and consumers
// lists.
func TestInspectClaims(t *testing.T) {
	srv, ctx, root := specOf(t, "claims", `
  jobs: {kind: queue, path: /jobs, item: string, delivery: at_least_once}
`)
	a, b := liveConnect(t, srv), liveConnect(t, srv)
	qa := runtime.NewAckQueue(a, runtime.At(root+"/jobs"), runtime.StringCodec())
	qb := runtime.NewAckQueue(b, runtime.At(root+"/jobs"), runtime.StringCodec())
	if _, err := qa.PutAll(ctx, []string{"one", "two", "three", "four"}); err != nil {
		t.Fatal(err)
	}
	var held []*runtime.Delivery[string]
	for _, q := range []*runtime.AckQueue[string]{qa, qa, qb} {
		d, err := q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, d)
	}
	sa, sb := fmt.Sprintf("0x%x", a.ID()), fmt.Sprintf("0x%x", b.ID())
	servers := "--servers=" + strings.Join(srv.Servers(), ",")

	snap := inspectJSON(t, servers)
	qs := snap.Resources[0].Queue
	if qs == nil || qs.Claimed != 3 || len(qs.Claims) != 3 || len(qs.Consumers) != 2 {
		t.Fatalf("queue %+v", qs)
	}
	for i, want := range []string{sa, sa, sb} {
		c := qs.Claims[i]
		if c.Item != held[i].Node() || c.Session != want || c.Since.IsZero() || c.Attempt != 1 {
			t.Errorf("claim %d: %+v, want %s by %s", i, c, held[i].Node(), want)
		}
	}
	if c := qs.Consumers; c[0].Session != sa || c[0].Claimed != 2 || c[1].Session != sb || c[1].Claimed != 1 || c[1].Since.IsZero() {
		t.Errorf("consumers %+v, want %s with 2, then %s with 1", c, sa, sb)
	}

	r := zkgen(t, "inspect", servers)
	r.want(t, ExitOK, nil, empty)
	var words []string // each line's words, one space apart
	for _, line := range strings.Split(r.stdout, "\n") {
		words = append(words, strings.Join(strings.Fields(line), " "))
	}
	table := strings.Join(words, "\n")
	for _, want := range []string{
		"4 items, 3 claimed by 2 consumers",
		"consumer session " + sa + " holds 2 items, the longest for ",
		"consumer session " + sb + " holds 1 item, for ",
		"claimed " + held[2].Node()[strings.LastIndexByte(held[2].Node(), '/')+1:] + " by session " + sb + " for ",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("no %q in:\n%s", want, r.stdout)
		}
	}
}
