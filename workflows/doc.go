// Package workflows is the domain of hookrun: the normalized forge Event, the
// Workflow format (DESIGN.md §3) with its two-layer YAML parser and
// validation, trigger matching, authorization, interpolation, the JSON
// Schema, and the WorkflowSet (a directory of workflow files, reloaded when
// they change: what ingress matches and the runner looks runs up in), and
// what a run's end is made of (StepState, Status, the Delivery of a
// sandboxed agent's commits). It sits at the bottom of the flow and imports
// nothing else from the project: ingress normalizes into its Event, the
// queue carries it, the runner executes its Workflow.
package workflows
