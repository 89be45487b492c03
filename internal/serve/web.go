package serve

import (
	"embed"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

//go:embed page
var page embed.FS

// Handler serves the model:
//
//	/            the live page (page/index.html, no build step)
//	/events      the state as server-sent events, one at each change
//	/api/state   the state as JSON (State)
//	/metrics     the Prometheus exposition of the recipe facts, and of
//	             this process (Go runtime, process)
//
// Every route only reads.
func Handler(m *Model) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(m), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, r *http.Request) {
		data, err := m.JSON(time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(append(data, '\n'))
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) { events(m, w, r) })
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { asset(w, "index.html", "text/html; charset=utf-8") })
	mux.HandleFunc("GET /app.js", func(w http.ResponseWriter, r *http.Request) { asset(w, "app.js", "text/javascript; charset=utf-8") })
	mux.HandleFunc("GET /style.css", func(w http.ResponseWriter, r *http.Request) { asset(w, "style.css", "text/css; charset=utf-8") })
	return mux
}

func asset(w http.ResponseWriter, name, typ string) {
	data, err := page.ReadFile("page/" + name)
	if err != nil {
		http.NotFound(w, nil)
		return
	}
	w.Header().Set("Content-Type", typ)
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(data)
}

// minEventGap spaces the events of one stream: a burst of model changes
// reaches the page as at most one state per gap.
const minEventGap = 200 * time.Millisecond

// keepAlive is how often a stream sends the state when nothing changed,
// so that proxies keep it open and a dead client is noticed.
const keepAlive = 15 * time.Second

// events streams the state to one page: now, then after each change.
func events(m *Model, w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	for {
		changed := m.Changed()
		data, err := m.JSON(time.Now())
		if err != nil {
			return
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(minEventGap):
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		case <-time.After(keepAlive):
		}
	}
}
