package runtime

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// The hand-built owner metadata is what encoding/json makes of the Owner
// it decodes to, byte for byte.
func TestOwnerJSON(t *testing.T) {
	for _, purpose := range []string{"", "nightly rebuild", `quote " back\slash`, "<tag> & ünïcode\n"} {
		got := ownerOf(0x1a2b3c4d5e, purpose)
		o, ok := parseOwner(got)
		if !ok {
			t.Fatalf("purpose %q: owner data %s does not parse", purpose, got)
		}
		if o.Purpose != purpose || o.Session != "0x1a2b3c4d5e" || o.Host != hostname() || o.Since.IsZero() {
			t.Fatalf("purpose %q: decoded %+v", purpose, o)
		}
		want, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("purpose %q:\n got %s\nwant %s", purpose, got, want)
		}
	}
}

// Node name prefixes carry a fresh version-4 UUID in each layout's form.
func TestFamilyPrefix(t *testing.T) {
	curator := regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-$`)
	kazoo := regexp.MustCompile(`^[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}__lock__$`)
	a, b := curatorMutex.prefix(nil, 0), curatorMutex.prefix(nil, 0)
	if !curator.MatchString(a) || a == b {
		t.Fatalf("curator prefixes %q, %q", a, b)
	}
	if k := kazooMutex.prefix(nil, 0); !kazoo.MatchString(k) {
		t.Fatalf("kazoo prefix %q", k)
	}
	if g := (*client.Rand)(nil).NewGUID(); len(g) != 36 || !curator.MatchString("_c_"+g+"-lock-") {
		t.Fatalf("guid %q", g)
	}
}
