package cli

import (
	"net"
	"os"

	"github.com/prometheus/exporter-toolkit/web"
	"gopkg.in/yaml.v3"
)

// webFlags is how zkgen serve protects its endpoints: the Prometheus
// exporter toolkit's web configuration file (TLS, basic auth), as
// exporters take it with --web.config.file.
type webFlags struct {
	config string // --web.config.file; "": plain HTTP, no auth
	open   bool   // --web.open: no config on a non-loopback address is meant
	scheme string // http, or https when the config has a TLS certificate
}

// check validates the web configuration file, before anything listens.
func (w *webFlags) check() error {
	w.scheme = "http"
	if w.config == "" {
		return nil
	}
	if err := web.Validate(w.config); err != nil {
		return userErrorf("--web.config.file %s: %v", w.config, err)
	}
	data, err := os.ReadFile(w.config)
	if err != nil {
		return userErrorf("--web.config.file: %v", err)
	}
	var doc struct {
		TLS struct {
			Cert     string `yaml:"cert_file"`
			CertBody string `yaml:"cert"`
		} `yaml:"tls_server_config"`
	}
	if yaml.Unmarshal(data, &doc) == nil && (doc.TLS.Cert != "" || doc.TLS.CertBody != "") {
		w.scheme = "https"
	}
	return nil
}

// exposed refuses a listener other hosts can reach when nothing protects
// it: the page shows queue items, config values, payloads and session ids.
func (w *webFlags) exposed(ln net.Listener) error {
	if w.config != "" || w.open {
		return nil
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ok && a.IP.IsLoopback() {
		return nil
	}
	return userErrorf("--addr %s is reachable from other hosts and nothing protects it: give --web.config.file (TLS and basic auth, docs/operating.md), or --web.open if it is meant to be open", ln.Addr())
}

// toolkit is the exporter toolkit's configuration for serving on a
// listener zkgen opened.
func (w *webFlags) toolkit() *web.FlagConfig {
	systemd := false
	return &web.FlagConfig{WebListenAddresses: &[]string{}, WebSystemdSocket: &systemd, WebConfigFile: &w.config}
}
