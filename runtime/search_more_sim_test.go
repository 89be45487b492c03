package runtime_test

// moreWorkloads are the search's workloads beyond search_sim_test.go's:
// the searched list is both (allWorkloads).
var moreWorkloads []workload

func allWorkloads() []workload { return append(append([]workload(nil), searchWorkloads...), moreWorkloads...) }
