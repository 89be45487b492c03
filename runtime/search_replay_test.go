package runtime_test

import (
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/zkgen/zkgen/runtime/zktest/simsearch"
)

// How deterministic the search is (docs/reliability.md, "How deterministic
// a replay is"): a seed fixes the faults, the chaos, every process's
// random choices, and — on a stepped server (sim.WithSteps) — the order in
// which the server serves the processes; a replay then repeats the run's
// history, line for line. The search checks it: it runs a failing seed
// again, and now and then a passing one, and compares the two histories'
// hashes. A mismatch is a bug of the search itself (something left to
// Go's scheduler), reported with the first line where the histories part.

// Every run is on one processor (simsearch.RunOnce), whatever GOMAXPROCS
// the test process has: on two, goroutines of one process that one step
// of the server woke together (the session's own handling of an expiry or
// a cut connection and a caller's request; an old session's reconnection
// and its successor's dial) ran in parallel, and which acted first was
// Go's choice; 14 workloads replayed a seed to 2 histories in 20 to 50
// runs that way before. The tests below run on one processor and on two
// to show that it no longer matters, and under the race detector on one,
// where its scheduler shuffles the goroutines ready at one instant.

// determinismProcs are the processor counts TestSimReplaysOneHistory
// runs on (ZKGEN_SIM_DETERMINISM_PROCS, like "1 2"; default both).
func determinismProcs() []int {
	var out []int
	for _, f := range strings.Fields(os.Getenv("ZKGEN_SIM_DETERMINISM_PROCS")) {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return []int{1, 2}
	}
	return out
}

// determinismRuns is how many times TestSimReplaysOneHistory runs a seed
// on each processor count (ZKGEN_SIM_DETERMINISM_RUNS; default 20, and 5
// under the race detector).
func determinismRuns() int {
	if n, err := strconv.Atoi(os.Getenv("ZKGEN_SIM_DETERMINISM_RUNS")); err == nil && n > 0 {
		return n
	}
	if raceDetector {
		return 5
	}
	return 20
}

// Every workload of the search replays
// a seed to one history, on one processor and on two: the same events in
// the same order, the same node names, the same faults (docs/reliability.md,
// "How deterministic a replay is"). The seed and size are those the
// figures there were measured with. Under the race detector, whose
// scheduler runs the goroutines ready at one instant in a random order on
// every run (a harsher test than a second processor), it runs on one.
func TestSimReplaysOneHistory(t *testing.T) {
	cfg := simsearch.Config{Seed: 5, Procs: 3, Ops: 6, Rate: 0.05, Chaos: 2}
	n := determinismRuns()
	procsList := determinismProcs()
	if raceDetector {
		procsList = []int{1}
	}
	for _, w := range selectWorkloads(t, strings.Fields(os.Getenv("ZKGEN_SIM_RECIPES"))) {
		t.Run(w.name, func(t *testing.T) {
			for _, procs := range procsList {
				prev := goruntime.GOMAXPROCS(procs)
				first := runOnce(t, w, cfg).History()
				distinct := map[uint64]bool{simsearch.Hash(first): true}
				var other []string
				for range n - 1 {
					tl := runOnce(t, w, cfg).History()
					if h := simsearch.Hash(tl); !distinct[h] {
						distinct[h], other = true, tl
					}
				}
				goruntime.GOMAXPROCS(prev)
				if len(distinct) > 1 {
					t.Errorf("%s on %d processors: %d distinct histories in %d runs; %s", cfg, procs, len(distinct), n, simsearch.Divergence(first, other))
				}
			}
		})
	}
}

