package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// What a fencing token promises (docs/sessions.md, "What a fencing token
// guarantees"): a later tenure's token is greater, so a store that refuses
// tokens below the highest it has seen refuses a stale holder once a newer
// token reached it — and only then. The new holder closes the window by
// registering its token before its work: WithPartitionFence does it for a
// partitioner, whose partitions arrive unasked; a lock or lease holder does
// it right after Lock or Acquire returned.

// tokenStore is the store outside ZooKeeper of that promise: per key, the
// highest token it has seen; Fence registers a token, Write applies a value
// carrying one; both refuse a token below the highest.
type tokenStore struct {
	mu      sync.Mutex
	highest map[string]int64
	value   map[string]string
}

var errStaleToken = errors.New("store: token below the highest seen")

func newTokenStore() *tokenStore {
	return &tokenStore{highest: map[string]int64{}, value: map[string]string{}}
}

func (s *tokenStore) admit(key string, token int64) error {
	if h := s.highest[key]; token < h {
		return fmt.Errorf("%s: token %d below %d: %w", key, token, h, errStaleToken)
	}
	s.highest[key] = token
	return nil
}

func (s *tokenStore) Fence(_ context.Context, key string, token int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admit(key, token)
}

func (s *tokenStore) Write(key string, token int64, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admit(key, token); err != nil {
		return err
	}
	s.value[key] = v
	return nil
}

// staleWrite is a write of a stale holder: accepted (true), or refused as
// stale (false); any other outcome fails the test.
func staleWrite(t *testing.T, store *tokenStore, key string, token int64) bool {
	t.Helper()
	err := store.Write(key, token, "stale")
	if err != nil && !errors.Is(err, errStaleToken) {
		t.Fatalf("stale write: %v", err)
	}
	return err == nil
}

// readAll reads an Owned stream until it closes, so that releases need not
// wait for it.
func readAll(owned <-chan []int) {
	go func() {
		for range owned {
		}
	}()
}

