package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"testing"
	"time"
)

func fakeDeliveries(n int, now time.Time, every time.Duration) []fakeDelivery {
	var out []fakeDelivery
	for i := range n {
		code := 200
		if i%3 == 1 {
			code = 503
		}
		out = append(out, fakeDelivery{ID: int64(9000 + i), GUID: fmt.Sprintf("guid-%02d", i), Event: "pull_request", Code: code,
			At: now.Add(-time.Duration(i) * every)})
	}
	return out
}

// HookDeliveries reads a repository webhook's deliveries with the token
// through GitHub's cursor pages, newest first, and stops at the first page
// that reaches past since; Redeliver posts the attempt.
func TestHookDeliveries(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	now := time.Now().Truncate(time.Second)
	f.hookDels[77] = fakeDeliveries(20, now, 30*time.Minute) // 20 deliveries over 10 h
	rep := newReporter(t, f, nil)
	ctx := context.Background()
	hook := &Hook{Repo: f.repo, ID: 77}
	ds, err := rep.HookDeliveries(ctx, hook, now.Add(-6*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 13 || ds[0].GUID != "guid-00" || ds[12].GUID != "guid-12" || ds[1].OK() || !ds[0].OK() || ds[1].Hook != *hook {
		t.Fatalf("%d deliveries: %+v", len(ds), ds)
	}
	if n := f.count("GET", `^/repos/Codertocat/Hello-World/hooks/77/deliveries$`); n != 5 {
		t.Errorf("%d pages read, want 5 (of 3, the page crossing 6 h the last)", n)
	}
	if err := rep.Redeliver(ctx, ds[1]); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.redone, []string{"77/9001"}) {
		t.Fatalf("redelivered %v", f.redone)
	}
	if _, err := rep.HookDeliveries(ctx, &Hook{Repo: f.repo, ID: 78}, now.Add(-time.Hour)); err == nil {
		t.Error("an unknown webhook: no error")
	}
	if _, err := rep.HookDeliveries(ctx, nil, now.Add(-time.Hour)); err == nil {
		t.Error("the app's webhook without an app: no error")
	}
	for _, r := range f.allRequests() {
		if r.Auth != "Bearer "+f.token {
			t.Errorf("%s %s sent Authorization %q", r.Method, r.Path, r.Auth)
		}
	}
}

// The App's webhook is listed and redelivered with the App's JWT.
func TestAppHookDeliveries(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	f := newFakeGitHub(t)
	f.token = ""
	f.appID, f.appKey, f.appSlug = 4242, &key.PublicKey, "hookrun-test"
	f.tokenTTL = []time.Duration{time.Hour}
	now := time.Now().Truncate(time.Second)
	f.hookDels[0] = fakeDeliveries(4, now, time.Minute)
	rep := newReporter(t, f, func(c *Config) { c.Token = ""; c.AppID = 4242; c.PrivateKey = pemKey })
	ds, err := rep.HookDeliveries(context.Background(), nil, now.Add(-time.Hour))
	if err != nil || len(ds) != 4 || ds[1].Hook != (Hook{}) {
		t.Fatalf("%+v %v", ds, err)
	}
	if err := rep.Redeliver(context.Background(), ds[1]); err != nil || !slices.Equal(f.redone, []string{"0/9001"}) {
		t.Fatalf("redeliver: %v %v", err, f.redone)
	}
	if n := f.count("POST", `^/app/hook/deliveries/9001/attempts$`); n != 1 {
		t.Errorf("%d redelivery requests, want 1", n)
	}
}
