package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hookrun/hookrun/providers/git"
)

// LocalWorkspaces are the checkouts of `hookrun run` (a workflow with
// `checkout: true`): mirrors and workspaces under dir, default "hookrun"
// in the user's cache directory (os.UserCacheDir), else in the temporary
// directory. The clone URL is the payload's, as it stands: the user chose
// the payload. git fetches it with the user's own git configuration and
// credential helpers; hookrun adds no token of its own.
func LocalWorkspaces(dir string) (*git.Workspaces, error) {
	if dir == "" {
		dir = defaultLocalCache()
	}
	w, err := git.New(git.Config{DataDir: dir})
	if err != nil {
		return nil, fmt.Errorf("preparing local checkouts in %s: %w", dir, err)
	}
	return w, nil
}

// defaultLocalCache is where `hookrun run` keeps its mirrors by default.
func defaultLocalCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "hookrun")
	}
	return filepath.Join(os.TempDir(), "hookrun-"+strconv.Itoa(os.Getuid()))
}
