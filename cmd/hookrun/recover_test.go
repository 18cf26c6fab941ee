package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRecoverCommand: `hookrun recover --since 6h` reads the configured
// repository webhook's deliveries through the (fake) GitHub API with the
// configured token and asks for the failed one again, leaving the one that
// succeeded on a later attempt; --dry-run asks for nothing.
func TestRecoverCommand(t *testing.T) {
	now := time.Now().UTC()
	var (
		mu     sync.Mutex
		redone []string
	)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer ghp_cli" {
			w.WriteHeader(401)
			return
		}
		const list = "/api/v3/repos/acme/api/hooks/7/deliveries"
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "GET" && r.URL.Path == list:
			d := func(id int, guid string, code int, ago time.Duration) map[string]any {
				return map[string]any{"id": id, "guid": guid, "status_code": code, "status": "x", "event": "push",
					"delivered_at": now.Add(-ago).Format(time.RFC3339)}
			}
			_ = json.NewEncoder(w).Encode([]any{d(3, "g-ok-later", 202, time.Minute), d(2, "g-lost", 503, 2*time.Minute), d(1, "g-ok-later", 503, 3*time.Minute)})
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/attempts"):
			mu.Lock()
			redone = append(redone, r.URL.Path)
			mu.Unlock()
			w.WriteHeader(202)
			_, _ = w.Write([]byte("{}"))
		default:
			w.WriteHeader(404)
		}
	}))
	defer api.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
allow_repos: ["acme/*"]
github:
  webhook_secret: s
  token: ghp_cli
  api_url: %s/api/v3/
  recover:
    hooks: [{repo: acme/api, id: 7}]
`, api.URL))
	for _, dry := range []bool{true, false} {
		args := []string{"recover", "--config", cfg, "--since", "6h"}
		if dry {
			args = append(args, "--dry-run")
		}
		var out, errOut bytes.Buffer
		if code := dispatch(context.Background(), args, &out, &errOut); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out.String(), errOut.String())
		}
		want := "redelivered"
		if dry {
			want = "would redeliver"
		}
		if !strings.Contains(out.String(), "3 delivery attempts listed, 1 deliveries failed") || !strings.Contains(out.String(), "g-lost") ||
			!strings.Contains(out.String(), want) || strings.Contains(out.String(), "g-ok-later") {
			t.Fatalf("%v output:\n%s", args, out.String())
		}
		mu.Lock()
		n := len(redone)
		mu.Unlock()
		if dry && n != 0 || !dry && (n != 1 || redone[0] != "/api/v3/repos/acme/api/hooks/7/deliveries/2/attempts") {
			t.Fatalf("%v: redelivery requests %v", args, redone)
		}
	}
	bad := writeConfig(t, "allow_repos: [\"acme/*\"]\ngithub:\n  webhook_secret: s\n  token: t\n  recover:\n    interval: 10m\n")
	var out, errOut bytes.Buffer
	if code := dispatch(context.Background(), []string{"serve", "--config", bad}, &out, &errOut); code == 0 ||
		!strings.Contains(errOut.String(), "github.recover") || !strings.Contains(errOut.String(), "no webhook to list") {
		t.Fatalf("serve with recover.interval and no webhook: exit %d\n%s", code, errOut.String())
	}
}
