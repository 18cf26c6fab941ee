package sbx

// workspaceGit is the argv prefix of every git command hookrun runs, as
// its own user, in a run's workspace (reading its branch, fetching the
// sandbox's commits, removing the sandbox remote). The workspace is not
// hookrun's: the pull request's code, a step container mounting it, or a
// host step of the step user may have written its .git/config and hooks.
// Command-line configuration outranks the repository's, so these settings
// take away what the repository could make git run or send: hooks, the
// file-system monitor, credential helpers, transports that run commands
// (ext::, and git:// with its proxy command), automatic maintenance. The
// sandbox remote's upload-pack command, which configuration cannot
// override (it is a list), is set with uploadPack on each command that
// talks to the remote. safe.directory, honoured from the
// command line only, lets git work in a workspace handed to the step user.
// Environment variables in gitEnv cover what outranks configuration there.
func workspaceGit(workspace, remote string) []string {
	return []string{
		"-c", "safe.directory=" + workspace,
		"-c", "core.hooksPath=/dev/null",
		"-c", "core.fsmonitor=false",
		"-c", "credential.helper=",
		"-c", "core.askPass=",
		"-c", "core.sshCommand=ssh",
		"-c", "core.gitProxy=",
		"-c", "core.alternateRefsCommand=",
		"-c", "protocol.ext.allow=never",
		"-c", "protocol.git.allow=never",
		"-c", "gc.auto=0",
		"-c", "maintenance.auto=false",
		"-C", workspace,
	}
}

// gitEnv is added to the environment of workspace git commands: no
// prompts, no askpass program, no ssh command but ssh.
var gitEnv = []string{"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=false", "SSH_ASKPASS=false", "GIT_SSH_COMMAND=ssh"}

// uploadPack pins the program fetch and ls-remote start for the remote,
// whatever remote.<name>.uploadpack the workspace says.
const uploadPack = "--upload-pack=git-upload-pack"
