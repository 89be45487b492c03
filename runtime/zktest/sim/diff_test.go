package sim_test

// The differential tests: the same random operation sequences run against a
// real ZooKeeper and against the simulator, and every reply, error, Stat
// field and watch event must agree once normalised (zxids, times and
// session ids legitimately differ between two servers; see diffSide).
//
//	TestDiff         random sequences of every operation (diffGenOp), in
//	                 lockstep on both backends; a difference is reported
//	                 with its seed and shrunk to a short sequence
//	TestDiffReap     container and TTL reaping (diffReapRun)
//	TestDiffPlanted  the checker itself: doctored results must be caught
//
// Knobs (environment variables):
//
//	ZKGEN_DIFF_SEEDS    number of seeds (default diffDefaultSeeds)
//	ZKGEN_DIFF_OPS      operations per seed (default diffDefaultOps)
//	ZKGEN_DIFF_SEED     first seed (default 1); seeds are consecutive
//	ZKGEN_DIFF_WORKERS  seeds run concurrently (default 8)
//	ZKGEN_DIFF_SHRINK   time budget for shrinking one difference (default 90s)
//	ZKGEN_DIFF_SKIP     what not to generate, to look past a known difference:
//	                    comma-separated operation kinds (Create, Multi, ...),
//	                    create flags (flag1 ... flag6: not used by Create nor
//	                    in a Multi; CreateTTL uses flag 5 unless only flag 6
//	                    is allowed), "acl" (every node world:all, no SetACL
//	                    or AddAuth)
//	ZKGEN_DIFF_AGAINST  the second backend: "sim" (default, over TCP),
//	                    "sim-mem" (through sim.Server.Dial) or "real", which
//	                    compares two real servers and so validates the harness
//	                    (zero differences expected)
//	ZKGEN_DIFF_REAP_SEEDS  seeds of TestDiffReap (default 16)
//
// The default size, 100 seeds of 2000 operations, takes about a minute
// against real ZooKeeper on two cores (real against real: 67s with 4
// workers, 48s with 8). A seed is rerun alone with
// ZKGEN_DIFF_SEED=<seed> ZKGEN_DIFF_SEEDS=1.

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgen/zkgen/runtime/zktest"
	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

const (
	diffDefaultSeeds = 100
	diffDefaultOps   = 2000

	// diffCheckInterval is the container/TTL reaping interval of both
	// servers: long enough that nothing is reaped during a run, which would
	// make the outcome depend on timing.
	diffCheckInterval  = time.Hour
	diffSessionTimeout = 20 * time.Second
	diffOpTimeout      = 15 * time.Second
	// diffWallSlack bounds how far a ctime/mtime may be from the wall clock.
	diffWallSlack = 10 * time.Minute
)

// ---------------------------------------------------------------------------
// Servers

// diffServer is one backend: where its clients connect.
type diffServer struct {
	name   string
	addr   string
	dialer zk.Dialer // nil: TCP
}

func diffStartReal(t testing.TB, name string, checkInterval time.Duration) diffServer {
	t.Helper()
	s := zktest.Start(t, zktest.WithTTLNodes(checkInterval))
	return diffServer{name: name, addr: s.Addr()}
}

// diffStartSecond starts the backend compared with real ZooKeeper
// (ZKGEN_DIFF_AGAINST): the simulator over TCP (default), the simulator
// through its in-memory Dial ("sim-mem"), or a second real server ("real").
func diffStartSecond(t testing.TB, checkInterval time.Duration) diffServer {
	t.Helper()
	switch against := os.Getenv("ZKGEN_DIFF_AGAINST"); against {
	case "", "sim", "sim-mem":
		s := sim.Start(t, sim.WithTTLNodes(checkInterval))
		srv := diffServer{name: "sim", addr: s.Addr()}
		if against == "sim-mem" {
			srv.dialer = s.Dial
		}
		return srv
	case "real":
		return diffStartReal(t, "real2", checkInterval)
	default:
		t.Fatalf("ZKGEN_DIFF_AGAINST=%q: want sim, sim-mem or real", against)
		return diffServer{}
	}
}

// ---------------------------------------------------------------------------
// Configuration

type diffConfig struct {
	seeds, ops   int
	firstSeed    uint64
	workers      int
	shrinkBudget time.Duration
	gen          diffGenOpts
}

// diffGenOpts restricts the generator (ZKGEN_DIFF_SKIP).
type diffGenOpts struct {
	skip      map[diffKind]bool
	skipFlags map[int32]bool
	noACL     bool
}

func diffLoadConfig(t testing.TB) diffConfig {
	t.Helper()
	c := diffConfig{
		seeds:        diffEnvInt(t, "ZKGEN_DIFF_SEEDS", diffDefaultSeeds),
		ops:          diffEnvInt(t, "ZKGEN_DIFF_OPS", diffDefaultOps),
		firstSeed:    uint64(diffEnvInt(t, "ZKGEN_DIFF_SEED", 1)),
		workers:      diffEnvInt(t, "ZKGEN_DIFF_WORKERS", 8),
		shrinkBudget: 90 * time.Second,
		gen:          diffGenOpts{skip: map[diffKind]bool{}, skipFlags: map[int32]bool{}},
	}
	if v := os.Getenv("ZKGEN_DIFF_SHRINK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("ZKGEN_DIFF_SHRINK=%q: %v", v, err)
		}
		c.shrinkBudget = d
	}
	if v := os.Getenv("ZKGEN_DIFF_SKIP"); v != "" {
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if k, ok := diffKindByName(name); ok {
				c.gen.skip[k] = true
				continue
			}
			if f, ok := strings.CutPrefix(name, "flag"); ok {
				if n, err := strconv.Atoi(f); err == nil && n > 0 && n <= zk.FlagPersistentSequentialWithTTL {
					c.gen.skipFlags[int32(n)] = true
					continue
				}
			}
			if name == "acl" {
				c.gen.noACL = true
				c.gen.skip[dSetACL], c.gen.skip[dAddAuth] = true, true
				continue
			}
			t.Fatalf("ZKGEN_DIFF_SKIP: unknown item %q", name)
		}
	}
	if c.seeds < 1 || c.ops < 1 || c.workers < 1 {
		t.Fatalf("ZKGEN_DIFF_*: seeds, ops and workers must be positive")
	}
	return c
}

