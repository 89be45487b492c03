package client

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// The session reads the servers' client addresses and the version from
// /zookeeper/config in each form ZooKeeper writes them.
func TestParseEnsembleConfig(t *testing.T) {
	for _, c := range []struct {
		name, data string
		version    int64
		servers    []string
	}{
		{"ipv4 with client host", "server.1=10.0.0.1:2888:3888:participant;10.0.0.1:2181\nversion=100000000",
			0x100000000, []string{"10.0.0.1:2181"}},
		{"ipv6 in brackets", "server.1=[fd00::1]:2888:3888:participant;[fd00::1]:2181\n" +
			"server.2=[fd00::2]:2888:3888;[0:0:0:0:0:0:0:0]:2182\nversion=a",
			0xa, []string{"[fd00::1]:2181", "[fd00::2]:2182"}},
		{"host names", "server.1=zk-0.zk-hs.ns.svc:2888:3888;zk-0.zk-hs.ns.svc:2181\nserver.2=zk-1.zk-hs.ns.svc:2888:3888;2181",
			0, []string{"zk-0.zk-hs.ns.svc:2181", "zk-1.zk-hs.ns.svc:2181"}},
		{"roles", "server.1=a:1:2:participant;a:2181\nserver.2=b:1:2:observer;b:2181\nserver.3=c:1:2;c:2181",
			0, []string{"a:2181", "b:2181", "c:2181"}},
		{"wildcard client host is the quorum host", "server.1=10.0.0.1:2888:3888;0.0.0.0:2181\nserver.2=10.0.0.2:2888:3888;[::]:2181",
			0, []string{"10.0.0.1:2181", "10.0.0.2:2181"}},
		{"port only", "server.7=10.0.0.7:2888:3888:participant;2181\nversion=200000001",
			0x200000001, []string{"10.0.0.7:2181"}},
		{"missing client address is skipped", "server.1=10.0.0.1:2888:3888:participant\nserver.2=10.0.0.2:2888:3888;2181\nserver.3=10.0.0.3:2888:3888;\nversion=0",
			0, []string{"10.0.0.2:2181"}},
		{"several quorum addresses", "server.1=10.0.0.1:2888:3888|10.1.0.1:2889:3889;2181",
			0, []string{"10.0.0.1:2181"}},
		{"spaces, other keys, repeats", "  server.1 = a:1:2 ; a:2181 \n\ngroup.1=1:2\nweight.1=1\nserver.2=a:3:4;a:2181\n",
			0, []string{"a:2181"}},
		{"standalone: empty", "", 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseEnsembleConfig([]byte(c.data))
			if err != nil {
				t.Fatalf("parse %q: %v", c.data, err)
			}
			if cfg.version != c.version || !slices.Equal(cfg.servers, c.servers) {
				t.Fatalf("parse %q = version %x, servers %q; want %x, %q", c.data, cfg.version, cfg.servers, c.version, c.servers)
			}
		})
	}
}

// A configuration with a line the session cannot read is not taken at all:
// it would drop a server that is there.
func TestParseEnsembleConfigRefusesWhatItCannotRead(t *testing.T) {
	for _, data := range []string{
		"server.x=a:1:2;2181",
		"server.0=a:1:2;2181",
		"server.1=a:1:2:leader;2181",
		"server.1=a:1;2181",
		"server.1=:1:2;2181",
		"server.1=a:1:2;a:0",
		"server.1=a:1:2;a:65536",
		"server.1=a:1:2;a:port",
		"server.1=[fd00::1:1:2;2181",
		"server.1=[fd00::1]1:2;2181",
		"server.1=a:1:2;[fd00::1]2181",
		"server.1=a:1:2;2181\nversion=xyz",
	} {
		if cfg, err := parseEnsembleConfig([]byte(data)); err == nil {
			t.Errorf("parse %q = %+v, want an error", data, cfg)
		} else if !strings.HasPrefix(err.Error(), "ensemble configuration: ") {
			t.Errorf("parse %q: error %q lacks its prefix", data, err)
		}
	}
}

// roundOf returns the next n addresses h hands out, sorted.
func roundOf(h *hostList, n int) []string {
	var got []string
	for range n {
		a, _ := h.Next()
		got = append(got, a)
	}
	slices.Sort(got)
	return got
}

