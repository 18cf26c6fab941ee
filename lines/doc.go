// Package lines is hookrun's one line-buffering writer: it holds back a
// partial line and passes on whole lines. The runner's redacting log writer,
// the local run's printer and the queue's log store all use it, so a line is
// cut the same way everywhere. It imports nothing of the project, so that
// queue (which may import only workflows) and runner can both use it.
package lines
