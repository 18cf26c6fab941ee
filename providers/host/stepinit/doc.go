// Package stepinit is the init of an isolated host step (providers/host
// Isolation): PID 1 of the step's own PID, mount, IPC and UTS namespaces,
// started by the host executor with the step's Spec on fd 3 and a status
// pipe on fd 4. It covers the paths the step must not reach, brings the
// run's own directories back, mounts a /proc of the namespace and a fresh
// /dev/shm, sets the step's hostname, starts the step as the
// step user with no_new_privs, forwards signals and reaps every process of
// the namespace.
//
// Where the kernel can mount a /proc for another PID namespace (Linux
// 6.18), the host executor starts isolated steps without this init: it
// sets up the same namespaces with Confine and MountProcOf itself, with a
// process of a few instructions as the PID namespace's holder
// (providers/host, direct.go).
//
// It imports nothing but the standard library and x/sys, so that the
// hookrun-step-init program built from it starts in about a millisecond;
// hookrun without that program beside it runs the same Main in a
// re-execution of itself.
package stepinit
