// Package localimage builds the two images of the compose topology
// (docker-compose.yml) on a machine that cannot reach a registry: nothing is
// pulled, each image is one layer assembled here and imported through the
// Docker API, as providers/docker/dockertest builds the test image.
//
//   - the hookrun image: the static hookrun and hookrun-step-init binaries,
//     Debian's static busybox (the shell of host steps), and the machine's own
//     git with its git-core helpers and the shared libraries ldd names for
//     them (the runner's checkouts shell out to git);
//   - the nats image: nats-server built from its Go module at the version
//     hookrun's go.mod requires (the one hookrun embeds), on an empty root.
//
// It sits beside the flow, not in it: `make compose-images` and the compose
// test (cmd/hookrun/compose_up_test.go, `make compose-test`) use it. The
// production image is the Dockerfile's.
package localimage
