// Package git prepares a run's workspace: a bare mirror per repository
// under the data dir, fetched on demand, and a checkout of the head SHA (or
// the pull/merge request head ref) into <data>/workspaces/<run>.
package git
