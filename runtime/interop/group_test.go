package interop_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// testGroup: two Go members (payloads go0, go1) and a peer's member (its
// payload is its name) in one group. The peer waits until it sees three
// members and prints them; while the referee holds it inside, a Go reader
// lists the members. Each side must see the others, payloads included, in
// join order on the Go side; after the peer leaves, the Go side sees it
// gone.
func testGroup(t *testing.T, srv *zktest.Server, start func(*testing.T, peerArgs) *peer, peerName string, opts ...runtime.HandleOption) {
	ctx := testCtx(t, 2*time.Minute)
	path := testRoot(t)
	ref := newReferee(t, 0)
	var goes []string
	for i := range 2 {
		g := runtime.NewGroup(connect(t, srv), runtime.At(path), runtime.StringCodec(), opts...)
		who := fmt.Sprintf("go%d", i)
		m, err := g.Join(ctx, who)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Leave(ctx) })
		goes = append(goes, who)
	}
	who := peerName + "-0-g"
	entered, release := ref.holdNext(who)
	defer release()
	p := start(t, peerArgs{zk: srv.Servers(), path: path, referee: ref.Addr(), name: peerName, roles: []string{"g"}, cycles: 1, members: 3})
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatalf("the peer never saw 3 members: %v; output:\n%s", context.Cause(ctx), p.out.Tail(20))
	}
	obs := runtime.NewGroup(connect(t, srv), runtime.At(path), runtime.StringCodec(), opts...)
	got, err := obs.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(slices.Clone(goes), who); !slices.Equal(got, want) {
		t.Errorf("Go sees members %q, want %q", got, want)
	}
	release()
	if err := p.wait(ctx); err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(goes), who)
	slices.Sort(all) // the peers print them sorted
	want := fmt.Sprintf("members who=%s saw=%s", who, strings.Join(all, ","))
	if !strings.Contains(p.out.String(), want+"\n") {
		t.Errorf("the peer printed %q, want the line %q", p.out.Tail(10), want)
	}
	got, err = obs.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, goes) {
		t.Errorf("after the peer left, Go sees %q, want %q", got, goes)
	}
	ref.check(t, map[string]int{who: 1})
}

// Go members (Curator layout, the default) and a Curator GroupMember in one
// group: each sees the others with their payloads.
func TestCuratorGroup(t *testing.T) {
	srv := server(t)
	testGroup(t, srv, curator(t).start, "curator")
}

// Go members with the kazoo layout and a kazoo Party in one group: each
// sees the others with their payloads.
func TestKazooGroup(t *testing.T) {
	srv := server(t)
	testGroup(t, srv, kazoo(t).start, "kazoo", kazooLayout)
}
