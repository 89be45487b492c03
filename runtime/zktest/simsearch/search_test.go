package simsearch

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The search's check of itself: a workload that leaves something to
// chance (a coin not drawn from the seed) is caught by replayMismatch,
// with where the two histories part.
func TestReplayCheckCatchesChance(t *testing.T) {
	coin := Workload{Name: "coin", Procs: 1, Ops: 1, Rate: 0.01, Run: func(r *Run) {
		r.Start()
		time.Sleep(time.Second)
		r.Event(0, "before the coin")
		r.Event(0, "heads: %v", rand.IntN(2) == 0) // chance, not the seed
		time.Sleep(time.Second)
		r.Event(0, "after the coin")
	}}
	s := &searcher{t: t, ws: []Workload{coin}}
	cfg := coin.Config(1)
	for range 40 {
		msg, _, _ := s.replayMismatch(coin, cfg, RunOnce(t, coin, cfg))
		if msg == "" {
			continue
		}
		for _, want := range []string{"REPLAY MISMATCH", "they part at 1.000 virtual seconds, the server's step", "both:      1.000s p0 before the coin", "first:     1.000s p0 heads: ", "again:     1.000s p0 heads: "} {
			if !strings.Contains(msg, want) {
				t.Errorf("the mismatch's report lacks %q:\n%s", want, msg)
			}
		}
		return
	}
	t.Fatal("40 replays of a coin toss all ran to one history")
}

// plantedWorkload is a workload with a bug planted on purpose: each of
// its processes creates Ops nodes, and a reply lost to a fault ("cut
// after the request") breaks its invariant. Each waits pause before each
// create.
func plantedWorkload(servers int, pause time.Duration) Workload {
	return Workload{Name: fmt.Sprintf("planted-%d", servers), Procs: 3, Ops: 6, Rate: 0.1, Ensemble: servers, Run: func(r *Run) {
		r.Start()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // virtual
		defer cancel()
		var wg sync.WaitGroup
		for i := range r.Config.Procs {
			w := r.Session(i)
			wg.Go(func() {
				for n := range r.Config.Ops {
					time.Sleep(pause)
					if s, err := w.Get(ctx); err == nil {
						_, err = s.Conn().Create(fmt.Sprintf("/p%d-%d", i, n), nil, 0, zk.WorldACL(zk.PermAll))
						r.Event(i, "create %d: %v", n, err)
					}
				}
			})
		}
		wg.Wait()
		r.Calm()
		for _, f := range r.Faults() {
			if strings.HasPrefix(f.Kind, "cut after") {
				r.Violate("no reply is lost", "%s", f)
			}
		}
		r.CloseSessions()
	}}
}

// A failure shrinks to a minimal schedule — one operation, one fault, no
// chaos, and as few processes as still fail — that replays 10 times of
// 10 to one history, on one server and on an ensemble of three.
func TestShrinkReplays(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector shuffles goroutines on purpose")
	}
	t.Setenv("ZKGEN_SIM_SHRINK", "10m")
	for _, servers := range []int{1, 3} {
		w := plantedWorkload(servers, 0)
		s := &searcher{t: t, ws: []Workload{w}}
		cfg := w.Config(1)
		cfg.Chaos = 2
		var r *Run
		for ; cfg.Seed < 50; cfg.Seed++ {
			if r = RunOnce(t, w, cfg); r.Failed() {
				break
			}
		}
		if !r.Failed() {
			t.Fatalf("%s: no seed below 50 failed", w.Name)
		}
		small, sr, _ := s.shrink(w, cfg, r)
		if small.Ops != 1 || small.Chaos != 0 || len(sr.Faults()) != 1 {
			t.Errorf("%s: %s shrank to %s, %d faults; want 1 operation, no chaos, 1 fault", w.Name, cfg, small, len(sr.Faults()))
		}
		if fewer := small; fewer.Procs > 1 { // minimal: one process less passes
			fewer.Procs--
			if RunOnce(t, w, fewer).Failed() {
				t.Errorf("%s: %s shrank to %s, but %s fails too", w.Name, cfg, small, fewer)
			}
		}
		want := Hash(sr.History())
		for k := range 10 {
			if rr := RunOnce(t, w, small); !rr.Failed() || Hash(rr.History()) != want {
				t.Fatalf("%s: replay %d of %s: failed %v; %s", w.Name, k+1, small, rr.Failed(), Divergence(sr.History(), rr.History()))
			}
		}
	}
}

// A saved schedule replays to its history with its faults forced, though
// the configuration would now draw others: here a rate six times as
// high, which without the plan runs to another history.
func TestScheduleForcesTheSavedFaults(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector shuffles goroutines on purpose")
	}
	w, cfg, sc := savedSchedule(t)
	if len(sc.Faults) == 0 || len(sc.Chaos) == 0 {
		t.Fatalf("the schedule has %d faults and %d chaos events; the test wants both", len(sc.Faults), len(sc.Chaos))
	}
	later := cfg
	later.Rate = 0.3
	if tl := RunOnce(t, w, later).History(); fmt.Sprintf("%016x", Hash(tl)) == sc.Hash {
		t.Fatalf("rate 0.3 ran to the history of rate 0.05; the test cannot tell a forced plan")
	}
	later.Plan = sc.Faults
	if tl := RunOnce(t, w, later).History(); fmt.Sprintf("%016x", Hash(tl)) != sc.Hash {
		t.Errorf("the schedule's faults forced did not replay its history: %s", Divergence(sc.History, tl))
	}
}

// A saved schedule's chaos events are forced too: a configuration that
// would draw no chaos at all (and other request faults) replays the
// saved history with the schedule's faults and chaos events forced.
func TestScheduleForcesTheSavedChaos(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector shuffles goroutines on purpose")
	}
	w, cfg, sc := savedSchedule(t)
	if len(sc.ChaosPlan) == 0 || len(sc.ChaosPlan) != len(sc.Chaos) {
		t.Fatalf("the schedule has %d chaos events for %d chaos lines; the test wants some, one per line",
			len(sc.ChaosPlan), len(sc.Chaos))
	}
	later := cfg
	later.Chaos, later.Plan = 0, sc.Faults
	if tl := RunOnce(t, w, later).History(); fmt.Sprintf("%016x", Hash(tl)) == sc.Hash {
		t.Fatalf("no chaos ran to the history of 2 chaos events; the test cannot tell a forced plan")
	}
	later.ChaosPlan = sc.ChaosPlan
	if tl := RunOnce(t, w, later).History(); fmt.Sprintf("%016x", Hash(tl)) != sc.Hash {
		t.Errorf("the schedule's chaos forced did not replay its history: %s", Divergence(sc.History, tl))
	}
}

// savedSchedule runs a planted workload on three servers, with request
// faults and two chaos events, and returns the schedule file it saved,
// read back.
func savedSchedule(t *testing.T) (Workload, Config, schedule) {
	t.Helper()
	t.Setenv("ZKGEN_SIM_SCHEDULES", t.TempDir())
	w := plantedWorkload(3, time.Second) // long enough for the chaos
	cfg := Config{Seed: 5, Procs: 3, Ops: 6, Rate: 0.05, Chaos: 2}
	file, err := saveSchedule(w, cfg, RunOnce(t, w, cfg))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var sc schedule
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatal(err)
	}
	return w, cfg, sc
}