func diffEnvInt(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// ---------------------------------------------------------------------------
// Operations

type diffKind int

const (
	dCreate diffKind = iota
	dCreateContainer
	dCreateTTL
	dDelete
	dExists
	dGet
	dSet
	dChildren
	dGetACL
	dSetACL
	dSync
	dMulti
	dExistsW
	dGetW
	dChildrenW
	dAddAuth
	dClose
	// Sub-operations of a Multi only.
	dCheck
	diffKinds
)

var diffKindNames = [diffKinds]string{
	"Create", "CreateContainer", "CreateTTL", "Delete", "Exists", "Get", "Set",
	"Children", "GetACL", "SetACL", "Sync", "Multi", "ExistsW", "GetW",
	"ChildrenW", "AddAuth", "Close", "Check",
}

func (k diffKind) String() string { return diffKindNames[k] }

func diffKindByName(s string) (diffKind, bool) {
	for k, n := range diffKindNames {
		if strings.EqualFold(n, s) {
			return diffKind(k), true
		}
	}
	return 0, false
}

// diffWeights is the mix of top-level operations.
var diffWeights = []struct {
	k diffKind
	w int
}{
	{dCreate, 20}, {dCreateContainer, 3}, {dCreateTTL, 3}, {dDelete, 12},
	{dExists, 5}, {dGet, 5}, {dSet, 9}, {dChildren, 5}, {dGetACL, 3},
	{dSetACL, 3}, {dSync, 1}, {dMulti, 9}, {dExistsW, 6}, {dGetW, 5},
	{dChildrenW, 6}, {dAddAuth, 1}, {dClose, 1},
}

// diffBasePaths is the path space, relative to a run's root ("" is the
// root itself). Sequential nodes created during a run join it.
var diffBasePaths = []string{
	"", "a", "b", "c", "a/x", "a/y", "b/x", "c/x", "a/x/p", "a/x/q", "b/x/p", "c/x/p",
}

// diffACLs are the ACLs operations choose from; index 0 is the usual one.
var diffACLs = []struct {
	name string
	acl  []zk.ACL
}{
	{"world:all", zk.WorldACL(zk.PermAll)},
	{"world:r", zk.WorldACL(zk.PermRead)},
	{"digest(user):all", zk.DigestACL(zk.PermAll, "user", "pw")},
	{"auth:all", zk.AuthACL(zk.PermAll)},
	{"world:rw", zk.WorldACL(zk.PermRead | zk.PermWrite)},
	{"world:r+digest(user):all", append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "user", "pw")...)},
	{"digest(other):all", zk.DigestACL(zk.PermAll, "other", "pw2")},
	{"world:all-admin", zk.WorldACL(zk.PermAll &^ zk.PermAdmin)},
	{"empty", []zk.ACL{}},
}

// diffPathRef names a path: one of diffBasePaths, or (seq) one of the
// sequential nodes created so far in the run, resolved when the operation
// runs.
type diffPathRef struct {
	seq bool
	n   int
}

// diffVerRef is a version argument: any (-1), the version last seen for the
// path (rec), that plus one (next, usually wrong), or a fixed number.
type diffVerRef struct {
	mode int8 // 0 any, 1 rec, 2 next, 3 fixed
	n    int32
}

// diffOp is a generated operation; its paths and versions are resolved
// against what the run has seen when it executes, so that the same list
// also runs after shrinking.
type diffOp struct {
	kind   diffKind
	client int
	path   diffPathRef
	data   []byte
	flags  int32
	acl    int
	ver    diffVerRef
	ttl    time.Duration
	auth   string
	sub    []diffOp
}

// diffCall is a resolved operation, run as is on both backends.
type diffCall struct {
	kind    diffKind
	client  int
	path    string // relative to the run's root
	data    []byte
	flags   int32
	acl     int
	version int32
	ttl     time.Duration
	auth    string
	sub     []diffCall
}

func (c diffCall) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "c%d ", c.client)
	c.body(&b)
	return b.String()
}

func (c diffCall) body(b *strings.Builder) {
	fmt.Fprintf(b, "%s %q", c.kind, c.path)
	switch c.kind {
	case dCreate, dCreateContainer, dCreateTTL:
		fmt.Fprintf(b, " flags=%d data=%s acl=%s", c.flags, diffData(c.data), diffACLs[c.acl].name)
		if c.kind == dCreateTTL {
			fmt.Fprintf(b, " ttl=%v", c.ttl)
		}
	case dSet:
		fmt.Fprintf(b, " data=%s v=%d", diffData(c.data), c.version)
	case dDelete, dCheck:
		fmt.Fprintf(b, " v=%d", c.version)
	case dSetACL:
		fmt.Fprintf(b, " acl=%s v=%d", diffACLs[c.acl].name, c.version)
	case dAddAuth:
		fmt.Fprintf(b, " digest %q", c.auth)
	case dMulti:
		b.WriteString(" [")
		for i, s := range c.sub {
			if i > 0 {
				b.WriteString("; ")
			}
			s.body(b)
		}
		b.WriteString("]")
	}
}

func diffData(d []byte) string {
	if d == nil {
		return "nil"
	}
	return strconv.Quote(string(d))
}

// diffGenerate returns the number of clients and the operations of a seed.
func diffGenerate(seed uint64, n int, g diffGenOpts) (int, []diffOp) {
	skip := g.skip
	r := rand.New(rand.NewPCG(seed, 0x5eed5eed))
	nclients := 2 + r.IntN(2)
	total := 0
	for _, w := range diffWeights {
		if !skip[w.k] {
			total += w.w
		}
	}
	if total == 0 {
		return nclients, nil
	}
	ops := make([]diffOp, 0, n)
	for len(ops) < n {
		x := r.IntN(total)
		var k diffKind
		for _, w := range diffWeights {
			if skip[w.k] {
				continue
			}
			if x < w.w {
				k = w.k
				break
			}
			x -= w.w
		}
		op := diffGenOp(r, k, g)
		op.client = r.IntN(nclients)
		ops = append(ops, op)
	}
	return nclients, ops
}

func diffGenOp(r *rand.Rand, k diffKind, g diffGenOpts) diffOp {
	op := diffOp{kind: k}
	anyPath := func() diffPathRef {
		if r.IntN(100) < 15 {
			return diffPathRef{seq: true, n: r.IntN(1 << 20)}
		}
		return diffPathRef{n: r.IntN(len(diffBasePaths))}
	}
	nonRoot := func() diffPathRef {
		if r.IntN(100) < 15 {
			return diffPathRef{seq: true, n: r.IntN(1 << 20)}
		}
		return diffPathRef{n: 1 + r.IntN(len(diffBasePaths)-1)}
	}
	data := func() []byte {
		switch x := r.IntN(10); {
		case x == 0:
			return nil
		case x == 1:
			return []byte{}
		default:
			b := make([]byte, 1+r.IntN(6))
			for i := range b {
				b[i] = byte('a' + r.IntN(26))
			}
			return b
		}
	}
	ver := func() diffVerRef {
		switch x := r.IntN(100); {
		case x < 35:
			return diffVerRef{mode: 0}
		case x < 75:
			return diffVerRef{mode: 1}
		case x < 88:
			return diffVerRef{mode: 2}
		default:
			return diffVerRef{mode: 3, n: int32(r.IntN(3))}
		}
	}
	createACL := func() int {
		if g.noACL || r.IntN(100) < 80 {
			return 0
		}
		return r.IntN(len(diffACLs))
	}
	flag := func(f int32) int32 {
		if g.skipFlags[f] {
			return 0
		}
		return f
	}
	switch k {
	case dCreate:
		op.path, op.data, op.acl = nonRoot(), data(), createACL()
		switch x := r.IntN(100); {
		case x < 45:
			op.flags = zk.FlagPersistent
		case x < 65:
			op.flags = flag(zk.FlagEphemeral)
		case x < 82:
			op.flags = flag(zk.FlagSequence)
		case x < 96:
			op.flags = flag(zk.FlagEphemeralSequential)
		default:
			op.flags = flag(zk.FlagContainer) // through the plain create opcode
		}
	case dCreateContainer:
		op.path, op.data, op.acl, op.flags = nonRoot(), data(), createACL(), zk.FlagContainer
	case dCreateTTL:
		op.path, op.data, op.acl = nonRoot(), data(), createACL()
		op.flags = zk.FlagTTL
		if !g.skipFlags[zk.FlagPersistentSequentialWithTTL] && (r.IntN(3) == 0 || g.skipFlags[zk.FlagTTL]) {
			op.flags = zk.FlagPersistentSequentialWithTTL
		}
		// Never reaped during a run (diffCheckInterval); 0 is refused.
		op.ttl = []time.Duration{time.Hour, 90 * time.Minute, 50 * time.Millisecond, 0}[r.IntN(4)]
	case dDelete:
		op.path, op.ver = nonRoot(), ver()
	case dSet:
		op.path, op.data, op.ver = anyPath(), data(), ver()
	case dSetACL:
		// Not on the root: a restrictive ACL there would starve the rest
		// of the run of creations.
		op.path, op.ver, op.acl = nonRoot(), ver(), r.IntN(len(diffACLs))
	case dExists, dGet, dChildren, dGetACL, dSync, dExistsW, dGetW, dChildrenW:
		op.path = anyPath()
	case dAddAuth:
		op.auth = "user:pw"
		if r.IntN(3) == 0 {
			op.auth = "other:pw2"
		}
	case dClose:
	case dMulti:
		n := 2 + r.IntN(3)
		for range n {
			var s diffOp
			switch r.IntN(4) {
			case 0:
				s = diffOp{kind: dCreate, path: nonRoot(), data: data(), acl: createACL()}
				s.flags = flag([]int32{0, 0, 0, 1, 2, 3, 4, 5, 6}[r.IntN(9)])
				if r.IntN(3) > 0 {
					s.flags = 0
				}
			case 1:
				s = diffOp{kind: dDelete, path: nonRoot(), ver: ver()}
			case 2:
				s = diffOp{kind: dSet, path: anyPath(), data: data(), ver: ver()}
			case 3:
				s = diffOp{kind: dCheck, path: anyPath(), ver: ver()}
			}
			op.sub = append(op.sub, s)
		}
	}
	return op
}

