package github

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/hookrun/hookrun/workflows"
)

// referenceGitHub normalizes body the long way: go-github's ParseWebHook
// decodes it into go-github's own event type, which is encoded again and
// normalized from that. ok is false when go-github refuses the body.
func referenceGitHub(t *testing.T, event string, body []byte) (*workflows.Event, bool) {
	t.Helper()
	parsed, err := github.ParseWebHook(event, body)
	if err != nil {
		return nil, false
	}
	canonical, err := json.Marshal(parsed)
	if err != nil {
		t.Fatalf("encoding go-github's %T again: %v", parsed, err)
	}
	ev, err := normalizeGitHub(event, canonical)
	if err != nil {
		// What go-github decodes but normalization refuses (no
		// pull_request, ...) must be refused the same way from the body.
		if _, err2 := normalizeGitHub(event, body); err2 == nil {
			t.Fatalf("go-github's decoding is refused (%v) but the body is accepted", err)
		}
		return nil, false
	}
	return ev, true
}

// FuzzGitHubProjection: the projections decode every body go-github's
// ParseWebHook accepts, and to the same Event.
func FuzzGitHubProjection(f *testing.F) {
	events := []string{ghPullRequest, ghIssueComment, ghIssues, ghPush, ghPullReviewComment, ghPullReview, ghCheckRun, ghCheckSuite}
	for _, fx := range fixtures(f) {
		for i, ev := range events {
			if ev == fx.event {
				f.Add(uint8(i), readFile(f, fx.path))
			}
		}
	}
	f.Add(uint8(0), []byte(`{"Pull_Request":{"HEAD":{"repo":null},"labels":[null,{"name":"x"}]},"repository":{}}`))
	f.Add(uint8(1), []byte(`{"issue":{"pull_request":{}},"comment":{"body":"a\u00e9\ud800"},"repository":{"full_name":"a/b"}}`))
	f.Add(uint8(0), []byte(`{"pull_request":{"html-url":"u","htmlurl":"v","HTML_URL":"w"},"repository":{"fullname":"a/b","full_name":"c/d"},"sender":{"login":"\xff\xfe"}}`))
	f.Add(uint8(2), []byte(`{"issue":{"number":1},"issue":{"title":"t"},"repository":{"full_name":"a/b"},"repository":null}`))
	f.Add(uint8(3), []byte(`{"repository":{},"pusher":{"username":"u","name":"n"},"ref":"refs/heads/x","ref":"refs/tags/y"}`))
	// updated_at as go-github reads it: null, Unix seconds and
	// milliseconds, an offset; the label and users an action is about.
	f.Add(uint8(0), []byte(`{"pull_request":{"updated_at":null},"label":{"name":"bug"},"requested_reviewer":{"login":"a"},"repository":{}}`))
	f.Add(uint8(0), []byte(`{"pull_request":{"updated_at":1557933633},"requested_team":{"slug":"t"},"repository":{}}`))
	f.Add(uint8(2), []byte(`{"issue":{"updated_at":1557933633000},"assignee":{"login":"a"},"label":null,"repository":{}}`))
	f.Add(uint8(1), []byte(`{"issue":{},"comment":{"updated_at":"2019-05-15T17:20:33+02:00"},"repository":{}}`))
	f.Add(uint8(5), []byte(`{"pull_request":{},"review":{"submitted_at":"2019-05-15T15:20:33.5Z"},"repository":{}}`))
	f.Add(uint8(6), []byte(`{"action":"rerequested","check_run":{"head_sha":"a","external_id":"r","pull_requests":[null,{"number":3}]},"repository":{}}`))
	f.Add(uint8(7), []byte(`{"action":"rerequested","check_suite":{"head_sha":"a","pull_requests":[{"number":0}]},"repository":{},"sender":{"login":"o"}}`))
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		event := events[int(which)%len(events)]
		want, ok := referenceGitHub(t, event, body)
		if !ok {
			return
		}
		got, err := normalizeGitHub(event, body)
		if err != nil {
			t.Fatalf("go-github accepts the body, the projection does not: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Fatalf("projection and go-github differ:\n got %s\nwant %s", g, w)
		}
	})
}

// Every fixture normalizes through the projection exactly as through
// go-github (the fuzz target's seeds, run as a plain test too).
func TestGitHubProjectionFixtures(t *testing.T) {
	for _, fx := range fixtures(t) {
		if fx.event == ghPing {
			continue
		}
		body := readFile(t, fx.path)
		want, ok := referenceGitHub(t, fx.event, body)
		if !ok {
			t.Fatalf("%s: go-github refuses the fixture", fx.path)
		}
		got, err := normalizeGitHub(fx.event, body)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: projection %+v (%v), go-github %+v", fx.path, got, err, want)
		}
	}
}
