package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

type cfgValue struct {
	N int `json:"n"`
}

// The config's fault matrix: a client's connection is cut right after each
// kind of write or read of Config reaches the server (and takes effect),
// sometimes with another writer or a session expiry before it reconnects.
// Each time: no write is lost, none is applied twice, a write that reports
// success is the one in the node at the version it reports, and one that
// cannot know says so with ErrOutcomeUnknown (recoverable) — or, when the
// session ended, with ErrSessionExpired; never ErrVersionConflict for a
// write that took effect.
func TestConfigFaultMatrix(t *testing.T) {
	srv := server(t)
	codec := runtime.JSONCodec[cfgValue]()
	type setup struct {
		ctx  context.Context
		obs  *runtime.Config[cfgValue] // a client without faults
		cfg  *runtime.Config[cfgValue] // the faulty client's handle
		f    faultyClient
		tree *runtime.Session
	}
	// want checks the node after the faulty call.
	want := func(t *testing.T, su setup, v cfgValue, ver runtime.Version) {
		t.Helper()
		got, gotVer, err := su.obs.Get(su.ctx)
		if err != nil || got != v || gotVer != ver {
			t.Fatalf("node holds %+v at version %d (%v); want %+v at version %d", got, gotVer, err, v, ver)
		}
	}
	for _, tc := range []struct {
		name    string
		exists  bool // the node exists (value {0}, version 0) before the call
		op      int32
		kind    fault
		run     func(t *testing.T, su setup, err error) // checks the call's error and the node
		call    func(su setup) error
		between func(t *testing.T, su setup) // for cutThenWrite
	}{
		{name: "set/cut after setData", exists: true, op: zktest.OpSetData, kind: cut,
			call: func(su setup) error {
				ver, err := su.cfg.Set(su.ctx, cfgValue{1})
				if err == nil && ver != 1 {
					return fmt.Errorf("Set reported version %d, want 1", ver)
				}
				return err
			},
			run: func(t *testing.T, su setup, err error) {
				if err != nil {
					t.Fatalf("Set: %v", err)
				}
				want(t, su, cfgValue{1}, 1) // written once: one version step
			}},
		{name: "set/cut after create", exists: false, op: zktest.OpCreate, kind: cut,
			call: func(su setup) error { _, err := su.cfg.Set(su.ctx, cfgValue{1}); return err },
			run: func(t *testing.T, su setup, err error) {
				if err != nil {
					t.Fatalf("Set: %v", err)
				}
				want(t, su, cfgValue{1}, 0)
			}},
		{name: "set/cut after setData, then another write", exists: true, op: zktest.OpSetData, kind: cutThenWrite,
			call: func(su setup) error { _, err := su.cfg.Set(su.ctx, cfgValue{1}); return err },
			between: func(t *testing.T, su setup) {
				if _, err := su.obs.Set(su.ctx, cfgValue{2}); err != nil {
					t.Error(err)
				}
			},
			run: func(t *testing.T, su setup, err error) {
				// Our write took effect, then {2} replaced it and was
				// acknowledged: {1} must not come back.
				if err != nil && !errors.Is(err, runtime.ErrOutcomeUnknown) {
					t.Fatalf("Set: %v", err)
				}
				want(t, su, cfgValue{2}, 2)
			}},
		{name: "set/cut after setData, then expiry", exists: true, op: zktest.OpSetData, kind: cutThenExpire,
			call: func(su setup) error { _, err := su.cfg.Set(su.ctx, cfgValue{1}); return err },
			run: func(t *testing.T, su setup, err error) {
				if !errors.Is(err, runtime.ErrSessionExpired) {
					t.Fatalf("Set = %v, want ErrSessionExpired", err)
				}
				want(t, su, cfgValue{1}, 1)
			}},
		{name: "compare-and-set/cut after setData", exists: true, op: zktest.OpSetData, kind: cut,
			call: func(su setup) error { _, err := su.cfg.CompareAndSet(su.ctx, cfgValue{1}, 0); return err },
			run: func(t *testing.T, su setup, err error) {
				if !errors.Is(err, runtime.ErrOutcomeUnknown) || !runtime.IsRecoverable(err) {
					t.Fatalf("CompareAndSet = %v, want a recoverable ErrOutcomeUnknown", err)
				}
				want(t, su, cfgValue{1}, 1)
			}},
		{name: "compare-and-set/cut after setData, then another write", exists: true, op: zktest.OpSetData, kind: cutThenWrite,
			call: func(su setup) error { _, err := su.cfg.CompareAndSet(su.ctx, cfgValue{1}, 0); return err },
			between: func(t *testing.T, su setup) {
				if _, err := su.obs.CompareAndSet(su.ctx, cfgValue{2}, 1); err != nil {
					t.Error(err)
				}
			},
			run: func(t *testing.T, su setup, err error) {
				if !errors.Is(err, runtime.ErrOutcomeUnknown) {
					t.Fatalf("CompareAndSet = %v, want ErrOutcomeUnknown", err)
				}
				want(t, su, cfgValue{2}, 2)
			}},
		{name: "compare-and-set/cut after setData, then expiry", exists: true, op: zktest.OpSetData, kind: cutThenExpire,
			call: func(su setup) error { _, err := su.cfg.CompareAndSet(su.ctx, cfgValue{1}, 0); return err },
			run: func(t *testing.T, su setup, err error) {
				if !errors.Is(err, runtime.ErrSessionExpired) {
					t.Fatalf("CompareAndSet = %v, want ErrSessionExpired", err)
				}
				want(t, su, cfgValue{1}, 1)
			}},
		{name: "compare-and-set/cut after create", exists: false, op: zktest.OpCreate, kind: cut,
			call: func(su setup) error {
				_, err := su.cfg.CompareAndSet(su.ctx, cfgValue{1}, runtime.NoVersion)
				return err
			},
			run: func(t *testing.T, su setup, err error) {
				if !errors.Is(err, runtime.ErrOutcomeUnknown) || !runtime.IsRecoverable(err) {
					t.Fatalf("CompareAndSet = %v, want a recoverable ErrOutcomeUnknown", err)
				}
				want(t, su, cfgValue{1}, 0)
			}},
		{name: "get/cut after getData", exists: true, op: zktest.OpGetData, kind: cut,
			call: func(su setup) error {
				v, ver, err := su.cfg.Get(su.ctx)
				if err == nil && (v != cfgValue{0} || ver != 0) {
					return errors.New("Get read a wrong value")
				}
				return err
			},
			run: func(t *testing.T, su setup, err error) {
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
			}},
		{name: "delete/cut after delete", exists: true, op: zktest.OpDelete, kind: cut,
			call: func(su setup) error { return su.cfg.Delete(su.ctx) },
			run: func(t *testing.T, su setup, err error) {
				if err != nil {
					t.Fatalf("Delete: %v", err)
				}
				if _, _, err := su.obs.Get(su.ctx); !errors.Is(err, runtime.ErrNoValue) {
					t.Fatalf("after Delete, Get = %v", err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testRoot(t)
			p := runtime.At(dir).Lit("flags")
			su := setup{ctx: testCtx(t, time.Minute), f: newFaulty(t, srv), tree: connect(t, srv.Servers())}
			su.obs = runtime.NewConfig(su.tree, p, codec)
			su.cfg = runtime.NewConfig(su.f.s, p, codec)
			// The directory exists, so a create that gets cut does create
			// the node (and not just fail on a missing parent).
			makeDirs(t, su.tree, "/zkgen-test", dir)
			if tc.exists {
				if _, err := su.obs.CompareAndSet(su.ctx, cfgValue{0}, runtime.NoVersion); err != nil {
					t.Fatal(err)
				}
			}
			err := su.f.inject(t, su.ctx, srv, tc.op, tc.kind, func() { tc.between(t, su) }, func() error { return tc.call(su) })
			tc.run(t, su, err)
			// Only the config node (persistent, by contract) is left.
			su.f.s.Close()
			if kids := childrenOf(t, su.tree, dir); len(kids) > 1 || (len(kids) == 1 && kids[0] != "flags") {
				t.Fatalf("left under %s: %v", dir, kids)
			}
		})
	}
}

// The counter's fault matrix: Add's requests (the read, the compare-and-set
// as setData, or as create for a missing counter) are cut right after they
// reach the server, sometimes with an expiry before the client reconnects.
// An Add that succeeds added once; one that could not know returns an error
// that is not ErrVersionConflict (ErrOutcomeUnknown while the session
// lives); nothing is ever added twice.
func TestCounterFaultMatrix(t *testing.T) {
	srv := server(t)
	for _, tc := range []struct {
		name    string
		start   int64 // -1: the counter does not exist
		op      int32
		kind    fault
		wantErr error // nil: Add succeeds
	}{
		{"cut after getData", 5, zktest.OpGetData, cut, nil},
		{"cut after setData", 5, zktest.OpSetData, cut, runtime.ErrOutcomeUnknown},
		{"cut after setData, then another add", 5, zktest.OpSetData, cutThenWrite, runtime.ErrOutcomeUnknown},
		{"cut after setData, then expiry", 5, zktest.OpSetData, cutThenExpire, runtime.ErrSessionExpired},
		{"cut after create", -1, zktest.OpCreate, cut, runtime.ErrOutcomeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testRoot(t)
			ctx := testCtx(t, time.Minute)
			p := runtime.At(dir).Lit("requests")
			tree := connect(t, srv.Servers())
			makeDirs(t, tree, "/zkgen-test", dir)
			obs := runtime.NewCounter(tree, p)
			sum := int64(0)
			if tc.start >= 0 {
				if _, err := obs.Add(ctx, tc.start); err != nil {
					t.Fatal(err)
				}
				sum = tc.start
			}
			f := newFaulty(t, srv)
			c := runtime.NewCounter(f.s, p)
			var got int64
			err := f.inject(t, ctx, srv, tc.op, tc.kind, func() {
				if _, err := obs.Add(ctx, 100); err != nil {
					t.Error(err)
				}
			}, func() error {
				var err error
				got, err = c.Add(ctx, 7)
				return err
			})
			if tc.kind == cutThenWrite {
				sum += 100
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Add: %v", err)
			case tc.wantErr == nil && got != sum+7:
				t.Fatalf("Add returned %d, want %d", got, sum+7)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("Add = %d, %v; want %v", got, err, tc.wantErr)
			case errors.Is(err, runtime.ErrVersionConflict):
				t.Fatalf("Add = %v: a conflict would say nothing was added", err)
			}
			// Every request cut here reached the server: added exactly once.
			if v, err := obs.Get(ctx); err != nil || v != sum+7 {
				t.Fatalf("counter = %d, %v; want %d (added once)", v, err, sum+7)
			}
			f.s.Close()
			if kids := childrenOf(t, tree, dir); len(kids) != 1 || kids[0] != "requests" {
				t.Fatalf("left under %s: %v", dir, kids)
			}
		})
	}
}