// diffTrack is what resolution uses: the sequential nodes created and the
// versions last seen, as observed on the first backend.
type diffTrack struct {
	seq []string
	ver map[string]diffVers
}

type diffVers struct{ v, av int32 }

func (tr *diffTrack) path(p diffPathRef) string {
	if p.seq && len(tr.seq) > 0 {
		return tr.seq[p.n%len(tr.seq)]
	}
	if p.seq {
		return diffBasePaths[1+p.n%(len(diffBasePaths)-1)]
	}
	return diffBasePaths[p.n]
}

func (tr *diffTrack) version(path string, v diffVerRef, acl bool) int32 {
	known := tr.ver[path].v
	if acl {
		known = tr.ver[path].av
	}
	switch v.mode {
	case 1:
		return known
	case 2:
		return known + 1
	case 3:
		return v.n
	}
	return -1
}

func (tr *diffTrack) resolve(op diffOp) diffCall {
	c := diffCall{
		kind: op.kind, client: op.client, data: op.data, flags: op.flags,
		acl: op.acl, ttl: op.ttl, auth: op.auth,
	}
	if op.kind != dMulti && op.kind != dAddAuth && op.kind != dClose {
		c.path = tr.path(op.path)
		c.version = tr.version(c.path, op.ver, op.kind == dSetACL)
	}
	for _, s := range op.sub {
		sc := tr.resolve(s)
		sc.client = -1
		c.sub = append(c.sub, sc)
	}
	return c
}

// observe records what a call showed on the first backend.
func (tr *diffTrack) observe(o diffObs) {
	for _, p := range o.created {
		if !slices.Contains(tr.seq, p) {
			tr.seq = append(tr.seq, p)
		}
	}
	for _, s := range o.stats {
		tr.ver[s.path] = diffVers{v: s.st.Version, av: s.st.Aversion}
	}
}

// ---------------------------------------------------------------------------
// Results

type diffField struct{ k, v string }

// diffResult is a normalised reply: ordered key=value fields.
type diffResult struct {
	fields []diffField
	obs    diffObs
}

type diffObs struct {
	created []string // sequential nodes created
	stats   []struct {
		path string
		st   zk.Stat
	}
}

func (r *diffResult) add(k, v string) { r.fields = append(r.fields, diffField{k, v}) }

func (r *diffResult) get(k string) (string, bool) {
	for _, f := range r.fields {
		if f.k == k {
			return f.v, true
		}
	}
	return "", false
}

func (r *diffResult) set(k, v string) {
	for i := range r.fields {
		if r.fields[i].k == k {
			r.fields[i].v = v
			return
		}
	}
	r.add(k, v)
}

func (r *diffResult) String() string {
	var b strings.Builder
	for i, f := range r.fields {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.k)
		b.WriteByte('=')
		b.WriteString(f.v)
	}
	return b.String()
}

// diffCompare returns the first key whose values differ, or "".
func diffCompare(a, b *diffResult) (key, va, vb string) {
	keys := make([]string, 0, len(a.fields)+len(b.fields))
	seen := map[string]bool{}
	for _, f := range a.fields {
		if !seen[f.k] {
			seen[f.k] = true
			keys = append(keys, f.k)
		}
	}
	for _, f := range b.fields {
		if !seen[f.k] {
			seen[f.k] = true
			keys = append(keys, f.k)
		}
	}
	for _, k := range keys {
		x, okx := a.get(k)
		y, oky := b.get(k)
		if !okx {
			x = "<absent>"
		}
		if !oky {
			y = "<absent>"
		}
		if x != y {
			return k, x, y
		}
	}
	return "", "", ""
}

// ---------------------------------------------------------------------------
// One backend in one run

// diffSide is one backend's half of a run: its clients, its watches and the
// normalisation state.
//
// Normalisation:
//   - zxids are numbered in order of first appearance (czxid, mzxid, pzxid
//     of each Stat, in reply order); a zxid seen for the first time is
//     shown with the number of its predecessor among the zxids seen so far,
//     so that the order of zxids is compared as well as their equality.
//   - times: the time of a zxid (ctime for czxid, mtime for mzxid) must be
//     the same wherever the zxid appears, must not decrease with the zxid,
//     and must be within diffWallSlack of the wall clock; a Stat shows
//     "=" when mzxid == czxid (then mtime must equal ctime) and "<=" when
//     they differ (two transactions may share a millisecond).
//   - ephemeralOwner: the run's sessions become c<client>.g<generation>
//     (g counts the client's Close and reconnections); 0 and anything else
//     are shown raw (ZooKeeper shows containers and TTL nodes as 0).
//   - paths are relative to the run's root; children lists are sorted.
//   - errors are compared by their text (go-zookeeper's sentinel errors).
//   - events: per client, the multiset of events received during the step
//     (sorted); per watch channel, the event it delivered.
type diffSide struct {
	srv      diffServer
	root     string
	clients  []*diffClient
	sessions map[int64]string
	zx       diffZxids
	watches  []*diffWatch
	doctor   func(call diffCall, r *diffResult)
	// noSettle: step leaves the events it caused for a later settle.
	noSettle bool
}

type diffClient struct {
	idx, gen int
	conn     *zk.Conn
	mu       sync.Mutex
	events   []zk.Event
}

type diffWatch struct {
	id     int
	client *diffClient
	desc   string
	ch     <-chan zk.Event
	fired  bool
}

type diffQuiet struct{}

func (diffQuiet) Printf(string, ...any) {}

