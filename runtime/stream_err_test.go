package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// next receives one state from a stream, failing on a close or ctx's end.
func next[T any](t *testing.T, ctx context.Context, ch <-chan T) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatal("stream closed")
		}
		return v
	case <-ctx.Done():
		t.Fatal("no state delivered")
	}
	panic("unreachable")
}

// until receives states until ok accepts one.
func until[T any](t *testing.T, ctx context.Context, ch <-chan T, ok func(T) bool) T {
	t.Helper()
	for {
		if v := next(t, ctx, ch); ok(v) {
			return v
		}
	}
}

// closes requires the stream to close next.
func closes[T any](t *testing.T, ctx context.Context, ch <-chan T) {
	t.Helper()
	select {
	case v, ok := <-ch:
		if ok {
			t.Fatalf("state %+v after the last one", v)
		}
	case <-ctx.Done():
		t.Fatal("stream not closed")
	}
}

// The three streams say why they end, and deliver undecodable values with
// an error instead of silently: Config.Watch, Group.Watch, Election.Observe.
func TestStreamErrors(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 90*time.Second)
	dir := testRoot(t)
	writer := connect(t, srv.Servers())

	t.Run("config", func(t *testing.T) {
		p := runtime.At(dir + "/config")
		fc := newFaulty(t, srv)
		w := runtime.NewConfig(fc.s, p, runtime.JSONCodec[member]()).Watch(ctx)
		if v := next(t, ctx, w); v.Exists || v.Err != nil {
			t.Fatalf("first state %+v", v)
		}
		raw := runtime.NewConfig(writer, p, runtime.BytesCodec())
		if _, err := raw.Set(ctx, []byte("not json")); err != nil {
			t.Fatal(err)
		}
		v := until(t, ctx, w, func(v runtime.Versioned[member]) bool { return v.Exists })
		if !errors.Is(v.Err, runtime.ErrDecode) || v.Version != 0 {
			t.Fatalf("undecodable value delivered as %+v", v)
		}
		if _, err := raw.Set(ctx, []byte(`{"host":"a","port":1}`)); err != nil {
			t.Fatal(err)
		}
		if v := next(t, ctx, w); v.Err != nil || v.Value.Host != "a" || v.Version != 1 { // the stream went on
			t.Fatalf("state after a decode error %+v", v)
		}
		fc.expire(t, srv)
		if v := next(t, ctx, w); !errors.Is(v.Err, runtime.ErrSessionExpired) || v.Value.Host != "a" || v.Version != 1 {
			t.Fatalf("last state %+v, want the newest with ErrSessionExpired", v)
		}
		closes(t, ctx, w)
	})

	t.Run("group", func(t *testing.T) {
		p := runtime.At(dir + "/group")
		s := connect(t, srv.Servers())
		w := runtime.NewGroup(s, p, runtime.JSONCodec[member]()).Watch(ctx)
		if _, err := runtime.NewGroup(writer, p, runtime.JSONCodec[member]()).Join(ctx, member{Host: "a"}); err != nil {
			t.Fatal(err)
		}
		if _, err := runtime.NewGroup(writer, p, runtime.BytesCodec()).Join(ctx, []byte("garbage")); err != nil {
			t.Fatal(err)
		}
		v := until(t, ctx, w, func(v runtime.MemberList[member]) bool { return v.Err != nil })
		if !errors.Is(v.Err, runtime.ErrDecode) || len(v.Members) != 1 || v.Members[0].Host != "a" {
			t.Fatalf("list with an undecodable member %+v", v)
		}
		s.Close()
		v = until(t, ctx, w, func(v runtime.MemberList[member]) bool { return !errors.Is(v.Err, runtime.ErrDecode) })
		if !errors.Is(v.Err, runtime.ErrClosed) || len(v.Members) != 1 {
			t.Fatalf("last list %+v, want the newest with ErrClosed", v)
		}
		closes(t, ctx, w)
	})

	t.Run("election", func(t *testing.T) {
		p := runtime.At(dir + "/election")
		s := connect(t, srv.Servers())
		w := runtime.NewElection(s, p, runtime.JSONCodec[member]()).Observe(ctx)
		if v := next(t, ctx, w); v.Elected || v.Err != nil {
			t.Fatalf("first state %+v", v)
		}
		if _, err := runtime.NewElection(writer, p, runtime.BytesCodec()).Campaign(ctx, []byte("garbage")); err != nil {
			t.Fatal(err)
		}
		v := next(t, ctx, w)
		if !v.Elected || !errors.Is(v.Err, runtime.ErrDecode) || v.Epoch < 1 {
			t.Fatalf("leader with an undecodable payload %+v", v)
		}
		s.Close()
		last := next(t, ctx, w)
		if !errors.Is(last.Err, runtime.ErrClosed) || !last.Elected || last.Epoch != v.Epoch {
			t.Fatalf("last state %+v, want the newest with ErrClosed", last)
		}
		closes(t, ctx, w)
	})

	t.Run("bad path", func(t *testing.T) {
		bad := runtime.At(dir).Str("name", "..")
		if v := next(t, ctx, runtime.NewConfig(writer, bad, runtime.BytesCodec()).Watch(ctx)); !errors.Is(v.Err, runtime.ErrInvalidPath) {
			t.Errorf("config %+v", v)
		}
		if v := next(t, ctx, runtime.NewGroup(writer, bad, runtime.BytesCodec()).Watch(ctx)); !errors.Is(v.Err, runtime.ErrInvalidPath) {
			t.Errorf("group %+v", v)
		}
		if v := next(t, ctx, runtime.NewElection(writer, bad, runtime.BytesCodec()).Observe(ctx)); !errors.Is(v.Err, runtime.ErrInvalidPath) {
			t.Errorf("election %+v", v)
		}
	})

	// A stream ended by its ctx closes without a last state: the caller
	// knows why.
	t.Run("ctx", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		w := runtime.NewConfig(writer, runtime.At(dir+"/config2"), runtime.BytesCodec()).Watch(cctx)
		next(t, ctx, w)
		cancel()
		closes(t, ctx, w)
	})
}