// foundNondeterministic are seeds that once replayed to several
// histories on one processor or under the race detector's shuffle, each
// kept with its cause, now removed: each must replay to one history in
// TestSimFoundSeedsReplay (determinismRuns times on one processor and on
// two; under -race at least 20 times, on one).
var foundNondeterministic = []struct{ recipe, config, cause string }{
	{"queue-fifo", "seed=777000,procs=4,ops=30,rate=0.03,chaos=4",
		"the workload's done closed at the instant a consumer checked it (2 histories in 20)"},
	{"ackqueue-priority", "seed=673990788,procs=4,ops=30,rate=0.03,chaos=4",
		"a consumer's wait took the one change select picked among several ready (4 to 5 histories in 30)"},
	{"queue-prefetch", "seed=764337939,procs=4,ops=30,rate=0.03,chaos=4",
		"a Take with an ended ctx on an ended session took the free mutex or the end, select's pick (2 histories in 20)"},
	{"ackqueue-delay", "seed=366098203,procs=4,ops=30,rate=0.03,chaos=4",
		"an item's due time and the Take's deadline came at one instant, and the wait woke by either timer first (2 histories in 20)"},
	{"service", "seed=208124332,procs=3,ops=8,rate=0.03,chaos=4",
		"a keeper's turn to send on a connection that closed at that instant, its session ending with it, was a step or none (2 to 4 histories in 20)"},
	{"cache", "seed=711540130,procs=4,ops=30,rate=0.03,chaos=4",
		"a cache's turn to send on a connection closed at that instant, its session ending with it, was a step or none (2 to 3 histories in 20)"},
	{"ensemble-ackqueue", "seed=935622194,procs=4,ops=30,rate=0.03,chaos=4",
		"two retry loops started at one instant (a marker's delete, a claim's release) took their back-off keys in the scheduler's order (4 histories in 20)"},
	{"ensemble-lock", "seed=976668284,procs=4,ops=8,rate=0.03,chaos=4",
		"a failed connect's message (and its lookups' order) followed go-zookeeper's shuffle of the server list (18 histories in 20)"},
	{"reap-ackqueue", "seed=18387830,procs=4,ops=30,rate=0.03,chaos=4",
		"the operator's retried request, let go at once on its closed connection, raced its session's reconnection (2 histories in 20)"},
	{"ackqueue-dead", "seed=316678853,procs=4,ops=20,rate=0.03,chaos=4",
		"a chunk claim's linger fell due at the instant a Take ended and armed it again, and released the claim or kept it as Go ran the two (2 histories in 20)"},
	{"ensemble-partitioner", "seed=630750258,procs=3,ops=4,rate=0.02,chaos=4",
		"a member told lost listed the partitions its releasing hooks had ended at that instant, or not (2 histories in 20)"},
	{"ensemble-cache", "seed=345053676,procs=4,ops=30,rate=0.03,chaos=4",
		"a cache's Sync and its run paused by the retry policy's Delay, jittered by the system's randomness, not the seed's (19 histories in 20)"},
	{"ensemble-service", "seed=979364566,procs=3,ops=8,rate=0.03,chaos=4",
		"go-zookeeper's reconnect dial and the session's give-up fell due at one instant, and the dial reconnected the ended session (and closed it on the server) or was refused, as Go ran the two (6 histories in 10)"},
	{"ensemble-queue", "seed=387396189,procs=4,ops=30,rate=0.03,chaos=4",
		"the producers' end drew the consumers' stop line by a timer one millisecond on, and a Take's deadline fell due at that instant: the consumer that timed out saw the line or not, as Go ran the two timers' goroutines (2 histories in 20 on one processor)"},
	{"double-barrier", "seed=402292888,procs=3,ops=5,rate=0.02,chaos=4",
		"two processes' sessions ended at one instant, and one decided whether the round was over from whether the other was through with it, as Go ran the two (2 histories in 30 on one processor)"},
	// Found under the race detector's shuffled scheduler, which runs the
	// goroutines ready at one instant in a random order each time.
	{"service", "seed=214238293,procs=3,ops=8,rate=0.03,chaos=4",
		"a lost connection woke a session's configuration read and a registration as go-zookeeper dialled again: each asked its turn to send on the old connection (let go without a step) or on the new one, as Go ran them (once in 6,439 runs beside the race-detector suite; 2 histories in 40 under -race)"},
	{"reap-partitioner", "seed=7000,procs=3,ops=4,rate=0.02,chaos=4",
		"a member told lost listed the partitions it still acted on while a start hook of that instant had run or not (2 histories in 10 under -race)"},
	{"multilock", "seed=7001,procs=4,ops=6,rate=0.03,chaos=4",
		"an Unlock at the instant its session expired said why the lock was lost as its tenure's goroutine had seen the end or not (3 histories in 10 under -race)"},
	{"ensemble-cache", "seed=8000,procs=4,ops=30,rate=0.03,chaos=4",
		"a writer's request made while its session's newest connection had been refused (nobody served, an election) took no turn, and was queued before or after go-zookeeper failed its queue at the end of a round of dials (7 histories in 10 under -race)"},
	{"cache", "seed=8002,procs=4,ops=30,rate=0.03,chaos=4",
		"a cache whose watch failed on a connection not yet established tried again at once or at the next connection, as a wake-up for other work was pending or not (2 histories in 10 under -race)"},
}

func TestSimFoundSeedsReplay(t *testing.T) {
	n := determinismRuns()
	procsList := determinismProcs()
	if raceDetector { // see TestSimReplaysOneHistory
		// 20 runs: some of these parted in 1 run of 5 under the shuffle.
		procsList, n = []int{1}, max(n, 20)
	}
	for _, f := range foundNondeterministic {
		t.Run(f.recipe, func(t *testing.T) {
			cfg, err := simsearch.ParseConfig(f.config)
			if err != nil {
				t.Fatal(err)
			}
			w := selectWorkloads(t, []string{f.recipe})[0]
			for _, procs := range procsList {
				prev := goruntime.GOMAXPROCS(procs)
				first := runOnce(t, w, cfg).History()
				for range n - 1 {
					if tl := runOnce(t, w, cfg).History(); simsearch.Hash(tl) != simsearch.Hash(first) {
						goruntime.GOMAXPROCS(prev)
						t.Fatalf("%s on %d processors replays to another history again (%s): %s",
							f.config, procs, f.cause, simsearch.Divergence(first, tl))
					}
				}
				goruntime.GOMAXPROCS(prev)
			}
		})
	}
}
