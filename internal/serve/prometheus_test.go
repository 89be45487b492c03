package serve_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// prometheus is a real Prometheus server (Debian's prometheus package)
// scraping one target every 100ms.
type prometheus struct {
	t   *testing.T
	api string
}

// startPrometheus starts Prometheus scraping target (host:port). Without
// the prometheus command the test is skipped, or failed under CI.
func startPrometheus(t *testing.T, target string) *prometheus {
	t.Helper()
	return startPrometheusWith(t, target, "")
}

// startPrometheusWith is startPrometheus with more settings for the
// scrape job (YAML lines indented for the job).
func startPrometheusWith(t *testing.T, target, job string) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prometheus is not installed (apt-get install prometheus; .ci/test does)")
		}
		t.Skip("prometheus is not installed (apt-get install prometheus)")
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf("global: {scrape_interval: 100ms, scrape_timeout: 90ms}\nscrape_configs:\n  - job_name: zkgen\n    static_configs: [{targets: [%q]}]\n%s", target, job)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	api := "127.0.0.1:" + port
	_, out := process(t, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+api, "--log.level=warn")
	p := &prometheus{t: t, api: "http://" + api}
	// ready once its API answers
	for deadline := time.Now().Add(60 * time.Second); ; {
		if resp, err := http.Get(p.api + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus did not become ready:\n%s", out.all())
		}
		time.Sleep(100 * time.Millisecond) // no readiness event to wait on: it is another process's HTTP endpoint
	}
	return p
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// query returns the values of an instant query, by the series' labels
// rendered as {k="v",...} (sorted), or an error.
func (p *prometheus) query(q string) (map[string]float64, error) {
	resp, err := http.Get(p.api + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", q, r.Error)
	}
	out := map[string]float64{}
	for _, s := range r.Data.Result {
		v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		out[fmt.Sprint(len(out))] = v
	}
	return out, nil
}

// await waits until the query's only series has value want, as scraped
// by Prometheus; it fails the test after a minute with the last answer.
// (Prometheus offers no way to wait for a value: this polls its API.)
func (p *prometheus) await(q string, want float64) {
	p.t.Helper()
	var last map[string]float64
	var lastErr error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		last, lastErr = p.query(q)
		if lastErr == nil && len(last) == 1 && last["0"] == want {
			return
		}
	}
	p.t.Fatalf("prometheus: %s: want one series of value %v; last answer %v (err %v)", q, want, last, lastErr)
}

// The operator's questions, answered by what Prometheus scraped from zkgen
// serve while processes using the generated handles hold and wait for a
// lock, put and take queue items, kill items into dead letters, hand over
// the leadership and share the partitions, and while ZooKeeper goes away
// and comes back.
func TestPrometheusScrapesServe(t *testing.T) {
	srv := zktest.Start(t)
	provision(t, srv.Addr())
	base := startServe(t, srv.Addr())
	prom := startPrometheus(t, strings.TrimPrefix(base, "http://"))
	prom.await(`zkgen_serve_zookeeper_up`, 1)

	a := startActor(t, "alpha", srv.Addr())
	b := startActor(t, "beta", srv.Addr())

	t.Log("a lock: its holder, then a waiter, then the hand-over")
	a.do("lock 7")
	prom.await(`zkgen_lock_holders{resource="order_lock",shard="7"}`, 1)
	prom.await(`zkgen_lock_waiters{resource="order_lock",shard="7"}`, 0)
	prom.await(`count(zkgen_lock_held_seconds{resource="order_lock",shard="7"} >= 0)`, 1)
	b.send("lock 7")
	prom.await(`zkgen_lock_waiters{resource="order_lock",shard="7"}`, 1)
	a.do("unlock 7")
	b.done("lock 7")
	prom.await(`zkgen_lock_waiters{resource="order_lock",shard="7"}`, 0)
	prom.await(`zkgen_lock_holders{resource="order_lock",shard="7"}`, 1)
	prom.await(`zkgen_serve_instances{resource="order_lock"}`, 1)

	t.Log("dead letters")
	a.do("dead 2")
	prom.await(`zkgen_queue_dead_letters{resource="outbox"}`, 2)
	prom.await(`zkgen_queue_items{resource="outbox"}`, 0)

	t.Log("a queue's depth, its claimed items and its oldest item")
	a.do("put 5")
	prom.await(`zkgen_queue_items{resource="outbox"}`, 5)
	prom.await(`count(zkgen_queue_oldest_item_age_seconds{resource="outbox"} > 0)`, 1)
	b.do("take 2")
	prom.await(`zkgen_queue_claimed{resource="outbox"}`, 2)
	prom.await(`zkgen_queue_items{resource="outbox"}`, 5)
	b.do("ack")
	prom.await(`zkgen_queue_items{resource="outbox"}`, 3)
	prom.await(`zkgen_queue_claimed{resource="outbox"}`, 0)

	t.Log("a leader change")
	epoch, _ := strconv.ParseFloat(a.do("campaign"), 64)
	prom.await(`zkgen_election_leader{resource="scheduler"}`, 1)
	prom.await(`zkgen_election_leader_epoch{resource="scheduler"}`, epoch)
	b.send("campaign")
	prom.await(`zkgen_election_candidates{resource="scheduler"}`, 2)
	a.do("resign")
	if e2, _ := strconv.ParseFloat(b.done("campaign"), 64); e2 != epoch+1 {
		t.Errorf("the second leader's epoch is %v, want %v", e2, epoch+1)
	}
	prom.await(`zkgen_election_leader_epoch{resource="scheduler"}`, epoch+1)
	prom.await(`zkgen_election_candidates{resource="scheduler"}`, 1)

	t.Log("partitions move as members join and leave")
	a.do("join")
	prom.await(`zkgen_partitioner_members{resource="shards"}`, 1)
	prom.await(`zkgen_partitions_owned{resource="shards",member=~".*alpha.*"}`, 64)
	b.do("join")
	prom.await(`zkgen_partitioner_members{resource="shards"}`, 2)
	prom.await(`zkgen_partitions_owned{resource="shards",member=~".*alpha.*"}`, 32)
	prom.await(`zkgen_partitions_owned{resource="shards",member=~".*beta.*"}`, 32)
	prom.await(`zkgen_partitions_unowned{resource="shards"}`, 0)
	a.do("leave")
	prom.await(`zkgen_partitions_owned{resource="shards",member=~".*beta.*"}`, 64)
	prom.await(`zkgen_partitioner_members{resource="shards"}`, 1)

	t.Log("an outage: ZooKeeper stops, then comes back")
	srv.RequireLocal(t)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	prom.await(`zkgen_serve_zookeeper_up`, 0)
	// the last values read stay, beside zookeeper_up 0
	prom.await(`zkgen_queue_items{resource="outbox"}`, 3)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	prom.await(`zkgen_serve_zookeeper_up`, 1)
	prom.await(`zkgen_queue_items{resource="outbox"}`, 3)
}

// The sample alerting rules shipped in docs/prometheus are valid and fire
// when they should: promtool's unit tests of them pass.
func TestAlertingRules(t *testing.T) {
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is not installed (apt-get install prometheus; .ci/test does)")
		}
		t.Skip("promtool is not installed (apt-get install prometheus)")
	}
	cmd := exec.Command(bin, "test", "rules", "zkgen-alerts.test.yml")
	cmd.Dir = "../../docs/prometheus"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
