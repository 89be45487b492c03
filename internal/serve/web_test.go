package serve_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// zkgen serve protects its endpoints as a Prometheus exporter does: with
// --web.config.file's basic auth, a request without the credentials is
// refused on every route, and a Prometheus scrape configured with them
// works.
func TestServeWebConfigAuth(t *testing.T) {
	srv := zktest.Start(t)
	provision(t, srv.Addr())
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webYML := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webYML, []byte("basic_auth_users:\n  scraper: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startServe(t, srv.Addr(), "--web.config.file", webYML)
	for _, route := range []string{"/", "/metrics", "/api/state", "/events"} {
		if code := status(t, base+route, "", ""); code != http.StatusUnauthorized {
			t.Errorf("%s without credentials: %d, want 401", route, code)
		}
		if code := status(t, base+route, "scraper", "wrong"); code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong password: %d, want 401", route, code)
		}
	}
	if code := status(t, base+"/api/state", "scraper", "s3cret"); code != http.StatusOK {
		t.Errorf("/api/state with the credentials: %d, want 200", code)
	}
	prom := startPrometheusWith(t, strings.TrimPrefix(base, "http://"),
		"    basic_auth: {username: scraper, password: s3cret}\n")
	prom.await(`zkgen_serve_zookeeper_up`, 1)
}

// status GETs url (with basic auth when user is set) and returns the
// status code; an event stream's body is not read.
func status(t *testing.T, url, user, pass string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// An address other hosts reach is refused without --web.config.file,
// before serve connects anywhere, and served with --web.open.
func TestServeRefusesAnOpenAddress(t *testing.T) {
	out, err := exec.Command(zkgenBinary(t), "serve", "-f", exampleSpec, "--servers", "127.0.0.1:1", "--addr", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--web.config.file") {
		t.Fatalf("serve on 0.0.0.0 without a web config: %v\n%s", err, out)
	}
	srv := zktest.Start(t)
	provision(t, srv.Addr())
	_, lines := processIn(t, filepath.Dir(exampleSpec), zkgenBinary(t), "serve", "-f", filepath.Base(exampleSpec),
		"--servers", srv.Addr(), "--addr", "0.0.0.0:0", "--web.open")
	lines.wait(t, regexp.MustCompile(`zkgen serve: http://\S+/`), 0, 30*time.Second)
}
