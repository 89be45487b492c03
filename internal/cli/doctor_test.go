package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// doctorServers are the two servers TestDoctor runs against, between them
// with and without every setting doctor checks:
//
//	plain:  ZooKeeper's defaults as zktest starts them (no TTL nodes,
//	        every four-letter word, jute.maxbuffer 1 MiB), and a TLS port
//	        that wants client certificates;
//	tuned:  TTL nodes, a four-letter whitelist of ruok alone, and a
//	        jute.maxbuffer of 16 KiB.
type doctorServers struct {
	plain, tuned *zktest.Server
	certs        *zktest.TLSCerts
}

// doctorJute is the tuned server's jute.maxbuffer: a partitioner of
// 10,000 partitions writes a plan of about 20 KB.
const doctorJute = 16 << 10

func startDoctorServers(t *testing.T) doctorServers {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	certs := zktest.TLSCertsFor(t)
	d := doctorServers{certs: certs,
		plain: zktest.Start(t, zktest.WithTLS(certs, zktest.ClientAuthNeed)),
		tuned: zktest.Start(t, zktest.WithTTLNodes(100*time.Millisecond), zktest.WithFourLetterWords(), zktest.WithJuteMaxBuffer(doctorJute)),
	}
	d.plain.RequireLocal(t)
	d.tuned.RequireLocal(t)
	return d
}

// doctorSpec writes a spec of the resources lines under a root of its own
// and returns its root.
func doctorSpec(t *testing.T, top, resources string) string {
	t.Helper()
	root := fmt.Sprintf("/doctor-test-%d-%d", os.Getpid(), liveSeq.Add(1))
	writeFile(t, "zkgen.yaml", "version: 1\npackage: coord\nroot: "+root+"\n"+top+
		"types:\n  Job: {fields: {name: string}}\nresources:\n"+resources)
	return root
}

