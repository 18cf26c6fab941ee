package gitlab

import (
	gl "gitlab.com/gitlab-org/api/client-go"
)

// inert is the body of every note, discussion and description hookrun
// sends to GitLab: GitLab runs a line such as "/approve" or "/label ~x" in
// them as a quick action with the bot's permissions, and the text of a run
// (its report body, an actions.json comment, a step's output) is the
// workspace's, so no line of it may act (inertMarkdown: such a line's '/'
// is backslash-escaped, fenced code is shown as it is).
func inert(body string) *string { return gl.Ptr(inertMarkdown(body)) }
