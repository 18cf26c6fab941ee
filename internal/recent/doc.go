// Package recent is a bounded map of what one process last wrote, for the
// next step of the same work to start from instead of reading it back:
// the stores' run records of unfinished runs, the queue's delivery keys
// of runs not yet consumed. What it holds is a hint, never the truth: its
// users check it (a compare-and-set at the remembered revision) or rely on
// it only where nothing but this process could have changed the value.
package recent