func (s *diffSide) connect(idx, gen int) (*diffClient, error) {
	cl := &diffClient{idx: idx, gen: gen}
	dialer := s.srv.dialer
	if dialer == nil {
		dialer = net.DialTimeout
	}
	conn, ech, err := zk.Connect([]string{s.srv.addr}, diffSessionTimeout,
		zk.WithLogger(diffQuiet{}), zk.WithLogInfo(false), zk.WithDialer(dialer),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession || ev.Type == zk.EventNotWatching {
				return
			}
			cl.mu.Lock()
			cl.events = append(cl.events, ev)
			cl.mu.Unlock()
		}))
	if err != nil {
		return nil, err
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-ech:
			if ev.State == zk.StateHasSession {
				cl.conn = conn
				s.sessions[conn.SessionID()] = fmt.Sprintf("c%d.g%d", idx, gen)
				return cl, nil
			}
		case <-deadline:
			conn.Close()
			return nil, fmt.Errorf("%s: no session within 10s", s.srv.name)
		}
	}
}

func (s *diffSide) close() {
	for _, c := range s.clients {
		if c != nil {
			c.conn.Close()
		}
	}
}

func (s *diffSide) abs(p string) string {
	if p == "" {
		return s.root
	}
	return s.root + "/" + p
}

func (s *diffSide) rel(p string) string {
	switch {
	case p == s.root:
		return ""
	case strings.HasPrefix(p, s.root+"/"):
		return p[len(s.root)+1:]
	}
	return "!" + p
}

