package dialect

// Dialect lists the differences, each as what the forge does.
type Dialect struct {
	// TokenScheme is the Authorization scheme a token is sent with
	// ("token"); the client's own scheme when "".
	TokenScheme string
	// TokenOnly: the forge has no apps; a token is required.
	TokenOnly bool
	// LabelColorHash: a label's color is written with a leading '#'.
	LabelColorHash bool
	// LabelsByID: labels are added to and removed from an issue by their
	// ids on the repository, not by their names.
	LabelsByID bool
	// AssigneesByEdit: assignees are set by editing the issue with the
	// whole new list, not added and removed.
	AssigneesByEdit bool
	// NoStateReason: closing or reopening records no reason.
	NoStateReason bool
	// NoCompareFiles: the compare API lists files per commit, so a push's
	// files beyond its payload cannot be listed; a pull request's can.
	NoCompareFiles bool
	// PullReviews: a pull request's diff is read whole (pulls/{n}.diff),
	// earlier reviews are listed review by review with their comments,
	// a review's comments are placed by new_position with a suggestion as
	// a fenced diff, and a gone finding's comment is edited through the
	// issue comments API.
	PullReviews bool
}
