package docker

import (
	"context"
	"fmt"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/hookrun/hookrun/workflows"
)

// runNets are the per-run networks this process holds: a run's network is
// created when its first container is about to be, and removed when its
// last container is gone (the root container holds it for the whole run;
// per-step containers for their step). Between two steps of a run without
// a root container no container of the run exists, so none can lose a
// connection; the next step gets a fresh network.
type runNets struct {
	mu   sync.Mutex
	nets map[string]*runNet // by run id
}

type runNet struct {
	name  string
	users int
}

// usesRunNetwork: a workflow that names no network, or Docker's default
// bridge (documented as the default), gets its run's own network.
func usesRunNetwork(c *workflows.Container) bool {
	return c.Network == "" || c.Network == "bridge"
}

// acquireNetwork returns the network mode a container of runID with
// config c joins, and the release to call once that container is removed.
// A workflow naming a network gets it (its author's decision, as before);
// otherwise the run's own bridge network, labelled hookrun.run=<run id>,
// created on first use. Networks are created one at a time: creation is
// quick, and a lock per run would buy little.
func (d *Docker) acquireNetwork(ctx context.Context, runID string, c *workflows.Container) (mode string, release func(), err error) {
	if !usesRunNetwork(c) {
		return c.Network, func() {}, nil
	}
	d.nets.mu.Lock()
	defer d.nets.mu.Unlock()
	if d.nets.nets == nil {
		d.nets.nets = map[string]*runNet{}
	}
	n := d.nets.nets[runID]
	if n == nil {
		// A random suffix: a crashed attempt of the same run may have left
		// its network, which the orphan sweep removes.
		name := containerName(runID) + "-" + randomID()
		actx, cancel := d.apiCtx(ctx)
		_, err := d.api(actx).NetworkCreate(actx, name, network.CreateOptions{
			Driver: "bridge",
			Labels: map[string]string{LabelRun: runID, LabelRole: "network"},
		})
		cancel()
		if err != nil {
			return "", nil, fmt.Errorf("creating network of run %s: %w", runID, err)
		}
		n = &runNet{name: name}
		d.nets.nets[runID] = n
	}
	n.users++
	var once sync.Once
	return n.name, func() { once.Do(func() { d.releaseNetwork(ctx, runID, n) }) }, nil
}

// releaseNetwork drops one user of n and removes the network after its
// last. A removal that fails (a container still attached) leaves the
// network to the orphan sweep.
func (d *Docker) releaseNetwork(ctx context.Context, runID string, n *runNet) {
	d.nets.mu.Lock()
	defer d.nets.mu.Unlock()
	n.users--
	if n.users > 0 {
		return
	}
	delete(d.nets.nets, runID)
	_ = d.removeNetwork(ctx, n.name)
}

func (d *Docker) removeNetwork(ctx context.Context, id string) error {
	actx, cancel := d.apiCtx(ctx)
	defer cancel()
	if err := d.api(actx).NetworkRemove(actx, id); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("removing network %s: %w", id, err)
	}
	return nil
}

// removeOrphanNetworks removes every network labelled hookrun.run whose
// run is not live and that this process does not hold.
func (d *Docker) removeOrphanNetworks(ctx context.Context, live func(runID string) bool) (removed int, err error) {
	list, err := d.api(ctx).NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelRun))})
	if err != nil {
		return 0, fmt.Errorf("listing hookrun networks: %w", err)
	}
	d.nets.mu.Lock()
	held := map[string]bool{}
	for _, n := range d.nets.nets {
		held[n.name] = true
	}
	d.nets.mu.Unlock()
	return removeEach("networks", list,
		func(n network.Summary) bool { return held[n.Name] || (live != nil && live(n.Labels[LabelRun])) },
		func(n network.Summary) error { return d.removeNetwork(ctx, n.ID) })
}
