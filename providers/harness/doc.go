// Package harness turns a harness.run step (an agent CLI such as claude or
// codex, or a custom `harnesses:` entry) into argv and stdin for an
// executor, and runs its fallbacks in order after a failure.
package harness
