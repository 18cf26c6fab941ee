package app

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

func TestKeepLeftover(t *testing.T) {
	now := time.Now()
	young, old := ulidAt(now.Add(-time.Hour)), ulidAt(now.Add(-25*time.Hour))
	rec := func(s workflows.Status, beat time.Duration) *stores.RunRecord {
		return &stores.RunRecord{Status: s, HeartbeatAt: now.Add(-beat)}
	}
	for _, tc := range []struct {
		name string
		rec  *stores.RunRecord
		err  error
		keep bool
	}{
		{"run unknown here, younger than orphan_age: maybe another installation's", nil, stores.ErrNotFound, true},
		{"store unreadable", nil, errors.New("timeout"), true},
		{"running, fresh heartbeat", rec(workflows.StatusRunning, time.Second), nil, true},
		{"running, stale heartbeat", rec(workflows.StatusRunning, time.Minute), nil, false},
		{"queued (handed back, not started again)", rec(workflows.StatusQueued, time.Hour), nil, true},
		{"succeeded", rec(workflows.StatusSucceeded, 0), nil, false},
		{"failed", rec(workflows.StatusFailed, 0), nil, false},
		{"cancelled", rec(workflows.StatusCancelled, 0), nil, false},
	} {
		if got := keepLeftover(young, tc.rec, tc.err, now, 15*time.Second, 24*time.Hour); got != tc.keep {
			t.Errorf("%s: keep = %v, want %v", tc.name, got, tc.keep)
		}
	}
	for _, tc := range []struct {
		name, id string
		keep     bool
	}{
		{"unknown and older than orphan_age", old, false},
		{"unknown and older than orphan_age, id in lowercase (a sandbox name)", strings.ToLower(old), false},
		{"unknown, young", young, true},
		{"unknown, not a ULID: no age", "contracttest-abc", true},
	} {
		if got := keepLeftover(tc.id, nil, fmt.Errorf("getting run record: %w", stores.ErrNotFound), now, 15*time.Second, 24*time.Hour); got != tc.keep {
			t.Errorf("%s: keep = %v, want %v", tc.name, got, tc.keep)
		}
	}
}

// ulidAt is a run id made at t: a ULID (the time in its first ten
// Crockford base32 digits).
func ulidAt(t time.Time) string {
	const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	ms := uint64(t.UnixMilli())
	var b [10]byte
	for i := 9; i >= 0; i-- {
		b[i] = crockford[ms&31]
		ms >>= 5
	}
	return string(b[:]) + "0000000000000000"
}

// A harness that runs sbx on the host finds sbx's login where its user
// keeps it: hookrun's HOME when host steps run as hookrun, step_user's
// own home when they run isolated (hookrun's XDG_* dirs then left out);
// a server credential never goes along.
func TestSbxHostEnv(t *testing.T) {
	env := []workflows.EnvVar{{Name: "HOME", Value: "/root"}, {Name: "PATH", Value: "/usr/bin"},
		{Name: "XDG_CONFIG_HOME", Value: "/root/.config"}, {Name: "DOCKER_HOST", Value: "tcp://d:2376"}, {Name: "DOCKER_CONTEXT", Value: "ghp_leaked"}}
	render := func(vs []workflows.EnvVar) string {
		var b strings.Builder
		for _, v := range vs {
			b.WriteString(v.Name + "=" + v.Value + " ")
		}
		return strings.TrimSpace(b.String())
	}
	creds := []string{"ghp_leaked"}
	if got, want := render(hostSteps{}.sbxHostEnv(env, creds)), "HOME=/root PATH=/usr/bin XDG_CONFIG_HOME=/root/.config DOCKER_HOST=tcp://d:2376"; got != want {
		t.Errorf("same user: %s, want %s", got, want)
	}
	iso := hostSteps{user: &stepUser{uid: 1001, gid: 1001, name: "sbx-runner", home: "/home/sbx-runner"}}
	if got, want := render(iso.sbxHostEnv(env, creds)), "HOME=/home/sbx-runner PATH=/usr/bin DOCKER_HOST=tcp://d:2376"; got != want {
		t.Errorf("isolated: %s, want %s", got, want)
	}
	nobody := hostSteps{user: &stepUser{uid: 65534, gid: 65534, name: "hookrun-step"}}
	if got, want := render(nobody.sbxHostEnv(env, creds)), "PATH=/usr/bin DOCKER_HOST=tcp://d:2376"; got != want {
		t.Errorf("isolated without a home: %s, want %s", got, want)
	}
}
