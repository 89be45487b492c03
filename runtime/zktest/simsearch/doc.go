// Package simsearch searches a service built on zkgen for bugs: a test
// runs several processes of the service's own code, each on its own
// sessions (Run.Session; a generated client is coord.New(s)), on the
// simulated ZooKeeper of package sim, under faults drawn from a seed —
// lost replies, requests cut, replies held, sessions expired and cut off,
// lagging followers, leader elections, servers replaced, processes frozen
// dead (Run.Crash) — on virtual time (testing/synctest). The test checks
// its own invariants as the processes run and at the end (Run.Violate).
//
// Search tries seeds; on a broken invariant it runs the seed again to
// check that it replays to one history, shrinks it (fewer processes,
// operations, faults) while it still fails, and prints the seed, the
// broken invariants, the shrunk history with its hash, and the command
// that replays it; it saves the run's schedule to a file that replays
// the same faults on later code. The runtime's own search (bash .ci/sim)
// is this package run on the recipes' workloads; docs/reliability.md
// ("Searching for bugs") describes the faults and the reports, and
// docs/testing.md shows a search of the example's job system.
//
// A workload replays its seed exactly when everything it does is decided
// by the seed: it draws its choices from Run.Rand, never from math/rand's
// global source or the clock's real time, and no goroutine of it picks
// among channels ready at one instant (select picks at random). Every
// run is on one processor, whatever GOMAXPROCS the test runs with
// (RunOnce): the server takes one step at a time, and the goroutines
// that one step wakes then run in one order. A workload that leaves
// something to chance says what (Workload.Races).
//
// A minimal search:
//
//	func TestMyServiceSearch(t *testing.T) {
//		w := simsearch.Workload{Name: "mysvc", Procs: 3, Ops: 5, Rate: 0.02, Ensemble: 3,
//			Run: func(r *simsearch.Run) {
//				r.Start()
//				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
//				defer cancel()
//				var wg sync.WaitGroup
//				for i := range r.Config.Procs {
//					w := r.Session(i)
//					wg.Go(func() {
//						for n := 0; n < r.Config.Ops && ctx.Err() == nil; {
//							s, err := w.Get(ctx) // a new session once the last one ended
//							if err != nil {
//								continue
//							}
//							// ... the service's code on coord.New(s), then:
//							r.Event(i, "did %d", n)
//							n++
//						}
//					})
//				}
//				wg.Wait()
//				if ctx.Err() != nil {
//					r.Stall("not done")
//				}
//				r.Finish("/my-service", 30*time.Second, "/my-service/state/*")
//			}}
//		simsearch.Search(t, []simsearch.Workload{w}, simsearch.Options{Seeds: 3})
//	}
package simsearch
