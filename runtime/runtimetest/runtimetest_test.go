package runtimetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/runtimetest"
)

// Each value is held: a fencing token, a Guarded write that applies, and
// Lost open; deleting its node as an operator would ends it (Lost closes,
// Context's cause is the recipe's loss, Guarded is refused).
func TestValuesAreHeldAndLostWhenTaken(t *testing.T) {
	e := runtimetest.New(t)
	ctx := context.Background()
	type tenure interface {
		Node() string
		Lost() <-chan struct{}
		Context() context.Context
		Held() bool
		Guarded(ctx context.Context, ops ...any) ([]zk.MultiResponse, error)
	}
	cases := []struct {
		name  string
		v     tenure
		token int64
		loss  error
	}{
		{"lease", nil, 0, runtime.ErrLockLost},
		{"leadership", nil, 0, runtime.ErrLeadershipLost},
		{"membership", nil, 0, runtime.ErrMembershipLost},
	}
	le := e.Lease()
	cases[0].v, cases[0].token = le, le.Token()
	l := runtimetest.Leadership(e, "me")
	cases[1].v, cases[1].token = l, l.Epoch()
	m := runtimetest.Membership(e, "me")
	cases[2].v, cases[2].token = m, 1
	for i, c := range cases {
		if !c.v.Held() || c.token <= 0 {
			t.Fatalf("%s: held %v, token %d", c.name, c.v.Held(), c.token)
		}
		path := "/runtimetest/written-" + c.name
		if _, err := c.v.Guarded(ctx, &zk.CreateRequest{Path: path, Acl: zk.WorldACL(zk.PermAll)}); err != nil || !e.Exists(path) {
			t.Fatalf("%s: Guarded: %v (written: %v)", c.name, err, e.Exists(path))
		}
		e.Take(c.v.Node())
		<-c.v.Lost()
		if cause := context.Cause(c.v.Context()); !errors.Is(cause, c.loss) {
			t.Errorf("%s: the context's cause %v, want %v", c.name, cause, c.loss)
		}
		if _, err := c.v.Guarded(ctx, &zk.CreateRequest{Path: path + "-late", Acl: zk.WorldACL(zk.PermAll)}); err == nil || e.Exists(path+"-late") {
			t.Errorf("%s: Guarded after the loss: %v", c.name, err)
		}
		_ = i
	}
}

// Release, Resign and Leave give the values up; Ack consumes a delivery,
// Release and GiveBack put it back.
func TestValuesAreGivenUp(t *testing.T) {
	e := runtimetest.New(t)
	ctx := context.Background()
	le := e.Lease()
	if err := le.Release(ctx); err != nil || e.Exists(le.Node()) {
		t.Fatalf("Release: %v (node left: %v)", err, e.Exists(le.Node()))
	}
	if err := runtimetest.Leadership(e, 7).Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	a := runtimetest.Assignment(e, "me", 4)
	if !a.Owns(3) || a.Token(3) <= 0 || len(a.Current()) != 4 {
		t.Fatalf("assignment: owns 3 %v, token %d, current %v", a.Owns(3), a.Token(3), a.Current())
	}
	if err := a.Leave(ctx); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	d := runtimetest.Delivery(e, "job-1")
	if d.Value != "job-1" || d.Attempt != 1 {
		t.Fatalf("delivery %q attempt %d", d.Value, d.Attempt)
	}
	if err := d.Ack(ctx); err != nil || e.Exists(d.Node()) {
		t.Fatalf("Ack: %v (item left: %v)", err, e.Exists(d.Node()))
	}
	d = runtimetest.Delivery(e, "job-2")
	if err := d.Release(ctx); err != nil || !e.Exists(d.Node()) {
		t.Fatalf("Release: %v (item back: %v)", err, e.Exists(d.Node()))
	}
	d = runtimetest.Delivery(e, "job-3")
	if err := d.GiveBack(ctx); err != nil || !e.Exists(d.Node()) {
		t.Fatalf("GiveBack: %v (item back: %v)", err, e.Exists(d.Node()))
	}
}

// A TTL lease renews, and Expire ends everything held on the session while
// the Env goes on with a new one.
func TestTTLLeaseAndExpire(t *testing.T) {
	e := runtimetest.New(t)
	ctx := context.Background()
	tl := e.TTLLease("worker-1", time.Minute)
	if !tl.Held() || tl.Holder() != "worker-1" || tl.Token() <= 0 {
		t.Fatalf("ttl lease: held %v holder %q token %d", tl.Held(), tl.Holder(), tl.Token())
	}
	if err := tl.Renew(ctx); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	m := runtimetest.Membership(e, "me")
	e.Expire()
	<-m.Lost()
	if err := m.Leave(ctx); !errors.Is(err, runtime.ErrMembershipLost) {
		t.Fatalf("Leave after expiry: %v", err)
	}
	if le := e.Lease(); !le.Held() {
		t.Fatal("a lease after Expire is not held")
	}
}
