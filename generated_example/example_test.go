package example_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The committed generated package works against a real ZooKeeper: the typed
// handle locks the path the spec declares, excludes a second contender, and
// hands over on Unlock.
func TestGeneratedOrderLock(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func() *coord.Client {
		s, err := runtime.Connect(ctx, srv.Servers(), runtime.WithSessionTimeout(4*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return coord.New(s)
	}
	a, b := connect(), connect()

	l := a.OrderLock(7)
	if l.Path() != "/zkgen-example/locks/orders/7" {
		t.Fatalf("path %q", l.Path())
	}
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	other := b.OrderLock(7)
	if ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("second contender TryLock = %v, %v; want false", ok, err)
	}
	// Another shard is another lock.
	if ok, err := b.OrderLock(8).TryLock(ctx); !ok || err != nil {
		t.Fatalf("shard 8 TryLock = %v, %v; want true", ok, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after Unlock = %v, %v", ok, err)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Unlock(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("Unlock twice = %v", err)
	}
}
