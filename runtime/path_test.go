package runtime

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

func TestPathBuild(t *testing.T) {
	p := At("/app/locks").Int("shard", -7).Lit("x").Str("table", "users.v2")
	if p.Err() != nil || p.String() != "/app/locks/-7/x/users.v2" {
		t.Fatalf("got %q, %v", p.String(), p.Err())
	}
	if got := At("/").Str("n", "a").String(); got != "/a" {
		t.Fatalf("root join: %q", got)
	}
}

func TestPathRejectsHostileParams(t *testing.T) {
	for _, bad := range []string{
		"", ".", "..", "a/b", "/", "a\x00b", "tab\there", "nl\n", "\x7f", "\u0085",
		"\xff\xfe", "\ud7ff\ue000"[3:], strings.Repeat("x", MaxParamLen+1),
		strings.Repeat("y", 2<<20),
	} {
		p := At("/app").Str("name", bad)
		if !errors.Is(p.Err(), ErrInvalidPath) || p.String() != "" {
			t.Errorf("Str(%.20q) accepted: %q, %v", bad, p.String(), p.Err())
		}
		// The error sticks through later segments.
		if q := p.Lit("more").Int("n", 1); !errors.Is(q.Err(), ErrInvalidPath) {
			t.Errorf("error lost after later segments")
		}
	}
	if err := (Path{}).Err(); !errors.Is(err, ErrInvalidPath) {
		t.Error("zero Path must be invalid")
	}
	if err := At("relative").Err(); !errors.Is(err, ErrInvalidPath) {
		t.Error("relative base accepted")
	}
}

func TestRetryDelay(t *testing.T) {
	p := RetryPolicy{Initial: 100, Max: 1000, Attempts: 5}
	for n := 1; n <= 10; n++ {
		if d := p.Delay(n); d > 1000 || d < 75 {
			t.Fatalf("delay(%d) = %d out of [75, 1000]", n, d)
		}
	}
	if d := p.Delay(10); d < 750 {
		t.Fatalf("delay(10) = %d, want capped near 1000", d)
	}
}

func TestGUID(t *testing.T) {
	g := (*client.Rand)(nil).NewGUID()
	if len(g) != 36 || g[8] != '-' || g[13] != '-' || g[14] != '4' || g[18] != '-' || g[23] != '-' {
		t.Fatalf("bad guid %q", g)
	}
	if (*client.Rand)(nil).NewGUID() == g {
		t.Fatal("guid repeated")
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Class
	}{
		{nil, Normal},
		{client.OpError("get", "/x", zk.ErrNoNode), Normal},
		{client.OpError("create", "/x", zk.ErrNodeExists), Normal},
		{client.OpError("set", "/x", zk.ErrBadVersion), Normal},
		{client.OpError("get", "/x", zk.ErrConnectionClosed), Recoverable},
		{zk.ErrSessionMoved, Recoverable},
		// go-zookeeper hands a failed write's error to the request (seen
		// in TestSoak, seed 1795397397152837622: "write: broken pipe").
		{client.OpError("get", "/x", &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}), Recoverable},
		{&net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}, Recoverable},
		// The same over an in-memory connection (net.Pipe, as the
		// simulator's Dial gives): a leadership's Resign failed on it and
		// left its candidate node on a live session, which stalled the
		// election (TestSimSearchTenures/election, seeds 37 and 80).
		{client.OpError("get", "/x", io.ErrClosedPipe), Recoverable},
		{client.OpError("get", "/x", zk.ErrSessionExpired), Fatal},
		{zk.ErrAuthFailed, Fatal},
		{zk.ErrNoAuth, Fatal},
		{ErrClosed, Fatal},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if !errors.Is(client.OpError("get", "/x", zk.ErrSessionExpired), ErrSessionExpired) {
		t.Error("session expiry must match ErrSessionExpired")
	}
}