func diffErr(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func (s *diffSide) owner(o int64) string {
	if o == 0 {
		return "0"
	}
	if l, ok := s.sessions[o]; ok {
		return l
	}
	return fmt.Sprintf("%#x", uint64(o))
}

// stat adds the normalised fields of st under prefix and records it as an
// observation of path.
func (s *diffSide) stat(r *diffResult, prefix, path string, st *zk.Stat) {
	if st == nil {
		r.add(prefix, "nil")
		return
	}
	if *st == (zk.Stat{}) {
		r.add(prefix, "zero")
		return
	}
	r.obs.stats = append(r.obs.stats, struct {
		path string
		st   zk.Stat
	}{path, *st})
	cz, mz, pz := s.zx.name(st.Czxid), s.zx.name(st.Mzxid), s.zx.name(st.Pzxid)
	r.add(prefix+".czxid", cz)
	r.add(prefix+".mzxid", mz)
	r.add(prefix+".pzxid", pz)
	var t string
	if st.Czxid == st.Mzxid {
		t = "="
		if st.Ctime != st.Mtime {
			t = fmt.Sprintf("!ctime %d != mtime %d", st.Ctime, st.Mtime)
		}
	} else {
		t = "<="
		if st.Ctime > st.Mtime {
			t = fmt.Sprintf("!ctime %d > mtime %d", st.Ctime, st.Mtime)
		}
	}
	if msg := s.zx.time(st.Czxid, st.Ctime); msg != "" {
		t += " !ctime " + msg
	}
	if msg := s.zx.time(st.Mzxid, st.Mtime); msg != "" {
		t += " !mtime " + msg
	}
	r.add(prefix+".time", t)
	r.add(prefix+".version", strconv.Itoa(int(st.Version)))
	r.add(prefix+".cversion", strconv.Itoa(int(st.Cversion)))
	r.add(prefix+".aversion", strconv.Itoa(int(st.Aversion)))
	r.add(prefix+".owner", s.owner(st.EphemeralOwner))
	r.add(prefix+".dataLength", strconv.Itoa(int(st.DataLength)))
	r.add(prefix+".numChildren", strconv.Itoa(int(st.NumChildren)))
}

// diffZxids numbers a backend's zxids in order of first appearance.
type diffZxids struct {
	canon  map[int64]int
	sorted []int64
	times  map[int64]int64
	// frozen: zxids not seen before are all shown as "new", without order
	// or time checks (for TestDiffReap, where reaping order is free).
	frozen bool
}

func (z *diffZxids) name(raw int64) string {
	if raw == 0 {
		return "0"
	}
	if c, ok := z.canon[raw]; ok {
		return "z" + strconv.Itoa(c)
	}
	if z.frozen {
		return "new"
	}
	i, _ := slices.BinarySearch(z.sorted, raw)
	pred := "none"
	if i > 0 {
		pred = "z" + strconv.Itoa(z.canon[z.sorted[i-1]])
	}
	z.sorted = slices.Insert(z.sorted, i, raw)
	c := len(z.canon) + 1
	z.canon[raw] = c
	return fmt.Sprintf("z%d(new,after %s)", c, pred)
}

// time checks and records the time of a zxid; it returns a complaint or "".
func (z *diffZxids) time(zxid, ms int64) string {
	if _, ok := z.canon[zxid]; zxid == 0 || !ok {
		return ""
	}
	if d := time.Since(time.UnixMilli(ms)); d > diffWallSlack || d < -diffWallSlack {
		return fmt.Sprintf("%d is %v from the wall clock", ms, d.Round(time.Second))
	}
	if old, ok := z.times[zxid]; ok {
		if old != ms {
			return fmt.Sprintf("%d, was %d for the same zxid", ms, old)
		}
		return ""
	}
	z.times[zxid] = ms
	i, _ := slices.BinarySearch(z.sorted, zxid)
	for j := i - 1; j >= 0; j-- {
		if t, ok := z.times[z.sorted[j]]; ok {
			if t > ms {
				return fmt.Sprintf("%d earlier than %d of an earlier zxid", ms, t)
			}
			break
		}
	}
	for j := i + 1; j < len(z.sorted); j++ {
		if t, ok := z.times[z.sorted[j]]; ok {
			if t < ms {
				return fmt.Sprintf("%d later than %d of a later zxid", ms, t)
			}
			break
		}
	}
	return ""
}

func (s *diffSide) acls(acl []zk.ACL) string {
	parts := make([]string, len(acl))
	for i, a := range acl {
		parts[i] = fmt.Sprintf("%s:%s:%d", a.Scheme, a.ID, a.Perms)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (s *diffSide) watch(r *diffResult, cl *diffClient, desc string, ch <-chan zk.Event) {
	if ch == nil {
		r.add("watch", "none")
		return
	}
	w := &diffWatch{id: len(s.watches), client: cl, desc: desc, ch: ch}
	s.watches = append(s.watches, w)
	r.add("watch", "w"+strconv.Itoa(w.id))
}

// step runs a call and collects the events it caused.
func (s *diffSide) step(c diffCall) *diffResult {
	r := &diffResult{}
	cl := s.clients[c.client]
	conn := cl.conn
	p := s.abs(c.path)
	switch c.kind {
	case dCreate, dCreateContainer, dCreateTTL:
		var got string
		var err error
		acl := diffACLs[c.acl].acl
		switch c.kind {
		case dCreate:
			got, err = conn.Create(p, c.data, c.flags, acl)
		case dCreateContainer:
			got, err = conn.CreateContainer(p, c.data, c.flags, acl)
		default:
			got, err = conn.CreateTTL(p, c.data, c.flags, acl, c.ttl)
		}
		r.add("err", diffErr(err))
		r.add("path", s.rel(got))
		if err == nil && c.flags&zk.FlagSequence != 0 {
			r.obs.created = append(r.obs.created, s.rel(got))
		}
	case dDelete:
		r.add("err", diffErr(conn.Delete(p, c.version)))
	case dExists, dExistsW:
		var ok bool
		var st *zk.Stat
		var ch <-chan zk.Event
		var err error
		if c.kind == dExists {
			ok, st, err = conn.Exists(p)
		} else {
			ok, st, ch, err = conn.ExistsW(p)
		}
		r.add("err", diffErr(err))
		r.add("exists", strconv.FormatBool(ok))
		s.stat(r, "stat", c.path, st)
		if c.kind == dExistsW {
			s.watch(r, cl, "exists "+c.path, ch)
		}
	case dGet, dGetW:
		var data []byte
		var st *zk.Stat
		var ch <-chan zk.Event
		var err error
		if c.kind == dGet {
			data, st, err = conn.Get(p)
		} else {
			data, st, ch, err = conn.GetW(p)
		}
		r.add("err", diffErr(err))
		r.add("data", diffData(data))
		s.stat(r, "stat", c.path, st)
		if c.kind == dGetW {
			s.watch(r, cl, "data "+c.path, ch)
		}
	case dSet:
		st, err := conn.Set(p, c.data, c.version)
		r.add("err", diffErr(err))
		s.stat(r, "stat", c.path, st)
	case dChildren, dChildrenW:
		var kids []string
		var st *zk.Stat
		var ch <-chan zk.Event
		var err error
		if c.kind == dChildren {
			kids, st, err = conn.Children(p)
		} else {
			kids, st, ch, err = conn.ChildrenW(p)
		}
		r.add("err", diffErr(err))
		sorted := slices.Clone(kids)
		sort.Strings(sorted)
		r.add("children", "["+strings.Join(sorted, ",")+"]")
		s.stat(r, "stat", c.path, st)
		if c.kind == dChildrenW {
			s.watch(r, cl, "children "+c.path, ch)
		}
	case dGetACL:
		acl, st, err := conn.GetACL(p)
		r.add("err", diffErr(err))
		r.add("acl", s.acls(acl))
		s.stat(r, "stat", c.path, st)
	case dSetACL:
		st, err := conn.SetACL(p, diffACLs[c.acl].acl, c.version)
		r.add("err", diffErr(err))
		s.stat(r, "stat", c.path, st)
	case dSync:
		got, err := conn.Sync(p)
		r.add("err", diffErr(err))
		r.add("path", s.rel(got))
	case dAddAuth:
		r.add("err", diffErr(conn.AddAuth("digest", []byte(c.auth))))
	case dMulti:
		ops := make([]any, len(c.sub))
		for i, sc := range c.sub {
			sp := s.abs(sc.path)
			switch sc.kind {
			case dCreate:
				ops[i] = &zk.CreateRequest{Path: sp, Data: sc.data, Acl: diffACLs[sc.acl].acl, Flags: sc.flags}
			case dDelete:
				ops[i] = &zk.DeleteRequest{Path: sp, Version: sc.version}
			case dSet:
				ops[i] = &zk.SetDataRequest{Path: sp, Data: sc.data, Version: sc.version}
			case dCheck:
				ops[i] = &zk.CheckVersionRequest{Path: sp, Version: sc.version}
			}
		}
		res, err := conn.Multi(ops...)
		r.add("err", diffErr(err))
		r.add("n", strconv.Itoa(len(res)))
		for i, mr := range res {
			k := "op" + strconv.Itoa(i)
			r.add(k+".err", diffErr(mr.Error))
			if mr.String != "" {
				r.add(k+".path", s.rel(mr.String))
				if i < len(c.sub) && c.sub[i].kind == dCreate && c.sub[i].flags&zk.FlagSequence != 0 && err == nil {
					r.obs.created = append(r.obs.created, s.rel(mr.String))
				}
			}
			if mr.Stat != nil {
				path := ""
				if i < len(c.sub) {
					path = c.sub[i].path
				}
				s.stat(r, k+".stat", path, mr.Stat)
			}
		}
	case dClose:
		conn.Close()
		// go-zookeeper invalidates the watches of a closed connection
		// (EventNotWatching) after Close returns; wait for them so that
		// the step's events are complete.
		var fired []string
		for _, w := range s.watches {
			if w.client == cl && !w.fired {
				select {
				case ev := <-w.ch:
					fired = append(fired, s.fireString(w, ev))
				case <-time.After(5 * time.Second):
					fired = append(fired, fmt.Sprintf("w%d(not invalidated by Close)", w.id))
				}
			}
		}
		if len(fired) > 0 {
			r.add("watches.closed", strings.Join(fired, " "))
		}
		s.drain(r, cl)
		nc, err := s.connect(cl.idx, cl.gen+1)
		if err != nil {
			r.add("reconnect", err.Error())
			return r
		}
		s.clients[c.client] = nc
	}
	if !s.noSettle {
		s.settle(r, c.client)
	}
	return r
}

// settle makes the events caused by the step arrive and adds them to r:
// the step's own client has them before its reply; every other client gets
// a Sync, whose reply comes after the events the server sent it before.
func (s *diffSide) settle(r *diffResult, self int) {
	var wg sync.WaitGroup
	errs := make([]error, len(s.clients))
	for i, cl := range s.clients {
		if i == self {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = cl.conn.Sync("/")
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			r.add("sync.c"+strconv.Itoa(i), err.Error())
		}
	}
	for _, cl := range s.clients {
		s.drain(r, cl)
	}
	var fired []string
	for _, w := range s.watches {
		if w.fired {
			continue
		}
		select {
		case ev := <-w.ch:
			fired = append(fired, s.fireString(w, ev))
		default:
		}
	}
	if len(fired) > 0 {
		r.add("watches", strings.Join(fired, " "))
	}
}

func (s *diffSide) fireString(w *diffWatch, ev zk.Event) string {
	w.fired = true
	return fmt.Sprintf("w%d(c%d %s)=%s", w.id, w.client.idx, w.desc, s.event(ev))
}

func (s *diffSide) event(ev zk.Event) string {
	e := strings.TrimPrefix(ev.Type.String(), "Event") + ":" + s.rel(ev.Path)
	if ev.State != zk.StateSyncConnected {
		e += "/" + ev.State.String()
	}
	if ev.Err != nil {
		e += "/" + ev.Err.Error()
	}
	return e
}

// drain adds the events a client received (through the connection's event
// callback: every event the server sent, watched or not) as a sorted list.
func (s *diffSide) drain(r *diffResult, cl *diffClient) {
	cl.mu.Lock()
	evs := cl.events
	cl.events = nil
	cl.mu.Unlock()
	if len(evs) == 0 {
		return
	}
	list := make([]string, len(evs))
	for i, ev := range evs {
		list[i] = s.event(ev)
	}
	sort.Strings(list)
	k := fmt.Sprintf("events.c%d", cl.idx)
	if old, ok := r.get(k); ok {
		list = append(strings.Split(old, " "), list...)
		sort.Strings(list)
	}
	r.set(k, strings.Join(list, " "))
}

// ---------------------------------------------------------------------------
// Runs

// diffPair is what is compared: a, the reference, and b; doctor, when set,
// returns a fresh function that alters b's results (for TestDiffPlanted).
type diffPair struct {
	a, b   diffServer
	doctor func() func(call diffCall, r *diffResult)
	stats  *diffStats // outcomes on a, when not nil
}

// diffStats counts outcomes (operation kind and error) of the reference
// backend, to show that the generator makes operations collide.
type diffStats struct {
	mu sync.Mutex
	n  map[string]int
}

func (st *diffStats) count(c diffCall, r *diffResult) {
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.n == nil {
		st.n = map[string]int{}
	}
	e, _ := r.get("err")
	st.n[c.kind.String()+" "+e]++
	for i := range c.sub {
		if e, ok := r.get(fmt.Sprintf("op%d.err", i)); ok {
			st.n["Multi/"+c.sub[i].kind.String()+" "+e]++
		}
	}
	for _, k := range []string{"watches", "watches.closed"} {
		if v, ok := r.get(k); ok {
			st.n["(watch events)"] += strings.Count(v, " ") + 1
		}
	}
}

func (st *diffStats) String() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	keys := make([]string, 0, len(st.n))
	for k := range st.n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %7d  %s", st.n[k], k)
	}
	return b.String()
}

type diffMismatch struct {
	index  int
	call   diffCall
	key    string
	va, vb string
	ra, rb string
}

func (m *diffMismatch) sig() string { return m.call.kind.String() + ":" + diffKeyClass(m.key) }

// diffKeyClass drops indexes from a field key: op2.stat.cversion →
// op.stat.cversion, events.c1 → events.
func diffKeyClass(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c >= '0' && c <= '9' {
			continue
		}
		if c == 'c' && i+1 < len(k) && k[i+1] >= '0' && k[i+1] <= '9' && i > 0 && k[i-1] == '.' {
			continue
		}
		b.WriteByte(c)
	}
	return strings.TrimSuffix(b.String(), ".")
}

