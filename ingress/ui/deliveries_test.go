package ui

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// postHook posts a signed GitHub delivery (the test forge's secret "s").
func (e *env) postHook(event, delivery, body string) {
	e.t.Helper()
	mac := hmac.New(sha256.New, []byte("s"))
	mac.Write([]byte(body))
	req, _ := http.NewRequest(http.MethodPost, e.http.URL+"/hooks/github", bytes.NewReader([]byte(body)))
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		e.t.Fatalf("delivery %s: %d", delivery, resp.StatusCode)
	}
}

const pushBody = `{"ref":"refs/heads/main","before":"0000000000000000000000000000000000000000","after":"6dcb09b5b57875f334f61aebed695e2e4193db5e",
"repository":{"full_name":"o/<b>r</b>","clone_url":"https://github.com/o/r.git"},"sender":{"login":"bob"},"head_commit":{"id":"6dcb09b5b57875f334f61aebed695e2e4193db5e"}}`

// TestDeliveriesPages: the deliveries list shows each stored delivery with
// its outcome (and, for one not matched against the workflows, why) and
// filters as the API does (a bad filter is a 400 on the
// page); a delivery's page shows its event, headers (never the signature)
// and a Replay button whose post, with the session's CSRF token only,
// replays it and comes back naming the replay, which the page lists.
// Hostile text stays text. Without Deps.Deliveries there are no such pages.
func TestDeliveriesPages(t *testing.T) {
	e := newEnv(t, envOpts{deliveries: true, pageSize: 1})
	c := e.client()
	e.login(c)
	e.postHook("push", "ui-d-1", pushBody)

	list := e.do(c, http.MethodGet, "/deliveries", nil)
	if list.code != http.StatusOK || !strings.Contains(list.body, `href="/deliveries/github/ui-d-1"`) || !strings.Contains(list.body, `data-outcome="skipped"`) ||
		strings.Contains(list.body, "<b>r</b>") || !strings.Contains(list.body, "o/&lt;b&gt;r&lt;/b&gt;") {
		t.Fatalf("deliveries list: %d\n%s", list.code, list.body)
	}
	if p := e.do(c, http.MethodGet, "/deliveries?outcome=ran", nil); p.code != http.StatusOK || strings.Contains(p.body, "ui-d-1") || !strings.Contains(p.body, "No deliveries match.") {
		t.Errorf("filtered by outcome ran: %d\n%s", p.code, p.body)
	}
	if p := e.do(c, http.MethodGet, "/deliveries?event=push&forge=github", nil); !strings.Contains(p.body, "ui-d-1") {
		t.Errorf("filtered by event push: %d\n%s", p.code, p.body)
	}
	if p := e.do(c, http.MethodGet, "/deliveries?outcome=maybe", nil); p.code != http.StatusBadRequest || !strings.Contains(p.body, "outcome must be one of") {
		t.Errorf("a bad outcome: %d\n%s", p.code, p.body)
	}

	page := e.do(c, http.MethodGet, "/deliveries/github/ui-d-1", nil)
	if page.code != http.StatusOK || !strings.Contains(page.body, `id="replay"`) || !strings.Contains(page.body, "X-Github-Event") ||
		strings.Contains(page.body, "sha256=") || !strings.Contains(page.body, "refs/heads/main") {
		t.Fatalf("delivery page: %d\n%s", page.code, page.body)
	}
	if a := e.do(c, http.MethodPost, "/deliveries/github/ui-d-1/replay", url.Values{"csrf": {"x"}}); a.code != http.StatusForbidden {
		t.Errorf("replay without the CSRF token: %d, want 403", a.code)
	}
	a := e.do(c, http.MethodPost, "/deliveries/github/ui-d-1/replay", url.Values{"csrf": {csrfOf(t, page.body)}})
	if a.code != http.StatusSeeOther || a.header.Get("Location") != "/deliveries/github/ui-d-1?replayed=ui-d-1%3Areplay%3A1" {
		t.Fatalf("replay: %d %q %s", a.code, a.header.Get("Location"), a.body)
	}
	page = e.do(c, http.MethodGet, a.header.Get("Location"), nil)
	if !strings.Contains(page.body, `id="replayed"`) || !strings.Contains(page.body, `data-replay="ui-d-1:replay:1"`) {
		t.Errorf("after the replay:\n%s", page.body)
	}
	e.postHook("push", "ui-d-2", pushBody)
	first := e.do(c, http.MethodGet, "/deliveries?event=push", nil)
	m := regexp.MustCompile(`href="(/deliveries\?[^"]*cursor=[^"]*)" id="next-page"`).FindStringSubmatch(first.body)
	if !strings.Contains(first.body, "ui-d-2") || strings.Contains(first.body, `"/deliveries/github/ui-d-1"`) || m == nil {
		t.Fatalf("the first page of one: %d\n%s", first.code, first.body)
	}
	older := e.do(c, http.MethodGet, html.UnescapeString(m[1]), nil)
	if !strings.Contains(older.body, `"/deliveries/github/ui-d-1"`) || strings.Contains(older.body, "ui-d-2") || strings.Contains(older.body, `id="next-page"`) {
		t.Errorf("the older page %s: %d\n%s", m[1], older.code, older.body)
	}
	// An event hookrun does not handle: listed, skipped, with the reason;
	// its page says why; it cannot be replayed (no body is kept).
	e.postHook("check_run", "ui-d-3", `{}`)
	const unhandled = "event check_run is not handled"
	if p := e.do(c, http.MethodGet, "/deliveries?outcome=skipped", nil); !strings.Contains(p.body, `data-delivery="ui-d-3" data-outcome="skipped"`) ||
		!strings.Contains(p.body, `<span class="why">`+unhandled+`</span>`) {
		t.Errorf("the unhandled delivery in the list: %d\n%s", p.code, p.body)
	}
	page = e.do(c, http.MethodGet, "/deliveries/github/ui-d-3", nil)
	if page.code != http.StatusOK || !strings.Contains(page.body, `<dd id="delivery-reason">`+unhandled+`</dd>`) || !strings.Contains(page.body, "No workflow was considered: "+unhandled) {
		t.Errorf("the unhandled delivery's page: %d\n%s", page.code, page.body)
	}
	if strings.Contains(page.body, `id="replay"`) || !strings.Contains(page.body, `id="no-replay"`) {
		t.Errorf("the unhandled delivery's page offers a replay:\n%s", page.body)
	}
	if a := e.do(c, http.MethodPost, "/deliveries/github/ui-d-3/replay", url.Values{"csrf": {csrfOf(t, page.body)}}); a.code != http.StatusConflict || !strings.Contains(a.body, unhandled) {
		t.Errorf("replaying the unhandled delivery: %d\n%s", a.code, a.body)
	}
	if p := e.do(c, http.MethodGet, "/deliveries/github/nope", nil); p.code != http.StatusNotFound {
		t.Errorf("unknown delivery: %d", p.code)
	}
	if p := e.do(e.client(), http.MethodGet, "/deliveries", nil); p.code != http.StatusSeeOther {
		t.Errorf("deliveries without a session: %d, want the login redirect", p.code)
	}

	plain := newEnv(t, envOpts{})
	pc := plain.client()
	plain.login(pc)
	if p := plain.do(pc, http.MethodGet, "/deliveries", nil); p.code != http.StatusNotFound {
		t.Errorf("deliveries without Deps.Deliveries: %d, want 404", p.code)
	}
	if p := plain.do(pc, http.MethodGet, "/", nil); strings.Contains(p.body, `href="/deliveries"`) {
		t.Errorf("the nav links to deliveries without Deps.Deliveries")
	}
}
