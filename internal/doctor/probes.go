package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/internal/bind"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// prober makes the probes in the tree, on one session.
type prober struct {
	sess *runtime.Session
	o    Options
	name string // the probe nodes' names, before their number
	n    int    // probe nodes named so far
}

func newProber(sess *runtime.Session, o Options) *prober {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return &prober{sess: sess, o: o, name: fmt.Sprintf("zkgen-doctor-%s-%d-", host, os.Getpid())}
}

// next returns a fresh probe node path in dir.
func (p *prober) next(dir string) string {
	p.n++
	return path.Join(dir, p.name+fmt.Sprint(p.n))
}

// existing returns the deepest node on the way to want that exists (want
// itself when it does). A node this session may not read exists.
func (p *prober) existing(ctx context.Context, want string) (string, error) {
	for q := want; ; q = path.Dir(q) {
		ok, err := p.sess.Exists(ctx, q)
		if errors.Is(err, zk.ErrNoAuth) {
			ok, err = true, nil
		}
		if err != nil || ok || q == "/" {
			return q, err
		}
	}
}

// aclOf is the ACL the handles create a resource's nodes with: the
// declared one, else the open ACL.
func aclOf(a *spec.ACL) []zk.ACL {
	if acl := bind.ZKACL(a); acl != nil {
		return acl
	}
	return runtime.WorldAllACL()
}

// aclName names a declared ACL for people.
func aclName(a *spec.ACL) string {
	switch {
	case a == nil:
		return "no acl, the open one"
	case a.Policy != "":
		return "acl " + string(a.Policy)
	}
	if len(a.Digest) == 1 {
		return "a digest acl of 1 user"
	}
	return fmt.Sprintf("a digest acl of %d users", len(a.Digest))
}

// probeError is a probe's failure: the step that failed (what the
// recipes do at that point), the node, and ZooKeeper's answer.
type probeError struct {
	step string
	node string
	err  error
}

func (e *probeError) Error() string {
	if msg := e.err.Error(); strings.Contains(msg, e.node) { // the runtime's errors name the node
		return msg
	}
	return fmt.Sprintf("%s %s: %v", e.step, e.node, e.err)
}

func (e *probeError) Unwrap() error { return e.err }

// The steps of tryDir.
const (
	stepCreate   = "create"           // the container, in the directory
	stepCreateIn = "create a node in" // the ephemeral node, in the container
	stepRead     = "read"
	stepWrite    = "write"
	stepDeleteIn = "delete a node in"
	stepDelete   = "delete"
)

// errNoCredentials is tryDir's refusal of an ACL that grants the
// authenticated creator on a session without credentials: the runtime
// refuses such a create before sending it (ZooKeeper would too).
var errNoCredentials = errors.New("the session has no credentials")

// tryDir does in dir what a recipe does in a directory it makes: it
// creates a container with acl, creates an ephemeral node in it, reads
// and writes the container, and deletes both. It returns the first step
// that failed, after deleting what it can of what it made.
func (p *prober) tryDir(ctx context.Context, dir string, acl []zk.ACL) error {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	node := p.next(dir)
	if !p.o.Auth && slices.ContainsFunc(acl, func(a zk.ACL) bool { return a.Scheme == "auth" }) {
		return &probeError{stepCreate, node, errNoCredentials}
	}
	conn := p.sess.Conn()
	if err := within(ctx, func() error { _, err := conn.CreateContainer(node, nil, zk.FlagContainer, acl); return err }); err != nil {
		return &probeError{stepCreate, node, err}
	}
	child := node + "/e"
	steps := []struct {
		step, node string
		do         func() error
	}{
		{stepCreateIn, node, func() error { _, err := conn.Create(child, nil, zk.FlagEphemeral, acl); return err }},
		{stepRead, node, func() error { return within(ctx, func() error { _, _, err := conn.Get(node); return err }) }},
		{stepWrite, node, func() error { _, err := conn.Set(node, []byte("probe"), -1); return err }},
		{stepDeleteIn, node, func() error { return p.sess.Delete(ctx, child) }},
		// The container, empty now, may be gone already: the server
		// reaps empty containers (at its check interval), so a missing
		// node is what a container does, not a failure (TestDoctor/all
		// met it under load, with a 100 ms interval).
		{stepDelete, dir, func() error {
			if err := p.sess.Delete(ctx, node); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			return nil
		}},
	}
	for i, s := range steps {
		if err := s.do(); err != nil {
			if i < len(steps)-1 {
				p.sess.Delete(ctx, child) // best effort; the container goes once empty
				p.sess.Delete(ctx, node)
			}
			return &probeError{s.step, s.node, err}
		}
	}
	return nil
}