// A configuration becomes the server list only if it names the session's
// server, the first time; then every later one does, and says whether the
// session must leave its server. A configuration none of whose hosts
// resolves is not taken, and a round's lookups do not undo an adoption.
func TestHostsAdoptConfiguration(t *testing.T) {
	dns := &fakeDNS{names: map[string][]string{"zk.test": {"10.0.0.1"}, "zk-4.test": {"10.0.0.4"}}}
	h := newHostList(&Session{log: slog.New(slog.DiscardHandler), resolve: dns.lookupHost})
	if err := h.Init([]string{"zk.test:2181"}); err != nil {
		t.Fatal(err)
	}
	if got := h.adopt([]string{"10.0.0.2:2181", "10.0.0.3:2181"}, "10.0.0.1:2181"); got != adoptNotListed {
		t.Fatalf("a configuration without the session's server: %v, want adoptNotListed", got)
	}
	if got := roundOf(h, 1); !slices.Equal(got, []string{"10.0.0.1:2181"}) {
		t.Fatalf("round after a configuration not taken: %v", got)
	}
	if got := h.adopt([]string{"10.0.0.1:2181", "zk-4.test:2181"}, "10.0.0.1:2181"); got != adoptStay {
		t.Fatalf("a configuration with the session's server: %v, want adoptStay", got)
	}
	if got := roundOf(h, 2); !slices.Equal(got, []string{"10.0.0.1:2181", "10.0.0.4:2181"}) {
		t.Fatalf("round after the adoption: %v", got)
	}
	if got := h.adopt([]string{"zk-4.test:2181", "10.0.0.5:2181"}, "10.0.0.1:2181"); got != adoptMove {
		t.Fatalf("a configuration without the session's server, after an adoption: %v, want adoptMove", got)
	}
	if h.lists("10.0.0.1:2181") || !h.lists("10.0.0.5:2181") {
		t.Fatal("the list still has the removed server, or lacks the added one")
	}
	if got := roundOf(h, 2); !slices.Equal(got, []string{"10.0.0.4:2181", "10.0.0.5:2181"}) {
		t.Fatalf("round after the move: %v", got)
	}
	dns.set("zk-4.test", "10.0.0.44")
	if got := roundOf(h, 2); !slices.Equal(got, []string{"10.0.0.44:2181", "10.0.0.5:2181"}) {
		t.Fatalf("next round, zk-4.test looked up again: %v", got)
	}
	dns.failWith(errors.New("resolver down"))
	if got := h.adopt([]string{"zk-9.test:2181"}, "10.0.0.5:2181"); got != adoptUnresolved {
		t.Fatalf("a configuration that does not resolve: %v, want adoptUnresolved", got)
	}
	if got := h.adopt([]string{"zk-4.test:2181", "zk-9.test:2181"}, "10.0.0.5:2181"); got != adoptMove {
		t.Fatalf("a host that no longer resolves keeps its last addresses: %v, want adoptMove", got)
	}
	if got := roundOf(h, 1); !slices.Equal(got, []string{"10.0.0.44:2181"}) {
		t.Fatalf("round with one host unresolved: %v", got)
	}
	if got := h.learnedServers(); !slices.Equal(got, []string{"zk-4.test:2181", "zk-9.test:2181"}) {
		t.Fatalf("learnedServers = %v", got)
	}
}

// A later session of Supervise tries the servers the previous one learned
// besides the configured ones; a learned name that does not resolve does
// not fail it, a configured one alone does.
func TestHostsLearnedServers(t *testing.T) {
	dns := &fakeDNS{names: map[string][]string{"zk-4.test": {"10.0.0.4"}}}
	s := &Session{log: slog.New(slog.DiscardHandler), resolve: dns.lookupHost}
	withLearned([]string{"zk-4.test:2181", "gone.test:2181", "10.0.0.1:2181"})(s)
	h := newHostList(s)
	if err := h.Init([]string{"10.0.0.1:2181", "zk-1.test:2181"}); err != nil {
		t.Fatalf("Init with learned servers: %v", err)
	}
	if got := roundOf(h, h.Len()); !slices.Equal(got, []string{"10.0.0.1:2181", "10.0.0.4:2181"}) {
		t.Fatalf("round with learned servers: %v", got)
	}
	if got := h.learnedServers(); len(got) != 3 {
		t.Fatalf("learnedServers before any adoption = %v, want what it was given", got)
	}
	if err := newHostList(&Session{log: slog.New(slog.DiscardHandler), resolve: dns.lookupHost}).Init([]string{"zk-1.test:2181"}); err == nil {
		t.Fatal("Init without learned servers succeeded with a name that does not resolve")
	}
}