// doctorLine returns the line of check in doctor's output (the first one
// if several), failing the test when there is none.
func doctorLine(t *testing.T, out, check string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^(ok|FAIL|unknown|skipped) +` + regexp.QuoteMeta(check) + ` +.*$`)
	l := re.FindString(out)
	if l == "" {
		t.Fatalf("no %s line in:\n%s", check, out)
	}
	return l
}

// wantDoctor runs doctor with args, checks its exit code, and that the
// line of check has status and contains every one of texts.
func wantDoctor(t *testing.T, code int, check, status string, texts []string, args ...string) result {
	t.Helper()
	// A generous --timeout: a probe cut short by a slow machine would be
	// "unknown", not the outcome under test.
	r := zkgen(t, append([]string{"doctor", "--timeout=30s"}, args...)...)
	if r.code != code {
		t.Fatalf("doctor %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	l := doctorLine(t, r.stdout, check)
	if !strings.HasPrefix(l, status+" ") {
		t.Errorf("%s line is not %s: %s\nall:\n%s", check, status, l, r.stdout)
	}
	for _, s := range texts {
		if !strings.Contains(l, s) {
			t.Errorf("%s line does not say %q: %s", check, s, l)
		}
	}
	if code == ExitFailure && !strings.Contains(r.stderr, check+" failed") && !strings.Contains(r.stderr, check+",") {
		t.Errorf("stderr does not name the failed check %s: %s", check, r.stderr)
	}
	return r
}

// TestDoctor runs zkgen doctor against a server with each setting a spec
// can need and one without it: doctor reports ok with it, and FAIL (exit
// 1) without it, naming what to change.
func TestDoctor(t *testing.T) {
	d := startDoctorServers(t)
	chdirTemp(t)
	plain, tuned := "--servers="+d.plain.Addr(), "--servers="+d.tuned.Addr()
	tlsAddr := "--servers=" + d.plain.TLSAddr()
	ca, cert, key := "--tls-ca="+d.certs.CAFile, "--tls-cert="+d.certs.ClientCertFile, "--tls-key="+d.certs.ClientKeyFile

	t.Run("ttl", func(t *testing.T) {
		doctorSpec(t, "", "  workers: {kind: lease, path: /leases/workers, ttl: 30s, leases: 2}\n")
		wantDoctor(t, ExitOK, "ttl", "ok", []string{"created and deleted a TTL node", "lease workers"}, tuned)
		wantDoctor(t, ExitFailure, "ttl", "FAIL", []string{"lease workers needs TTL nodes", "zookeeper.extendedTypesEnabled=true"}, plain)
		// Without a lease, TTL nodes are not needed.
		doctorSpec(t, "", "  l: {kind: lock, path: /locks/l}\n")
		wantDoctor(t, ExitOK, "ttl", "skipped", []string{"no lease"}, plain)
	})

	t.Run("jute_maxbuffer", func(t *testing.T) {
		doctorSpec(t, "", "  shards: {kind: partitioner, path: /parts/shards, partitions: 10000, member: Job}\n")
		r := wantDoctor(t, ExitOK, "jute.maxbuffer", "ok", []string{"takes a request of 19.", "partitioner shards, 10000 partitions"}, plain)
		if l := doctorLine(t, r.stdout, "listing"); !strings.Contains(l, "within jute.maxbuffer") {
			t.Errorf("listing line on a 1 MiB server: %s", l)
		}
		r = wantDoctor(t, ExitFailure, "jute.maxbuffer", "FAIL", []string{"refuses a request of 19.", "-Djute.maxbuffer=1048575 or more"}, tuned)
		// The 10,000 owner nodes' listing (about 97 KiB) is over the tuned
		// server's limit, which bounds what it reads, not what it sends.
		if l := doctorLine(t, r.stdout, "listing"); !strings.HasPrefix(l, "ok ") || !strings.Contains(l, "is over jute.maxbuffer") || !strings.Contains(l, "zkgen reads it") {
			t.Errorf("listing line on a 16 KiB server: %s", l)
		}
		doctorSpec(t, "", "  small: {kind: partitioner, path: /parts/small, partitions: 100, member: Job}\n")
		wantDoctor(t, ExitOK, "jute.maxbuffer", "ok", []string{"takes a request of"}, tuned)
		bigListing(t, d.tuned)
	})

	t.Run("four_letter_words", func(t *testing.T) {
		// The tuned server whitelists ruok alone: doctor still learns the
		// version (srvr is always answered), and nothing zkgen runs needs
		// another word.
		doctorSpec(t, "", "  l: {kind: lock, path: /locks/l}\n")
		for _, srv := range []string{plain, tuned} {
			wantDoctor(t, ExitOK, "version", "ok", []string{"ZooKeeper 3.", "addWatch"}, srv)
			wantDoctor(t, ExitOK, "4lw", "ok", []string{"needs none"}, srv)
		}
	})

	t.Run("acl", func(t *testing.T) {
		doctorSpec(t, "acl: creator_all\n", "  l: {kind: lock, path: /locks/l}\n  q: {kind: queue, path: /queues/q, item: Job}\n")
		wantDoctor(t, ExitOK, "acl", "ok", []string{"with the declared ACLs in 1 directory", "with --auth"}, plain, "--auth=ops:secret")
		wantDoctor(t, ExitFailure, "acl", "FAIL", []string{"l, q (acl creator_all, in /)", "no credentials", "--auth user:password"}, plain)

		// A list of digest users: only their credentials do.
		id := zk.DigestACL(zk.PermAll, "ops", "secret")[0].ID
		doctorSpec(t, "", "  l: {kind: lock, path: /locks/l, acl: [{digest: \""+id+"\", perms: rwcda}]}\n")
		wantDoctor(t, ExitOK, "acl", "ok", nil, plain, "--auth=ops:secret")
		wantDoctor(t, ExitFailure, "acl", "FAIL", []string{"l (a digest acl of 1 user, in /)", "create a node in", "does not grant this identity", "rwcd"}, plain, "--auth=dev:pw")

		// A directory that exists with an ACL that shuts this identity out.
		root := doctorSpec(t, "", "  l: {kind: lock, path: /locks/l}\n")
		ops := liveConnect(t, d.plain)
		if err := ops.Conn().AddAuth("digest", []byte("ops:secret")); err != nil {
			t.Fatal(err)
		}
		if _, err := ops.Conn().Create(root, nil, 0, zk.AuthACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		wantDoctor(t, ExitFailure, "acl", "FAIL", []string{"l (no acl, the open one, in " + root + ")", "the ACL of " + root + " does not let this identity create", "setAcl " + root}, plain, "--auth=dev:pw")
		wantDoctor(t, ExitOK, "acl", "ok", nil, plain, "--auth=ops:secret")
	})

	t.Run("tls", func(t *testing.T) {
		doctorSpec(t, "", "  l: {kind: lock, path: /locks/l}\n")
		r := wantDoctor(t, ExitOK, "tls", "ok", []string{"speaks TLS", "client certificate presented"}, tlsAddr, ca, cert, key)
		for _, c := range []string{"version", "containers", "acl"} {
			if l := doctorLine(t, r.stdout, c); !strings.HasPrefix(l, "ok ") {
				t.Errorf("over TLS: %s", l)
			}
		}
		wantDoctor(t, ExitOK, "tls", "skipped", []string{"a plain connection"}, plain)
		for _, c := range []struct {
			name  string
			args  []string
			cause string // on the connect line
			fix   string // on the tls line
		}{
			{"TLS client, plain port", []string{plain, ca, cert, key}, "does not speak TLS", "give the servers one: secureClientPort"},
			{"plain client, TLS port", []string{tlsAddr}, "it speaks TLS", "give --tls-ca"},
			{"no client certificate", []string{tlsAddr, ca}, "bad certificate", "the servers' ssl.trustStore the CA of --tls-cert"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := wantDoctor(t, ExitFailure, "tls", "FAIL", []string{c.fix}, c.args...)
				if l := doctorLine(t, r.stdout, "connect"); !strings.HasPrefix(l, "FAIL ") || !strings.Contains(l, c.cause) {
					t.Errorf("connect line: %s", l)
				}
			})
		}
	})

	t.Run("all", func(t *testing.T) {
		root := doctorSpec(t, "", "  l: {kind: lock, path: \"/locks/orders/{shard:int}\"}\n")
		r := wantDoctor(t, ExitOK, "containers", "ok", []string{"under /", "the root " + root + " does not exist yet"}, plain)
		noProbes(t, d.plain, "/")
		// Provisioned, with every kind whose size doctor reads.
		root = doctorSpec(t, "", "  l: {kind: lock, path: \"/locks/orders/{shard:int}\"}\n"+
			"  q: {kind: queue, path: /queues/q, item: Job}\n"+
			"  s: {kind: semaphore, path: /semaphores/s, leases: 3}\n"+
			"  b: {kind: double_barrier, path: /barriers/b, size: 4}\n"+
			"  p: {kind: partitioner, path: /parts/p, partitions: 64, member: Job}\n"+
			"  w: {kind: lease, path: /leases/w, ttl: 30s, leases: 2}\n")
		zkgen(t, "provision", tuned).want(t, ExitOK, nil, empty)
		r = wantDoctor(t, ExitOK, "containers", "ok", []string{"under " + root}, tuned)
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if !strings.HasPrefix(l, "ok ") && !strings.HasPrefix(l, "skipped  tls ") {
				t.Errorf("line: %s", l)
			}
		}
		if n := strings.Count(r.stdout, "\n"); n != 9 {
			t.Errorf("%d lines, want one per check:\n%s", n, r.stdout)
		}
		if l := doctorLine(t, r.stdout, "listing"); !strings.Contains(l, "a full bucket (10000 items) of queue q") {
			t.Errorf("the largest listing is a queue bucket's: %s", l)
		}
		if l := doctorLine(t, r.stdout, "acl"); !strings.Contains(l, "in 6 directories") {
			t.Errorf("acl line: %s", l)
		}
		noProbes(t, d.tuned, "/")
		t.Logf("doctor:\n%s", r.stdout)
	})
}

// noProbes fails the test when a probe node of doctor's is left under dir.
func noProbes(t *testing.T, srv *zktest.Server, dir string) {
	t.Helper()
	s := liveConnect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var walk func(p string)
	walk = func(p string) {
		kids, err := s.Children(ctx, p)
		if errors.Is(err, zk.ErrNoAuth) {
			return // TestDoctor/acl's root, which shuts out everyone but ops
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			if strings.HasPrefix(k, "zkgen-doctor-") {
				t.Errorf("probe node left: %s", path.Join(p, k))
			}
			if k != "zookeeper" {
				walk(path.Join(p, k))
			}
		}
	}
	walk(dir)
}

// bigListing shows what the listing line says: the server's jute.maxbuffer
// bounds the requests it reads, not the replies it sends. Under one
// directory of the tuned server (16 KiB), 2,000 children whose listing is
// about 90 KiB, made by multis each well under the limit, are listed by a
// runtime.Session in one reply.
func bigListing(t *testing.T, srv *zktest.Server) {
	t.Helper()
	s := liveConnect(t, srv)
	dir := fmt.Sprintf("/doctor-listing-%d", liveSeq.Add(1))
	acl := zk.WorldACL(zk.PermAll)
	if _, err := s.Conn().Create(dir, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	const n, batch = 2000, 100
	for i := 0; i < n; i += batch {
		var ops []any
		for j := i; j < i+batch; j++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/item-%036d", dir, j), Acl: acl})
		}
		if _, err := s.Conn().Multi(ops...); err != nil {
			t.Fatalf("multi of %d creates: %v", batch, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kids, err := s.Children(ctx, dir)
	if size := n * (4 + len("item-") + 36); err != nil || len(kids) != n || size <= 2*doctorJute {
		t.Fatalf("listing of %d children (%d bytes) from a server with jute.maxbuffer %d: %d children, %v", n, size, doctorJute, len(kids), err)
	}
}