// within runs the request do and returns its error, or ctx's if ctx ends
// first (do then finishes in the background: go-zookeeper ends every
// request with its reply or the connection's loss).
func within(ctx context.Context, do func() error) error {
	done := make(chan error, 1)
	go func() { done <- do() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isUnimplemented reports ZooKeeper's error -6 (unimplemented), which
// go-zookeeper v1.0.4 does not name: a server without containers answers
// it to a container create, one without extended types to a TTL create.
func isUnimplemented(err error) bool {
	return err != nil && strings.Contains(err.Error(), "unknown error: -6")
}

// rootDir is the node the root probes go in: the spec's root, or its
// deepest existing ancestor, and words saying which.
func (p *prober) rootDir(ctx context.Context) (dir, where string, err error) {
	root := p.o.Spec.RootPath()
	dir, err = p.existing(ctx, root)
	where = "under " + dir
	if err == nil && dir != root {
		where += fmt.Sprintf(" (the root %s does not exist yet; zkgen provision creates it)", root)
	}
	return dir, where, err
}

// containers checks that the servers create container nodes, which the
// recipes make their directories of.
func (p *prober) containers(ctx context.Context) Line {
	dir, where, err := p.rootDir(ctx)
	if err == nil {
		err = p.tryDir(ctx, dir, aclOf(p.o.Spec.ACL))
	}
	return containersLine(err, where)
}

// containersLine judges the container probe's outcome.
func containersLine(err error, where string) Line {
	switch {
	case err == nil:
		return Line{OK, CheckContainers, "created and deleted a container, with an ephemeral node in it, " + where}
	case isUnimplemented(err):
		return Line{Fail, CheckContainers, fmt.Sprintf("the server does not create containers (%v): upgrade the servers to ZooKeeper %s or later", err, minVersion)}
	}
	return Line{Unknown, CheckContainers, fmt.Sprintf("%v (see the acl lines)", err)}
}

// probeTTL is the TTL of the probe TTL node: the server removes it that
// long after the doctor, if the doctor dies before deleting it.
const probeTTL = 10 * time.Second

// ttl checks, when the spec has a lease, that the servers create TTL
// nodes (zookeeper.extendedTypesEnabled).
func (p *prober) ttl(ctx context.Context) Line {
	var leases []string
	for _, r := range p.o.Spec.Resources {
		if r.Kind == spec.KindLease {
			leases = append(leases, r.Name)
		}
	}
	if len(leases) == 0 {
		return Line{Skipped, CheckTTL, "no lease resource: nothing needs TTL nodes"}
	}
	who := "lease " + strings.Join(leases, ", ")
	dir, where, err := p.rootDir(ctx)
	if err == nil {
		err = p.tryTTL(ctx, dir)
	}
	switch {
	case err == nil:
		return Line{OK, CheckTTL, fmt.Sprintf("created and deleted a TTL node %s, as %s needs", where, who)}
	case isUnimplemented(err):
		return Line{Fail, CheckTTL, who + " needs TTL nodes and the server refuses them (unimplemented): set zookeeper.extendedTypesEnabled=true on every server (-Dzookeeper.extendedTypesEnabled=true in SERVER_JVMFLAGS, or extendedTypesEnabled=true in zoo.cfg; server ids must then be below 255) and restart them"}
	}
	return Line{Unknown, CheckTTL, fmt.Sprintf("%v (see the acl lines)", err)}
}

// tryTTL creates a TTL node in dir and deletes it.
func (p *prober) tryTTL(ctx context.Context, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	node := p.next(dir)
	if _, err := p.sess.Conn().CreateTTL(node, nil, zk.FlagTTL, aclOf(p.o.Spec.ACL), probeTTL); err != nil {
		return &probeError{"create a TTL node", node, err}
	}
	if err := p.sess.Delete(ctx, node); err != nil {
		return &probeError{stepDelete, node, err}
	}
	return nil
}