var diffRunCounter atomic.Int64

// diffRun runs ops on both backends in lockstep on a fresh root with fresh
// sessions and returns the first difference, or nil. With trace, it also
// returns both backends' results of every step.
// diffOpen makes both sides of a run: a fresh root on each backend and
// nclients sessions. The caller must call close on both.
func diffOpen(p diffPair, nclients int) ([2]*diffSide, error) {
	id := diffRunCounter.Add(1)
	sides := [2]*diffSide{}
	for i, srv := range []diffServer{p.a, p.b} {
		sides[i] = &diffSide{
			srv:      srv,
			root:     fmt.Sprintf("/diff%d-%c", id, 'a'+i),
			clients:  make([]*diffClient, nclients),
			sessions: map[int64]string{},
			zx:       diffZxids{canon: map[int64]int{}, times: map[int64]int64{}},
		}
	}
	if p.doctor != nil {
		sides[1].doctor = p.doctor()
	}
	for _, s := range sides {
		for i := range nclients {
			cl, err := s.connect(i, 0)
			if err != nil {
				return sides, err
			}
			s.clients[i] = cl
		}
		if _, err := s.clients[0].conn.Create(s.root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			return sides, fmt.Errorf("%s: creating %s: %v", s.srv.name, s.root, err)
		}
	}
	return sides, nil
}

// diffLockstep runs a call on both sides at once. A backend that does not
// answer within diffOpTimeout gets a result with a timeout field; closing
// the side unblocks the stuck call.
func diffLockstep(sides [2]*diffSide, call diffCall) (res [2]*diffResult, ok bool) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	for j, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.step(call)
			if s.doctor != nil {
				s.doctor(call, r)
			}
			mu.Lock()
			res[j] = r
			mu.Unlock()
		}()
	}
	ok = diffWait(&wg, diffOpTimeout)
	mu.Lock()
	defer mu.Unlock()
	for j := range res {
		if res[j] == nil {
			res[j] = &diffResult{fields: []diffField{{"timeout", diffOpTimeout.String()}}}
		}
	}
	return res, ok
}

func diffRun(p diffPair, nclients int, ops []diffOp, trace bool) (*diffMismatch, []string, error) {
	sides, err := diffOpen(p, nclients)
	defer func() {
		for _, s := range sides {
			s.close()
		}
	}()
	if err != nil {
		return nil, nil, err
	}
	tr := &diffTrack{ver: map[string]diffVers{}}
	var transcript []string
	for i, op := range ops {
		call := tr.resolve(op)
		res, ok := diffLockstep(sides, call)
		if !ok {
			k, va, vb := diffCompare(res[0], res[1])
			return &diffMismatch{index: i, call: call, key: k, va: va, vb: vb,
				ra: res[0].String(), rb: res[1].String()}, transcript, nil
		}
		if trace {
			transcript = append(transcript, fmt.Sprintf("#%d %v\n      %s: %v\n      %s: %v",
				i, call, p.a.name, res[0], p.b.name, res[1]))
		}
		if k, va, vb := diffCompare(res[0], res[1]); k != "" {
			return &diffMismatch{index: i, call: call, key: k, va: va, vb: vb,
				ra: res[0].String(), rb: res[1].String()}, transcript, nil
		}
		p.stats.count(call, res[0])
		tr.observe(res[0].obs)
	}
	return nil, transcript, nil
}

