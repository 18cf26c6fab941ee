package ingress

import "github.com/hookrun/hookrun/providers/forge"

// Links of a test forge are the common layout: ingress links nothing.
func (testForge) Links() forge.Links { return forge.Links{} }
