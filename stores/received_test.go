package stores

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// TestAcceptDeliveryStoresTheDelivery: a delivery without runs is stored
// (event name and body exactly as received); one with runs is stored once
// beside them, and its redelivery keeps the first copy; a body too large
// for a KV value comes back whole from hookrun_bodies, stored once for the
// delivery and its runs.
func TestAcceptDeliveryStoresTheDelivery(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 60*time.Second)

	none := &Received{Forge: workflows.Forge("github"), ID: "no-runs-1", Event: "issues", Raw: []byte(`{"action":"opened"}`)}
	if res, err := q.AcceptDelivery(ctx, none, nil); err != nil || len(res) != 0 {
		t.Fatalf("accepting a delivery without runs: %v %v", res, err)
	}
	got, err := q.Received().Get(ctx, workflows.Forge("github"), "no-runs-1")
	if err != nil || got.Event != "issues" || string(got.Raw) != `{"action":"opened"}` || got.ReceivedAt.IsZero() {
		t.Fatalf("stored delivery %+v (raw %q), %v", got, got.Raw, err)
	}
	if _, err := q.Received().Get(ctx, workflows.Forge("gitlab"), "no-runs-1"); !errors.Is(err, ErrNotReceived) {
		t.Fatalf("the same id on another forge: %v, want ErrNotReceived", err)
	}

	reqs := deliveryRequests(2)
	d := &Received{Forge: workflows.Forge("github"), ID: reqs[0].Event.DeliveryID, Event: "pull_request", Raw: reqs[0].Event.Raw}
	res, err := q.AcceptDelivery(ctx, d, reqs)
	if err != nil || len(res) != 2 {
		t.Fatalf("accepting a delivery of 2 runs: %v %v", res, err)
	}
	again := redeliver(reqs)
	d2 := &Received{Forge: workflows.Forge("github"), ID: d.ID, Event: "pull_request", Raw: []byte(`{"changed":true}`)}
	if res2, err := q.AcceptDelivery(ctx, d2, again); err != nil || !res2[0].Duplicate {
		t.Fatalf("redelivery: %v %v", res2, err)
	}
	if got, err := q.Received().Get(ctx, workflows.Forge("github"), d.ID); err != nil || string(got.Raw) != string(reqs[0].Event.Raw) {
		t.Fatalf("after the redelivery: %q %v, want the first copy", got.Raw, err)
	}

	big := bigBody(inlineMax + 4096)
	breqs := deliveryRequests(1)
	breqs[0].Event.Raw = big
	bd := &Received{Forge: workflows.Forge("github"), ID: breqs[0].Event.DeliveryID, Event: "pull_request", Raw: big}
	if _, err := q.AcceptDelivery(ctx, bd, breqs); err != nil {
		t.Fatal(err)
	}
	got, err = q.Received().Get(ctx, workflows.Forge("github"), bd.ID)
	if err != nil || !bytes.Equal(got.Raw, big) || got.Body == "" {
		t.Fatalf("large stored delivery: body %q, %d bytes, %v", got.Body, len(got.Raw), err)
	}
	var objects int
	lister, err := bodiesOf(t, q).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range lister {
		if !o.Deleted {
			objects++
		}
	}
	if objects != 1 {
		t.Errorf("%d objects in %s, want the one body shared by the delivery and its run", objects, queue.BucketBodies)
	}
}

// Concurrent replays of one delivery get distinct numbers, 1..n.
func TestNextReplayNumbers(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	const n = 8
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			k, err := q.Received().NextReplay(ctx, workflows.Forge("github"), "d-1")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[k] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	for i := 1; i <= n; i++ {
		if !seen[i] {
			t.Errorf("replay numbers %v lack %d", seen, i)
		}
	}
	if got := ReplayDelivery("d-1", 3); got != "d-1:replay:3" {
		t.Errorf("ReplayDelivery: %q", got)
	}
}

// LinkRerun adds the re-run once; the new record of a re-run request
// carries rerun_of, the comment and the origin.
func TestRerunLinksBothWays(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	orig := testRequest("linked")
	res, err := q.Publish(ctx, orig)
	if err != nil {
		t.Fatal(err)
	}
	re := testRequest("linked")
	re.RerunOf, re.CommentID, re.Origin = res.RunID, 77, orig.Event.DeliveryID
	re.Event.DeliveryID = RerunDelivery(orig.Event.DeliveryID, "x", "")
	rres, err := q.Publish(ctx, re)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := q.Runs().LinkRerun(ctx, res.RunID, rres.RunID); err != nil {
			t.Fatal(err)
		}
	}
	o, _, err := q.Runs().Get(ctx, res.RunID)
	if err != nil || len(o.Reruns) != 1 || o.Reruns[0] != rres.RunID {
		t.Fatalf("original's reruns %v (%v), want [%s]", o.Reruns, err, rres.RunID)
	}
	n, _, err := q.Runs().Get(ctx, rres.RunID)
	if err != nil || n.RerunOf != res.RunID || n.CommentID != 77 || OriginOf(n) != orig.Event.DeliveryID {
		t.Fatalf("re-run record %+v, %v", n, err)
	}
	data, _ := json.Marshal(n)
	if !strings.Contains(string(data), `"rerun_of":"`+res.RunID+`"`) {
		t.Errorf("record JSON lacks rerun_of: %s", data)
	}
}

// BenchmarkDeliveryStored measures a delivery of one run with a 28 KiB
// body (a GitHub pull_request payload's size) published alone
// (PublishDelivery, what ingress did before deliveries were stored) and
// with the delivery stored beside it (AcceptDelivery), and a delivery
// without runs stored alone (before: no write at all): what storing
// deliveries for replay adds to ingest.
func BenchmarkDeliveryStored(b *testing.B) {
	body := bigBody(28 << 10)
	for _, mode := range []string{"publish", "accept", "accept-no-runs"} {
		b.Run(mode, func(b *testing.B) {
			q := openTest(b, queue.Config{})
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				req := testRequest("bench")
				req.Event.Raw = body
				d := &Received{Forge: workflows.Forge("github"), ID: req.Event.DeliveryID, Event: "pull_request", Raw: body}
				var err error
				switch mode {
				case "publish":
					_, err = q.PublishDelivery(ctx, []*queue.RunRequest{req})
				case "accept":
					_, err = q.AcceptDelivery(ctx, d, []*queue.RunRequest{req})
				default:
					_, err = q.AcceptDelivery(ctx, d, nil)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