func diffWait(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// diffShrink looks for a shorter sequence with the same kind of difference:
// first the prefix up to the difference, then removal of chunks of
// operations, halving the chunk size down to single operations, until no
// removal keeps the difference or the budget is spent.
func diffShrink(p diffPair, nclients int, ops []diffOp, m *diffMismatch, budget time.Duration) ([]diffOp, *diffMismatch, int, error) {
	deadline := time.Now().Add(budget)
	want := m.sig()
	cur := slices.Clone(ops[:m.index+1])
	best := m
	trials := 0
	for chunk := len(cur) / 2; chunk >= 1; {
		changed := false
		for start := 0; start < len(cur) && time.Now().Before(deadline); {
			end := min(start+chunk, len(cur))
			cand := append(slices.Clone(cur[:start]), cur[end:]...)
			if len(cand) == 0 {
				start = end
				continue
			}
			trials++
			m2, _, err := diffRun(p, nclients, cand, false)
			if err != nil {
				return cur, best, trials, err
			}
			if m2 != nil && m2.sig() == want {
				cur, best, changed = cand[:m2.index+1], m2, true
				continue
			}
			start = end
		}
		if time.Now().After(deadline) {
			break
		}
		if chunk == 1 && !changed {
			break
		}
		if chunk > 1 {
			chunk = max(1, min(chunk/2, len(cur)/2))
		}
	}
	return cur, best, trials, nil
}

// diffFailure is a seed whose run differed.
type diffFailure struct {
	seed     uint64
	nclients int
	ops      []diffOp
	m        *diffMismatch
}

// diffReport formats a failure, shrinking it first.
func diffReport(p diffPair, f diffFailure, budget time.Duration) string {
	var b strings.Builder
	m := f.m
	fmt.Fprintf(&b, "seed %d (%d clients; rerun with ZKGEN_DIFF_SEED=%d ZKGEN_DIFF_SEEDS=1 ZKGEN_DIFF_OPS=%d): difference at op %d: %v\n",
		f.seed, f.nclients, f.seed, len(f.ops), m.index, m.call)
	fmt.Fprintf(&b, "  field %s: %s=%s %s=%s\n", m.key, p.a.name, m.va, p.b.name, m.vb)
	fmt.Fprintf(&b, "  %s: %s\n  %s: %s\n", p.a.name, m.ra, p.b.name, m.rb)
	if budget <= 0 {
		return b.String()
	}
	start := time.Now()
	ops, m2, trials, err := diffShrink(p, f.nclients, f.ops, m, budget)
	if err != nil {
		fmt.Fprintf(&b, "  shrinking failed: %v\n", err)
		return b.String()
	}
	fmt.Fprintf(&b, "  shrunk to %d ops (from %d) in %d runs, %v; field %s: %s=%s %s=%s\n",
		len(ops), m.index+1, trials, time.Since(start).Round(time.Millisecond), m2.key, p.a.name, m2.va, p.b.name, m2.vb)
	m3, transcript, err := diffRun(p, f.nclients, ops, true)
	switch {
	case err != nil:
		fmt.Fprintf(&b, "  replay failed: %v\n", err)
	case m3 == nil:
		fmt.Fprintf(&b, "  the shrunk sequence did not differ when replayed: the difference depends on timing\n")
	}
	for _, line := range transcript {
		fmt.Fprintf(&b, "    %s\n", line)
	}
	return b.String()
}

// diffSeeds runs cfg's seeds on p and returns the failures by seed.
func diffSeeds(t *testing.T, p diffPair, cfg diffConfig) []diffFailure {
	t.Helper()
	var (
		mu       sync.Mutex
		failures []diffFailure
		errs     []error
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	for range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := next.Add(1) - 1
				if int(k) >= cfg.seeds {
					return
				}
				seed := cfg.firstSeed + uint64(k)
				nclients, ops := diffGenerate(seed, cfg.ops, cfg.gen)
				m, _, err := diffRun(p, nclients, ops, false)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("seed %d: %w", seed, err))
				} else if m != nil {
					failures = append(failures, diffFailure{seed, nclients, ops, m})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	sort.Slice(failures, func(i, j int) bool { return failures[i].seed < failures[j].seed })
	return failures
}

// diffCheck runs the seeds and reports each distinct difference (by kind of
// operation and field), shrunk, once.
func diffCheck(t *testing.T, p diffPair, cfg diffConfig) {
	t.Helper()
	start := time.Now()
	failures := diffSeeds(t, p, cfg)
	t.Logf("%s vs %s: %d seeds x %d ops in %v, %d differ",
		p.a.name, p.b.name, cfg.seeds, cfg.ops, time.Since(start).Round(time.Millisecond), len(failures))
	bySig := map[string][]uint64{}
	var order []string
	for _, f := range failures {
		s := f.m.sig()
		if bySig[s] == nil {
			order = append(order, s)
		}
		bySig[s] = append(bySig[s], f.seed)
	}
	for _, s := range order {
		for _, f := range failures {
			if f.m.sig() == s {
				t.Errorf("difference %s (seeds %v):\n%s", s, bySig[s], diffReport(p, f, cfg.shrinkBudget))
				break
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Tests

func TestDiff(t *testing.T) {
	if testing.Short() {
		t.Skip("differential test against real ZooKeeper: skipped with -short")
	}
	cfg := diffLoadConfig(t)
	p := diffPair{a: diffStartReal(t, "real", diffCheckInterval), b: diffStartSecond(t, diffCheckInterval)}
	p.stats = &diffStats{}
	diffCheck(t, p, cfg)
	t.Logf("outcomes on %s:%v", p.a.name, p.stats)
}

// TestDiffPlanted checks the checker: the second backend is the same real
// server (under another root) with one result doctored; the comparator must
// catch each planted difference and shrink it to a few operations.
func TestDiffPlanted(t *testing.T) {
	if testing.Short() {
		t.Skip("differential test against real ZooKeeper: skipped with -short")
	}
	real := diffStartReal(t, "real", diffCheckInterval)
	plants := []struct {
		name   string
		key    string // class of the field that must differ
		maxOps int    // longest acceptable shrunk sequence
		doctor func(call diffCall, r *diffResult) bool
	}{
		{"children name", "children", 5, func(c diffCall, r *diffResult) bool {
			v, _ := r.get("children")
			if v == "[]" || v == "" {
				return false
			}
			r.set("children", strings.Replace(v, "[", "[z", 1))
			return true
		}},
		{"sequence number", "path", 5, func(c diffCall, r *diffResult) bool {
			v, _ := r.get("path")
			if c.kind != dCreate || c.flags&zk.FlagSequence == 0 || len(v) < 10 {
				return false
			}
			n, err := strconv.Atoi(v[len(v)-10:])
			if err != nil {
				return false
			}
			r.set("path", fmt.Sprintf("%s%010d", v[:len(v)-10], n+1))
			return true
		}},
		{"cversion", "stat.cversion", 5, func(c diffCall, r *diffResult) bool {
			v, ok := r.get("stat.cversion")
			if !ok || v == "0" {
				return false
			}
			n, _ := strconv.Atoi(v)
			r.set("stat.cversion", strconv.Itoa(n+1))
			return true
		}},
		{"lost watch event", "watches", 5, func(c diffCall, r *diffResult) bool {
			if _, ok := r.get("watches"); !ok {
				return false
			}
			r.set("watches", "")
			return true
		}},
		{"error", "err", 5, func(c diffCall, r *diffResult) bool {
			if v, _ := r.get("err"); v != zk.ErrNodeExists.Error() {
				return false
			}
			r.set("err", "ok")
			return true
		}},
	}
	for _, pl := range plants {
		t.Run(strings.ReplaceAll(pl.name, " ", "_"), func(t *testing.T) {
			p := diffPair{a: real, b: diffServer{name: "doctored", addr: real.addr}}
			p.doctor = func() func(diffCall, *diffResult) {
				done := false
				return func(c diffCall, r *diffResult) {
					if !done {
						done = pl.doctor(c, r)
					}
				}
			}
			nclients, ops := diffGenerate(7, 300, diffGenOpts{})
			m, _, err := diffRun(p, nclients, ops, false)
			if err != nil {
				t.Fatal(err)
			}
			if m == nil {
				t.Fatalf("planted %s: no difference found", pl.name)
			}
			if got := diffKeyClass(m.key); got != pl.key {
				t.Fatalf("planted %s: difference in %s, want %s: %s=%s %s=%s", pl.name, m.key, pl.key, p.a.name, m.va, p.b.name, m.vb)
			}
			short, m2, trials, err := diffShrink(p, nclients, ops, m, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if len(short) > pl.maxOps {
				t.Errorf("planted %s: shrunk to %d ops, want at most %d", pl.name, len(short), pl.maxOps)
			}
			_, transcript, err := diffRun(p, nclients, short, true)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("planted %s: caught at op %d (%s), shrunk to %d ops in %d runs (%s: %s vs %s)%s",
				pl.name, m.index, m.key, len(short), trials, m2.key, m2.va, m2.vb, "\n  "+strings.Join(transcript, "\n  "))
		})
	}
}

// ---------------------------------------------------------------------------
// Reaping

// diffReapTTL is the TTL of the TTL nodes a reaping run creates. Their
// reaping is compared after the run's multi, so the calls before it must
// take less than the TTL: with 2 s, 16 seeds at once under the race
// detector on a loaded CI machine took longer, and the real server reaped
// a node mid-run that the simulator, on its own clock, had not reaped yet
// (CI, seed 1). A run that takes longer is reported as such, not as a
// difference.
const (
	diffReapInterval = 100 * time.Millisecond
	diffReapTTL      = 10 * time.Second
)

// diffReapCalls builds a random tree of containers, TTL nodes (short and
// long), persistent and ephemeral nodes, sets some data, and watches every
// path from every client.
func diffReapCalls(seed uint64, nclients int) []diffCall {
	r := rand.New(rand.NewPCG(seed, 0x4ea9))
	var calls []diffCall
	for _, p := range diffBasePaths[1:] {
		if r.IntN(8) == 0 {
			continue
		}
		c := diffCall{kind: dCreate, client: r.IntN(nclients), path: p, data: []byte(p)}
		switch x := r.IntN(100); {
		case x < 25:
		case x < 60:
			c.kind, c.flags = dCreateContainer, zk.FlagContainer
		case x < 75:
			c.kind, c.flags, c.ttl = dCreateTTL, zk.FlagTTL, diffReapTTL
		case x < 85:
			c.kind, c.flags, c.ttl = dCreateTTL, zk.FlagTTL, time.Hour
		default:
			c.flags = zk.FlagEphemeral
		}
		calls = append(calls, c)
	}
	for range 3 {
		p := diffBasePaths[1+r.IntN(len(diffBasePaths)-1)]
		calls = append(calls, diffCall{kind: dSet, client: r.IntN(nclients), path: p, data: []byte("set"), version: -1})
	}
	for cl := range nclients {
		for _, p := range diffBasePaths {
			calls = append(calls, diffCall{kind: dExistsW, client: cl, path: p})
			if r.IntN(2) == 0 {
				calls = append(calls, diffCall{kind: dChildrenW, client: cl, path: p})
			}
		}
	}
	return calls
}

// dump lists the tree under the root: path, data and Stat of every node.
func (s *diffSide) dump() (*diffResult, error) {
	r := &diffResult{}
	var walk func(rel string) error
	walk = func(rel string) error {
		conn := s.clients[0].conn
		data, st, err := conn.Get(s.abs(rel))
		if err == zk.ErrNoNode {
			return nil // reaped meanwhile; the next dump will tell
		}
		if err != nil {
			return err
		}
		kids, _, err := conn.Children(s.abs(rel))
		if err != nil && err != zk.ErrNoNode {
			return err
		}
		r.add("node "+rel, diffData(data))
		s.stat(r, "node "+rel+" stat", rel, st)
		sort.Strings(kids)
		for _, k := range kids {
			child := k
			if rel != "" {
				child = rel + "/" + k
			}
			if err := walk(child); err != nil {
				return err
			}
		}
		return nil
	}
	return r, walk("")
}

// diffReapRun builds the same tree on both backends, deletes some leaves in
// one multi (so that containers become empty at one instant), waits until
// the short TTLs have passed and both trees are stable, and compares the
// trees and the events each client received meanwhile.
func diffReapRun(p diffPair, seed uint64) (diff, summary string, err error) {
	const nclients = 2
	sides, err := diffOpen(p, nclients)
	defer func() {
		for _, s := range sides {
			s.close()
		}
	}()
	if err != nil {
		return "", "", err
	}
	var log []string
	differ := func(what string, a, b *diffResult) string {
		k, va, vb := diffCompare(a, b)
		if k == "" {
			return ""
		}
		return fmt.Sprintf("seed %d: %s differs in %s: %s=%s %s=%s\n  %s: %s\n  %s: %s\n  steps:\n    %s",
			seed, what, k, p.a.name, va, p.b.name, vb, p.a.name, a, p.b.name, b, strings.Join(log, "\n    "))
	}
	created := map[string]bool{}
	start := time.Now()
	for _, call := range diffReapCalls(seed, nclients) {
		res, ok := diffLockstep(sides, call)
		log = append(log, fmt.Sprintf("%v → %s", call, res[0]))
		if took := time.Since(start); took >= diffReapTTL {
			return "", "", fmt.Errorf("the calls before the multi took %v, longer than the TTL (%v): reaping may have begun, the run compares nothing", took, diffReapTTL)
		}
		if d := differ(call.String(), res[0], res[1]); d != "" || !ok {
			return d, "", nil
		}
		if e, _ := res[0].get("err"); e == "ok" && call.kind != dSet && !strings.HasSuffix(call.kind.String(), "W") {
			created[call.path] = true
		}
	}
	// Delete some leaves at once.
	pick := rand.New(rand.NewPCG(seed, 0x1eaf))
	multi := diffCall{kind: dMulti}
	for _, path := range diffBasePaths {
		if !created[path] || pick.IntN(5) < 2 {
			continue
		}
		leaf := true
		for q := range created {
			if strings.HasPrefix(q, path+"/") {
				leaf = false
			}
		}
		if leaf {
			multi.sub = append(multi.sub, diffCall{kind: dDelete, path: path, version: -1})
		}
	}
	// Reaping may begin as soon as the multi is done: its events are
	// collected with those of the reaping, at the end.
	for _, s := range sides {
		s.noSettle = true
	}
	res, ok := diffLockstep(sides, multi)
	log = append(log, fmt.Sprintf("%v → %s", multi, res[0]))
	if d := differ(multi.String(), res[0], res[1]); d != "" || !ok {
		return d, "", nil
	}
	// Wait for the short TTLs, then until neither tree changes between
	// two dumps several reaping intervals apart.
	time.Sleep(time.Until(start.Add(diffReapTTL + 5*diffReapInterval)))
	for _, s := range sides {
		s.zx.frozen = true
	}
	var dumps [2]*diffResult
	for deadline := time.Now().Add(10 * time.Second); ; {
		stable := true
		for j, s := range sides {
			d, err := s.dump()
			if err != nil {
				return "", "", fmt.Errorf("%s: dump: %v", s.srv.name, err)
			}
			if dumps[j] == nil || d.String() != dumps[j].String() {
				stable = false
			}
			dumps[j] = d
		}
		if stable || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * diffReapInterval)
	}
	if d := differ("tree after reaping", dumps[0], dumps[1]); d != "" {
		return d, "", nil
	}
	var evs [2]*diffResult
	for j, s := range sides {
		evs[j] = &diffResult{}
		s.settle(evs[j], -1)
	}
	nodes := 0
	for _, f := range dumps[0].fields {
		if !strings.Contains(f.k, " stat") {
			nodes++
		}
	}
	v, _ := evs[0].get("watches")
	summary = fmt.Sprintf("seed %d: %d nodes created, %d deleted by the multi, %d left after reaping; %d watches fired by the multi and the reaping",
		seed, len(created), len(multi.sub), nodes-1, strings.Count(v, "=")) // the root is not counted
	return differ("events of reaping", evs[0], evs[1]), summary, nil
}

// TestDiffReap compares container and TTL reaping: both backends reap
// every diffReapInterval; the comparison waits until both are done.
func TestDiffReap(t *testing.T) {
	if testing.Short() {
		t.Skip("differential test against real ZooKeeper: skipped with -short")
	}
	seeds := diffEnvInt(t, "ZKGEN_DIFF_REAP_SEEDS", 16)
	first := uint64(diffEnvInt(t, "ZKGEN_DIFF_SEED", 1))
	p := diffPair{a: diffStartReal(t, "real", diffReapInterval), b: diffStartSecond(t, diffReapInterval)}
	var wg sync.WaitGroup
	out := make([]string, seeds)
	sums := make([]string, seeds)
	errs := make([]error, seeds)
	for i := range seeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], sums[i], errs[i] = diffReapRun(p, first+uint64(i))
		}()
	}
	wg.Wait()
	for i := range seeds {
		switch {
		case errs[i] != nil:
			t.Errorf("seed %d: %v", first+uint64(i), errs[i])
		case out[i] != "":
			t.Error(out[i])
		default:
			t.Log(sums[i])
		}
	}
}
