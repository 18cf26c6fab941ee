// Package git prepares a run's workspace: a bare mirror per repository
// under the data dir, fetched on demand, and a checkout of the head SHA (or
// the pull/merge request head ref) into <data>/workspaces/<shard>/<run>;
// the run's HOME, TMPDIR and results folder lie beside each other in
// <data>/scratch/<shard>, as <run>+home, <run>+tmp and <run>+results, with
// the file the engine writes the run's event to, <run>+event.json (a file
// alone: one directory fewer per run). <shard> is one of 16 directories, by a
// hash of the run id (RunShard), which on ext4 without a journal lie in
// as many block groups (spreadChildren).
//
// Clone URLs come from webhook payloads. In the servers, Config.Origins
// confines them to their forge's host, so that the forge's credentials
// (Config.Auth) are never sent anywhere else.
package git
