package simsearch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// Config is what fixes a run: the seed and the size. Its String form
// ("seed=7,procs=3,ops=6,rate=0.05,chaos=4") is what a report's replay
// line carries and ParseConfig reads.
type Config struct {
	Seed   uint64
	Procs  int      // processes (Run.Session's who: 0 to Procs-1)
	Ops    int      // operations per process, as the workload counts them
	Rate   float64  // the probability of a fault per request
	Limit  int      // at most this many request faults (0: no limit)
	Skip   []string // request faults left out (sim.Fault.ID)
	Chaos  int      // chaos events: sessions and servers cut off, elections, lagging followers
	Faults []string // the chaos faults drawn (sim.ChaosFaults); all if none
	// Plan forces a saved run's request faults (a schedule file's)
	// instead of drawing them from Seed (sim.WithFaultPlan); not in
	// String.
	Plan []sim.Fault
	// ChaosPlan, if not nil, forces a saved run's chaos events instead of
	// drawing them (sim.Chaos.Plan; Chaos and Faults unused); not in
	// String.
	ChaosPlan []sim.ChaosEvent
}

// String is the configuration as ParseConfig reads it.
func (c Config) String() string {
	s := fmt.Sprintf("seed=%d,procs=%d,ops=%d,rate=%g,chaos=%d", c.Seed, c.Procs, c.Ops, c.Rate, c.Chaos)
	if c.Limit > 0 {
		s += fmt.Sprintf(",limit=%d", c.Limit)
	}
	if len(c.Skip) > 0 {
		s += ",skip=" + strings.Join(c.Skip, "+")
	}
	if len(c.Faults) > 0 {
		s += ",faults=" + strings.Join(c.Faults, "+")
	}
	return s
}

// ParseFaults reads '+'-separated chaos fault names (sim.ChaosFaults), as
// ZKGEN_SIM_FAULTS and a configuration's faults= carry them.
func ParseFaults(v string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(v, "+") {
		if f == "" {
			continue
		}
		if !slices.Contains(sim.ChaosFaults(), f) {
			return nil, fmt.Errorf("no chaos fault %q; there are: %s", f, strings.Join(sim.ChaosFaults(), " "))
		}
		out = append(out, f)
	}
	return out, nil
}

// ParseConfig reads a configuration in its String form; seed, procs and
// ops are required.
func ParseConfig(s string) (Config, error) {
	var c Config
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return c, fmt.Errorf("config %q: %q is not key=value", s, kv)
		}
		if err := c.set(k, v); err != nil {
			return c, fmt.Errorf("config %q: %s: %v", s, k, err)
		}
	}
	if c.Seed == 0 || c.Procs <= 0 || c.Ops <= 0 {
		return c, fmt.Errorf("config %q: seed, procs and ops are required", s)
	}
	return c, nil
}

// set sets the field key names to v.
func (c *Config) set(k, v string) error {
	var err error
	switch k {
	case "seed":
		c.Seed, err = strconv.ParseUint(v, 10, 64)
	case "procs":
		c.Procs, err = strconv.Atoi(v)
	case "ops":
		c.Ops, err = strconv.Atoi(v)
	case "rate":
		c.Rate, err = strconv.ParseFloat(v, 64)
	case "limit":
		c.Limit, err = strconv.Atoi(v)
	case "skip":
		c.Skip = strings.Split(v, "+")
	case "chaos":
		c.Chaos, err = strconv.Atoi(v)
	case "faults":
		c.Faults, err = ParseFaults(v)
	default:
		err = fmt.Errorf("unknown key")
	}
	return err
}