// TestPartitionerFence: member A owns every partition and writes each to
// the store with its token; the server expires A's session and member B
// takes the partitions over. A, stale, sends one more write per partition
// with the token it had, right when the partition is delivered to B on B's
// Owned stream, before B did anything with it — as a process frozen
// between its check and its write would. Without WithPartitionFence every
// such write is accepted: the partition had a new owner and the token kept
// nobody out. With it, every one is refused: B's fence registered B's token
// before Owns said true, before the acquired hook and before the delivery.
func TestPartitionerFence(t *testing.T) {
	srv := server(t)
	const n = 4
	for _, fenced := range []bool{false, true} {
		t.Run(map[bool]string{false: "without", true: "with"}[fenced], func(t *testing.T) {
			ctx := testCtx(t, time.Minute)
			dir := runtime.At(testRoot(t))
			store := newTokenStore()
			fa := newFaulty(t, srv)
			a, err := runtime.NewPartitioner(fa.s, dir, n, runtime.StringCodec()).Join(ctx, "a", runtime.WithRebalanceDelay(0))
			if err != nil {
				t.Fatal(err)
			}
			ownedA := a.Owned()
			for set := range ownedA {
				if len(set) == n {
					break
				}
			}
			readAll(ownedA)
			old := make([]int64, n)
			for i := range n {
				old[i] = a.Token(i)
				if err := store.Write(strconv.Itoa(i), old[i], "a"); err != nil {
					t.Fatal(err)
				}
			}
			fa.expire(t, srv)

			var mu sync.Mutex
			var events []string
			event := func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, fmt.Sprintf(format, args...))
			}
			pb := runtime.NewPartitioner(connect(t, srv.Servers()), dir, n, runtime.StringCodec())
			// The member publishes a partition to Owned before it calls
			// its acquired hook (partitioner_member.go, acquired): the
			// check below waits for the hooks (CI saw it run first once).
			hooked := make(chan int, n)
			opts := []runtime.JoinOption{runtime.WithRebalanceDelay(0),
				runtime.WithPartitionHooks(func(i int) {
					event("acquired %d", i)
					select {
					case hooked <- i:
					default: // more than n: the check counts n
					}
				}, nil)}
			if fenced {
				opts = append(opts, runtime.WithPartitionFence(func(ctx context.Context, i int, token int64) error {
					if pb.Owns(i) || pb.Token(i) != 0 {
						event("told before fence %d", i)
					}
					event("fence %d %d", i, token)
					return store.Fence(ctx, strconv.Itoa(i), token)
				}))
			}
			b, err := pb.Join(ctx, "b", opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Leave(ctx)
			accepted := 0
			seen := map[int]bool{}
			ownedB := b.Owned()
			for set := range ownedB {
				for _, i := range set {
					if seen[i] {
						continue
					}
					seen[i] = true
					if !b.Owns(i) || b.Token(i) <= old[i] {
						t.Errorf("partition %d delivered: Owns %v, token %d after %d", i, b.Owns(i), b.Token(i), old[i])
					}
					if staleWrite(t, store, strconv.Itoa(i), old[i]) {
						accepted++
					}
					if err := store.Write(strconv.Itoa(i), b.Token(i), "b"); err != nil {
						t.Errorf("the new owner's write: %v", err)
					}
				}
				if len(seen) == n {
					break
				}
			}
			readAll(ownedB)
			if !fenced {
				if accepted != n {
					t.Errorf("without the fence %d of %d stale writes were accepted after the new owner got the partition; the window should be open", accepted, n)
				}
				return
			}
			if accepted != 0 {
				t.Errorf("with the fence %d of %d stale writes were accepted after the new owner got the partition", accepted, n)
			}
			for range n {
				select {
				case <-hooked:
				case <-ctx.Done():
					t.Fatal("the acquired hooks were not all called")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for i := range n {
				want := []string{fmt.Sprintf("fence %d %d", i, b.Token(i)), fmt.Sprintf("acquired %d", i)}
				var got []string
				for _, e := range events {
					if slices.Contains(want, e) || e == fmt.Sprintf("told before fence %d", i) {
						got = append(got, e)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("partition %d: %v, want %v", i, got, want)
				}
			}
		})
	}
}

// TestPartitionerFenceFailure: a fence that fails gives the partition up
// at once: it is not delivered and its acquired hook is not called; the
// member acquires it again, with a greater token (a new owner node), and
// is told only once that fence passed.
func TestPartitionerFenceFailure(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	const n = 2
	var mu sync.Mutex
	var tokens []int64 // fenced for partition 1
	var acquired []int
	p := runtime.NewPartitioner(connect(t, srv.Servers()), runtime.At(testRoot(t)), n, runtime.StringCodec())
	a, err := p.Join(ctx, "m", runtime.WithRebalanceDelay(0),
		runtime.WithPartitionHooks(func(i int) {
			mu.Lock()
			defer mu.Unlock()
			acquired = append(acquired, i)
		}, nil),
		runtime.WithPartitionFence(func(_ context.Context, i int, token int64) error {
			if i != 1 {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			tokens = append(tokens, token)
			if len(tokens) == 1 {
				return errors.New("store unavailable")
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Leave(ctx)
	owned := a.Owned()
	for set := range owned {
		if slices.Contains(set, 1) {
			break
		}
	}
	readAll(owned)
	mu.Lock()
	defer mu.Unlock()
	if len(tokens) != 2 || tokens[1] <= tokens[0] || a.Token(1) != tokens[1] {
		t.Errorf("fenced tokens %v, Token(1) = %d: want a second, greater token, the one owned", tokens, a.Token(1))
	}
	if slices.Sort(acquired); !slices.Equal(acquired, []int{0, 1}) {
		t.Errorf("acquired hooks %v, want one per partition", acquired)
	}
}

// stepKind takes a tenure as holder A (worked is A's work, with A's
// token), makes A stale and takes the tenure over as B; it returns B's
// token.
type stepKind struct {
	name     string
	takeOver func(t *testing.T, ctx context.Context, worked func(token int64)) int64
}

var stepKinds = []stepKind{
	{"lock", func(t *testing.T, ctx context.Context, worked func(int64)) int64 {
		srv := server(t)
		dir := runtime.At(testRoot(t))
		fa := newFaulty(t, srv)
		la := runtime.NewLock(fa.s, dir)
		if err := la.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		worked(la.Token())
		fa.expire(t, srv) // A never learns it in time: a frozen process
		lb := runtime.NewLock(connect(t, srv.Servers()), dir)
		if err := lb.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lb.Unlock(context.Background()) })
		return lb.Token()
	}},
	{"ttllease", func(t *testing.T, ctx context.Context, worked func(int64)) int64 {
		srv := ttlServer(t)
		dir := runtime.At(testRoot(t))
		const ttl = 300 * time.Millisecond
		la, err := runtime.NewTTLLeases(connect(t, srv.Servers()), dir, 1, ttl).Acquire(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		worked(la.Token()) // and never renews: past its TTL, A is stale
		lb, err := runtime.NewTTLLeases(connect(t, srv.Servers()), dir, 1, ttl).Acquire(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lb.Release(context.Background()) })
		return lb.Token()
	}},
}

// TestFenceStep: a tenure its holder is handed (a lock, a TTL lease) is
// fenced by the step the docs give: register the token with the store
// right after Lock or Acquire returned, before any work. A holds and
// writes with its token, goes stale and is replaced by B; A's next write,
// sent after B's Lock or Acquire returned, is accepted when B skipped the
// step (the window a token alone leaves) and refused when B took it.
func TestFenceStep(t *testing.T) {
	for _, k := range stepKinds {
		for _, fenced := range []bool{false, true} {
			t.Run(k.name+map[bool]string{false: "/without", true: "/with"}[fenced], func(t *testing.T) {
				ctx := testCtx(t, time.Minute)
				store := newTokenStore()
				var old int64
				next := k.takeOver(t, ctx, func(token int64) {
					old = token
					if err := store.Write("k", token, "a"); err != nil {
						t.Fatal(err)
					}
				})
				if next <= old {
					t.Fatalf("B's token %d is not above A's %d", next, old)
				}
				if fenced {
					if err := store.Fence(ctx, "k", next); err != nil {
						t.Fatal(err)
					}
				}
				if accepted := staleWrite(t, store, "k", old); accepted == fenced {
					t.Errorf("stale write after the takeover: accepted %v with the step %v", accepted, fenced)
				}
			})
		}
	}
}
